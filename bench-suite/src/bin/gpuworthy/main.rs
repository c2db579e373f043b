//! `gpuworthy`: is this work worth sending to the GPU? Lists the backends this machine has, and runs workloads on
//! them with every phase measured.
//!
//! Exit codes: 0 success (also when the reader of its output goes away, as `| head` does), 1 a failure while
//! running (a device error, or a sweep in which no requested backend could run), 2 a usage error (a bad argument,
//! size or environment variable, refused before any work starts; also a sweep none of whose sizes could be
//! measured), 3 a result that failed its check against the reference (shown as FAILED in the table; whatever was
//! measured is still written), 4 a sweep with sizes at which nothing could be measured beside sizes that were (the
//! notes under its table say why).
//!
//! This file is the dispatch alone, as ripgrep's `main` is: the command line is parsed ([`bench_suite::cli`]), the
//! environment checked, and the command asked for runs from its own module ([`commands`]); the exit code comes from
//! the error it returns ([`exit`]).

use std::process::ExitCode;

use bench_suite::cli::{Cli, Command};
use clap::Parser;

/// Writes a line to standard output, returning an error (rather than panicking as `println!` does) when the reader
/// has gone away.
macro_rules! out {
    ($($arg:tt)*) => {{
        use anyhow::Context as _;
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*).context("writing to standard output")?
    }};
}

mod commands;
mod exit;
mod progress;
mod shared;

use commands::{calibrate, devices, explain, explain_on, roofline, run, sweep, transfers};
use exit::{Exit, is_broken_pipe};

/// Parses the command line, checks the environment, runs the command and turns its outcome into the exit code.
fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = shared::check_environment() {
        eprintln!("gpuworthy: {e}");
        return ExitCode::from(2);
    }
    match dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader stopped reading: nothing is wrong, and nobody is left to tell.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gpuworthy: {e:#}");
            e.downcast_ref::<Exit>().map_or(ExitCode::FAILURE, |exit| ExitCode::from(exit.code()))
        }
    }
}

/// Runs the command the command line asked for.
fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Calibrate { evaluate, json, expressions, expression } => {
            calibrate::calibrate_command(evaluate, json, expressions, &expression)
        }
        Command::Explain { workload, expression, size, resident, pinned, on, what_if, gpus } => {
            let placement = explain::placement_of(resident, pinned);
            let on = on.map(|machine| explain_on::OnMachine { machine, gpus: gpus.map_or(1, usize::from) });
            explain::explain_command(workload, &expression, &size, placement, on, what_if.what_if())
        }
        Command::Devices => devices::devices(),
        Command::Sweep(args) => sweep::sweep(args),
        Command::Transfers { size, backend } => transfers::transfers(&size, backend),
        Command::Roofline { files, plot } => roofline::roofline(&files, plot.as_deref()),
        Command::Run(args) => run::run_workload(args),
    }
}
