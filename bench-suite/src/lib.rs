//! # bench-suite
//!
//! The `gpuworthy` command-line tool ([`tool`], which `src/bin` runs and the Python package's `gpuworthy` command too;
//! `cargo install --path bench-suite` installs it) and the criterion
//! benches (in `benches/`). The sweep itself (its rows, crossovers and verdicts) is
//! the facade's (`gpuworthy::model::sweep`, `gpuworthy::model::crossover`): here [`cli`] defines the command line, [`report`] renders text tables and [`export`] writes
//! JSON, CSV and SVG, [`criterion_summary`] the table that ends the criterion benches, and [`roofline`] places a sweep's workloads under this machine's measured roofs. The devices and workloads come from the facade too; nothing here lists them again.

#![deny(missing_docs)]

pub mod cli;
pub mod criterion_summary;
pub mod export;
pub mod report;
pub mod roofline;
pub mod tool;
