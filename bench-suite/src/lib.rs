//! # bench-suite
//!
//! The `gpuworthy` command-line tool (in `src/bin`) and the criterion benches (in `benches/`). The reporting code
//! they share (tables of phase times and throughput) lives here.

#![deny(missing_docs)]

pub mod export;
pub mod report;
pub mod sweep;
