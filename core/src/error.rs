//! The one error type every gpuworthy library crate returns.
//!
//! Backends share this enum instead of each defining their own, because callers (the harness, the CLI, the tests)
//! handle errors by concern, not by origin: "this backend cannot run here" (skip it, say why), "this input is wrong"
//! (tell the user), "this size is past a device limit" (choose a smaller one or another backend). Driver-specific
//! detail travels in the message strings.

use crate::kind::BackendKind;

/// A `Result` whose error is [`enum@Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong when preparing, running or checking a workload.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input cannot be computed as given: mismatched lengths, a shape that does not match its data, a parameter
    /// out of range. The message names the problem.
    #[error("invalid input: {0}")]
    InvalidInput(String),

    /// The backend is compiled in but cannot run on this machine: no driver, no adapter, no device.
    #[error("{backend} backend unavailable: {reason}")]
    Unavailable {
        /// Which backend.
        backend: BackendKind,
        /// Why, in words a user can act on (what is missing, and how to get it).
        reason: String,
    },

    /// The backend was left out when this program was compiled.
    #[error("{backend} backend not compiled in: rebuild with the cargo feature `{feature}`")]
    NotCompiled {
        /// Which backend.
        backend: BackendKind,
        /// The cargo feature that enables it.
        feature: &'static str,
    },

    /// The input is valid but larger than the device can take, and the backend does not split it.
    #[error("{what} is too large: the limit is {limit}")]
    TooLarge {
        /// What is too large, with its size.
        what: String,
        /// The limit, with its unit.
        limit: String,
    },

    /// The backend has no variant of this name for this workload.
    #[error("{backend} has no {workload} variant `{variant}`; it offers: {}", available.join(", "))]
    UnknownVariant {
        /// Which backend.
        backend: BackendKind,
        /// The workload asked for.
        workload: &'static str,
        /// The variant asked for.
        variant: String,
        /// The variants this backend offers for the workload here.
        available: Vec<&'static str>,
    },

    /// The backend has no implementation of this workload: a workload defined outside gpuworthy implements the
    /// backends it can, and the others answer this (as candle's custom ops answer "no cuda implementation").
    #[error("{backend} has no implementation of the workload `{workload}`")]
    Unsupported {
        /// Which backend.
        backend: BackendKind,
        /// The workload asked for.
        workload: String,
    },

    /// A kernel failed to compile (NVRTC, or a shader module).
    #[error("{backend} failed to compile kernel `{kernel}` (options: {options}):\n{log}")]
    Compile {
        /// Which backend.
        backend: BackendKind,
        /// The kernel or shader entry point.
        kernel: String,
        /// The compiler options used.
        options: String,
        /// The compiler's log.
        log: String,
    },

    /// The device or driver reported an error while running: out of memory, a failed launch, a validation error.
    #[error("{backend} device error: {message}")]
    Device {
        /// Which backend.
        backend: BackendKind,
        /// The driver's message, with what was being done.
        message: String,
    },
}

impl Error {
    /// Shorthand for [`Error::InvalidInput`].
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidInput(message.into())
    }

    /// Shorthand for [`Error::Unsupported`].
    pub fn unsupported(backend: BackendKind, workload: impl Into<String>) -> Self {
        Error::Unsupported { backend, workload: workload.into() }
    }

    /// Whether this error means "this backend cannot run here", which callers skip rather than fail on.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Unavailable { .. } | Error::NotCompiled { .. })
    }
}
