//! # bench-suite
//!
//! The `gpuworthy` command-line tool (in `src/bin`; `cargo install --path bench-suite` installs it) and the criterion
//! benches (in `benches/`). The tool's rooms: [`sweep`] measures, [`crossover`] reads the rows into crossovers and a
//! verdict, [`report`] renders text tables, [`export`] writes JSON, CSV and SVG. The devices and workloads come from the
//! facade (`gpuworthy::Device`, `for_each_workload!`); nothing here lists them again.

#![deny(missing_docs)]

pub mod crossover;
pub mod export;
pub mod report;
pub mod sweep;
