//! How long a GPU backend waits for its device: [`WaitLimit`].
//!
//! A kernel that never ends (a raw kernel's loop whose exit is never met, a driver that stops answering) would leave
//! a program that waits for it blocked for ever: CUDA's `cuStreamSynchronize` and wgpu's `poll` without a timeout
//! wait until the work is done, and Linux has no watchdog for a compute kernel on a GPU without a display. So every
//! wait of a GPU backend is bounded: past the limit (`GPUWORTHY_WAIT_LIMIT`, ten minutes unless set) the wait ends
//! with an [`Error::Device`] that names the limit and how to change it.
//!
//! The work is not stopped: neither CUDA nor Vulkan can cancel a running kernel. The backend is then *expired*: every
//! later call fails at once with the same explanation, rather than queueing behind the kernel and waiting again,
//! and the backend leaves its device to the driver when dropped instead of waiting for the queue to drain (which
//! both CUDA's and wgpu's teardowns would do). The device is freed when the process ends.
//!
//! The limit is a bound on one wait, not a kernel's time budget: a launch that legitimately takes minutes (a large
//! matmul on a CPU adapter) needs a limit above its time. One kind of wait stays unbounded: CUDA's pipelined runs from
//! the host wait for their lanes' copies into the caller's own memory, and returning while those copies are queued
//! would let them write into memory the caller may already have freed.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::env;
use crate::error::{Error, Result};
use crate::kind::BackendKind;

/// The variable that sets the limit, in seconds.
pub const WAIT_LIMIT_VAR: &str = "GPUWORTHY_WAIT_LIMIT";

/// The limit when the variable is unset: ten minutes, far above any launch a GPU needs here; a slow adapter (a large
/// matmul on a CPU's Vulkan driver) may need it raised.
pub const DEFAULT_WAIT_LIMIT: Duration = Duration::from_secs(600);

/// The largest limit the variable accepts: one day.
const MOST_SECONDS: f64 = 86_400.0;

/// The bound on every wait of one backend, and whether a wait has run past it.
///
/// ```
/// use std::time::Duration;
/// use gpuworthy_core::{BackendKind, WaitLimit};
///
/// let limit = WaitLimit::new(Duration::from_millis(20));
/// assert!(limit.poll_until(BackendKind::Cuda, "waiting for a finished kernel", || Ok(true)).is_ok());
/// let err = limit.poll_until(BackendKind::Cuda, "waiting for the kernel", || Ok(false)).unwrap_err();
/// assert!(err.to_string().contains("GPUWORTHY_WAIT_LIMIT"));
/// // Expired: the next call fails at once, saying why.
/// assert!(limit.check(BackendKind::Cuda).unwrap_err().to_string().contains("earlier"));
/// ```
#[derive(Debug)]
pub struct WaitLimit {
    limit: Duration,
    /// What ran past the limit, once something has.
    expired: OnceLock<String>,
}

impl WaitLimit {
    /// A bound of `limit` on every wait.
    pub fn new(limit: Duration) -> Self {
        WaitLimit { limit, expired: OnceLock::new() }
    }

    /// The bound `GPUWORTHY_WAIT_LIMIT` asks for, [`DEFAULT_WAIT_LIMIT`] where it is unset.
    pub fn from_env() -> Result<Self> {
        Ok(Self::new(limit_from_env()?))
    }

    /// The bound.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// Whether a wait has run past the limit: the device is then still running that work.
    pub fn is_expired(&self) -> bool {
        self.expired.get().is_some()
    }

    /// `Ok` unless a wait has run past the limit; then the error says what did, and that the backend cannot be used
    /// again in this process.
    pub fn check(&self, backend: BackendKind) -> Result<()> {
        match self.expired.get() {
            None => Ok(()),
            Some(what) => Err(Error::Device {
                backend,
                message: format!(
                    "this device ran past its wait limit earlier ({what}) and may still be running that work; it \
                     cannot be used again in this process: open another device, or run again in a new process"
                ),
            }),
        }
    }

    /// Marks the backend expired by `what` and returns the error for it: the limit, the variable that sets it, and
    /// what to do.
    pub fn expire(&self, backend: BackendKind, what: &str) -> Error {
        let seconds = self.limit.as_secs_f64();
        let _ = self.expired.set(format!("{what}, {seconds} s"));
        Error::Device {
            backend,
            message: format!(
                "{what}: the device did not finish within the wait limit of {seconds} s ({WAIT_LIMIT_VAR}). A kernel \
                 that never ends (a loop whose exit is never met) does this; the device keeps running it until the \
                 process ends. Work that needs longer than the limit runs with {WAIT_LIMIT_VAR} set higher."
            ),
        }
    }

