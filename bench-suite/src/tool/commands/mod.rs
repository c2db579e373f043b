//! The tool's commands, one module each, as ripgrep keeps its commands: `main` parses the command line and calls
//! the one asked for, and each module holds all of its command (its checks, its steps, its output) and nothing of
//! another's, so that a command is read, changed or added in one file.
//!
//! A command module's public function takes the parsed arguments ([`crate::cli`]) and returns
//! `anyhow::Result`; an error that means a particular exit code is an [`Exit`](crate::tool::exit::Exit). What several
//! commands say the same way lives in [`crate::tool::shared`], progress in [`crate::tool::progress`].

pub(crate) mod calibrate;
pub(crate) mod collectives;
pub(crate) mod devices;
pub(crate) mod explain;
pub(crate) mod explain_on;
pub(crate) mod roofline;
pub(crate) mod run;
pub(crate) mod run_expression;
pub(crate) mod run_group;
pub(crate) mod run_rank;
pub(crate) mod sweep;
pub(crate) mod sweep_group;
pub(crate) mod transfers;
