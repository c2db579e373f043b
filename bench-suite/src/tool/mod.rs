//! The `gpuworthy` command-line tool: the dispatch from a parsed command line to the command's module, and the exit
//! code from the error it returns.
//!
//! Exit codes: 0 success (also when the reader of its output goes away, as `| head` does), 1 a failure while
//! running (a device error, or a sweep in which no requested backend could run), 2 a usage error (a bad argument,
//! size or environment variable, refused before any work starts; also a sweep none of whose sizes could be
//! measured), 3 a result that failed its check against the reference (shown as FAILED in the table; whatever was
//! measured is still written), 4 a sweep with sizes at which nothing could be measured beside sizes that were (the
//! notes under its table say why).
//!
//! It lives in the library, not in `src/bin`, so that the Python package's `gpuworthy` command runs the same tool in
//! its extension module: a Python user gets the whole command line from a wheel, without cargo. The binary's `main`
//! is [`main`] with the process's arguments, as ripgrep's is a dispatch alone.

use std::ffi::OsString;
use std::process::ExitCode;

use crate::cli::{Cli, Command};
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

use commands::{calibrate, collectives, devices, explain, explain_on, roofline, run, sweep, transfers};
use exit::{Exit, is_broken_pipe};

/// Runs the tool with these arguments (the first is the program's name, as in `std::env::args_os`) and gives its
/// exit code: [`exit_status`] as a process's `main` returns it.
pub fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    ExitCode::from(exit_status(args))
}

/// Runs the tool with these arguments (the first is the program's name): parses the command line (printing help or
/// a usage error as clap does), checks the environment, runs the command and returns its exit status (listed in
/// this module's header) as a number, for a caller that is not a process's `main` (the Python package's command).
pub fn exit_status(args: impl IntoIterator<Item = OsString>) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // `--help` and `--version` are "errors" to clap that print to standard output and exit 0.
            let _ = e.print();
            return u8::try_from(e.exit_code()).unwrap_or(2);
        }
    };
    if let Err(e) = shared::check_environment() {
        eprintln!("gpuworthy: {e}");
        return 2;
    }
    match dispatch(cli) {
        Ok(()) => 0,
        // The reader stopped reading: nothing is wrong, and nobody is left to tell.
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!("gpuworthy: {e:#}");
            e.downcast_ref::<Exit>().map_or(1, Exit::code)
        }
    }
}

/// Runs the command the command line asked for.
fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Calibrate { evaluate, sets, json, expressions, expression } => {
            calibrate::calibrate_command(evaluate, sets, json, expressions, &expression)
        }
        Command::Explain { workload, expression, size, resident, pinned, on, what_if, gpus, precision, tolerance } => {
            let placement = explain::placement_of(resident, pinned);
            let on = on.map(|machine| explain_on::OnMachine { machine, gpus: gpus.map(usize::from) });
            let allowance = explain::Allowance { precisions: precision, tolerance };
            explain::explain_command(workload, &expression, &size, placement, on, what_if.what_if(), &allowance)
        }
        Command::Devices => devices::devices(),
        Command::Sweep(args) => sweep::sweep(args),
        Command::Transfers { size, backend } => transfers::transfers(&size, backend),
        Command::Collectives { backend, size, repeats } => collectives::collectives(&backend, &size, repeats),
        Command::Roofline { files, plot } => roofline::roofline(&files, plot.as_deref()),
        Command::Run(args) => run::run_workload(args),
    }
}
