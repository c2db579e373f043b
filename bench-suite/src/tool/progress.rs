//! Progress of long work (a sweep, a calibration, an evaluation) on standard error: a bar on a terminal, a line every
//! few seconds where standard error is piped.
//!
//! The facade reports progress through its [`Progress`] trait and knows nothing of terminals; [`Bar`] is the tool's
//! one implementation of it, so that every command shows long work the same way and a piped calibration still says
//! where it is.

use std::time::Duration;

use gpuworthy::model::sweep::Progress;
use indicatif::{ProgressBar, ProgressStyle};

/// Long work's progress: a bar on a terminal, a line at a time where standard error is piped.
pub(crate) struct Bar(pub(crate) ProgressBar);

/// Where standard error is piped, the longest time between two progress lines.
const PIPED_LINE_EVERY: Duration = Duration::from_secs(5);

impl Progress for Bar {
    fn plan(&self, steps: u64) {
        self.0.inc_length(steps);
    }
    fn advance(&self, steps: u64) {
        self.0.inc(steps);
    }
    /// On a terminal, the bar's message. Where standard error is not a terminal (a pipe, a file, a CI log) the bar
    /// draws nothing, so a line goes there whenever the work moves to another workload, and at least every
    /// [`PIPED_LINE_EVERY`] otherwise, with the elapsed time: a long calibration piped to a file shows where it is.
    fn now_measuring(&self, what: String) {
        use std::io::IsTerminal;
        use std::sync::atomic::{AtomicU64, Ordering};
        /// The elapsed time of the last line, in milliseconds.
        static LAST_LINE_MS: AtomicU64 = AtomicU64::new(0);
        if !std::io::stderr().is_terminal() {
            let workload = what.split_whitespace().next().unwrap_or_default().to_owned();
            let previous = self.0.message();
            let elapsed = self.0.elapsed();
            let since =
                elapsed.as_millis() as u64 - LAST_LINE_MS.load(Ordering::Relaxed).min(elapsed.as_millis() as u64);
            if previous.split_whitespace().next() != Some(workload.as_str())
                || since >= PIPED_LINE_EVERY.as_millis() as u64
            {
                eprintln!("gpuworthy: [{:>4.0} s] {what}", elapsed.as_secs_f64());
                LAST_LINE_MS.store(elapsed.as_millis() as u64, Ordering::Relaxed);
            }
        }
        self.0.set_message(what);
    }
}

/// The progress bar of sweeps, calibration and evaluation: elapsed time, steps done of the steps planned, and what is
/// being measured.
pub(crate) fn progress_bar() -> ProgressBar {
    ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .expect("a valid template"),
    )
}