    /// Calls `done` until it answers `true`, an error, or the limit passes (then the backend is expired, and the
    /// error is [`WaitLimit::expire`]'s). It spins for the first millisecond, as the drivers' own waits do, so that a
    /// short wait ends as soon as the work does; then it yields the core between calls, and past ten milliseconds it
    /// sleeps 100 µs between them, a small share of any wait that long.
    pub fn poll_until(&self, backend: BackendKind, what: &str, mut done: impl FnMut() -> Result<bool>) -> Result<()> {
        self.check(backend)?;
        let start = Instant::now();
        loop {
            if done()? {
                return Ok(());
            }
            let waited = start.elapsed();
            if waited >= self.limit {
                return Err(self.expire(backend, what));
            }
            if waited < Duration::from_millis(1) {
                std::hint::spin_loop();
            } else if waited < Duration::from_millis(10) {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
    }
}

impl Default for WaitLimit {
    /// [`DEFAULT_WAIT_LIMIT`].
    fn default() -> Self {
        Self::new(DEFAULT_WAIT_LIMIT)
    }
}

/// The limit `GPUWORTHY_WAIT_LIMIT` asks for: a number of seconds above 0 and at most a day (`0.5`, `30`, `600`);
/// [`DEFAULT_WAIT_LIMIT`] where it is unset. Any other value is an error naming the variable.
pub fn limit_from_env() -> Result<Duration> {
    let Some(text) = env::read(WAIT_LIMIT_VAR)? else { return Ok(DEFAULT_WAIT_LIMIT) };
    parse_seconds(&text)
        .ok_or_else(|| env::invalid_value(WAIT_LIMIT_VAR, &text, "a number of seconds above 0 and at most 86400"))
}

/// `text` as a number of seconds above 0 and at most a day.
fn parse_seconds(text: &str) -> Option<Duration> {
    let seconds: f64 = text.trim().parse().ok()?;
    (seconds.is_finite() && seconds > 0.0 && seconds <= MOST_SECONDS).then(|| Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_read_and_bad_values_refused() {
        assert_eq!(parse_seconds("600"), Some(Duration::from_secs(600)));
        assert_eq!(parse_seconds(" 0.25 "), Some(Duration::from_millis(250)));
        assert_eq!(parse_seconds("86400"), Some(Duration::from_secs(86_400)));
        for bad in ["0", "-1", "86401", "NaN", "inf", "ten", "10s", "1e400"] {
            assert_eq!(parse_seconds(bad), None, "{bad}");
        }
        let err = env::invalid_value(WAIT_LIMIT_VAR, "ten", "a number of seconds above 0 and at most 86400");
        assert!(err.to_string().contains("GPUWORTHY_WAIT_LIMIT=ten"), "{err}");
    }

    #[test]
    fn a_wait_past_the_limit_expires_the_backend_and_later_calls_fail_at_once() {
        let limit = WaitLimit::new(Duration::from_millis(30));
        let start = Instant::now();
        let err = limit.poll_until(BackendKind::Wgpu, "reading the result", || Ok(false)).unwrap_err();
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(30) && waited < Duration::from_secs(5), "{waited:?}");
        let text = err.to_string();
        assert!(
            text.contains("reading the result") && text.contains("0.03 s") && text.contains(WAIT_LIMIT_VAR),
            "{text}"
        );
        assert!(limit.is_expired());
        let start = Instant::now();
        let mut asked = false;
        let again = limit.poll_until(BackendKind::Wgpu, "another wait", || {
            asked = true;
            Ok(true)
        });
        assert!(!asked && start.elapsed() < Duration::from_millis(30), "an expired backend does not wait again");
        assert!(again.unwrap_err().to_string().contains("reading the result, 0.03 s"));
    }

    #[test]
    fn a_wait_within_the_limit_returns_as_soon_as_the_work_is_done_and_passes_errors_on() {
        let limit = WaitLimit::new(Duration::from_secs(5));
        let mut calls = 0;
        limit
            .poll_until(BackendKind::Cuda, "waiting", || {
                calls += 1;
                Ok(calls == 3)
            })
            .unwrap();
        assert_eq!(calls, 3);
        let err = limit.poll_until(BackendKind::Cuda, "waiting", || Err(Error::invalid("the driver said no")));
        assert!(err.unwrap_err().to_string().contains("the driver said no"));
        assert!(!limit.is_expired(), "an error from the work is not a wait past the limit");
    }
}
