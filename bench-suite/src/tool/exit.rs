//! How the tool fails: [`Exit`], an error that carries its own exit code (2 a usage error, 3 a failed check, 4 an
//! incomplete sweep; see the binary's header), and [`usage`], which turns the library's input errors into usage
//! errors.
//!
//! Every command returns `anyhow::Result`, so that a device error travels up with its context and exits with 1; an
//! error that means something else to a script is an [`Exit`] inside that `anyhow::Error`, found again by downcasting
//! in `main`. Keeping the codes in one type here is what lets each command decide its exit code without knowing how
//! `main` reports it.

use gpuworthy::core::Error;

/// An error that ends the tool with its own exit code (see the module header); any other error exits with 1.
#[derive(Debug)]
pub(crate) struct Exit {
    /// The process's exit code.
    code: u8,
    /// What went wrong.
    message: String,
}

impl Exit {
    /// An error in what the user asked for: exit code 2.
    pub(crate) fn usage(message: impl Into<String>) -> anyhow::Error {
        Exit { code: 2, message: message.into() }.into()
    }

    /// A result that failed its check against the reference: exit code 3.
    pub(crate) fn check_failed(message: impl Into<String>) -> anyhow::Error {
        Exit { code: 3, message: message.into() }.into()
    }

    /// A sweep with sizes at which nothing could be measured, while others were: exit code 4.
    pub(crate) fn incomplete(message: impl Into<String>) -> anyhow::Error {
        Exit { code: 4, message: message.into() }.into()
    }
}

impl Exit {
    /// The process's exit code.
    pub(crate) fn code(&self) -> u8 {
        self.code
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// Turns the library's input errors into usage errors.
pub(crate) fn usage(e: Error) -> anyhow::Error {
    match e {
        // The message alone: an expression's error already reads `error: ...` with its caret below.
        Error::InvalidInput(message) => Exit::usage(message),
        Error::UnknownVariant { .. } | Error::TooLarge { .. } => Exit::usage(e.to_string()),
        other => other.into(),
    }
}

/// Whether `e` comes from writing to a pipe whose reader has gone away (`gpuworthy sweep | head -1`).
pub(crate) fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
