//! `gpuworthy`: is this work worth sending to the GPU? Lists the backends this machine has, and runs workloads on
//! them with every phase measured.
//!
//! The tool itself is the library's ([`bench_suite::tool`]), so that the Python package runs the same one; this file
//! hands it the process's arguments. Its exit codes are listed there.

use std::process::ExitCode;

/// Runs the tool with the process's arguments.
fn main() -> ExitCode {
    bench_suite::tool::main(std::env::args_os())
}
