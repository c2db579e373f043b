//! One backend shared by eight threads: every workload's `measure` (timing included) and `run` at once, each result
//! checked.
//!
//! Backends claim `Send + Sync`; this is the test that the claim holds. A GPU backend's timing window is shared
//! state (a CUDA stream's events, a wgpu query set), so the failures this catches are timings that swallow another
//! thread's launches and windows that lose their marks, as well as plain wrong answers.

use std::sync::Arc;
use std::time::Duration;

use gpuworthy::device::ImplementsEveryWorkload;
use gpuworthy::measure::{MeasureOptions, measure};
use gpuworthy_core::{Implements, Workload};
use libtest_mimic::Trial;

/// Threads sharing the backend.
pub const THREADS: usize = 8;

/// Measures and runs every variant of `W` at its smallest quick size, with this thread's own seed (every other
/// thread's measurement writing into a reused output), checking each output against the reference.
fn exercise<W: Workload, B: Implements<W>>(backend: &B, thread: usize) -> Result<(), String> {
    let params = W::quick_ladder().into_iter().next().ok_or("no quick size")?;
    let options = MeasureOptions {
        warmup: 1,
        spin_up: Duration::from_millis(5),
        min_repetitions: 2,
        max_repetitions: 2,
        target_time: Duration::ZERO,
        validate: true,
        seed: 1000 + thread as u64,
        // Half the threads time their runs into a reused output (`run_into`), checked after the last run.
        reuse_output: thread % 2 == 1,
    };
    let input = W::generate(&params, options.seed).map_err(|e| e.to_string())?;
    let expected = W::reference(&input).map_err(|e| e.to_string())?;
    for variant in backend.variants() {
        let what = || format!("thread {thread}: {} {variant} {params}", W::NAME);
        let m = measure::<W, B>(backend, variant, &input, &options).map_err(|e| format!("{} measure: {e}", what()))?;
        match m.check {
            Some(Ok(())) => {}
            Some(Err(mismatch)) => return Err(format!("{} measure: {mismatch}", what())),
            None => return Err(format!("{}: measure did not check its output", what())),
        }
        let output = backend.run(variant, &input).map_err(|e| format!("{} run: {e}", what()))?;
        W::check(&input, &expected, &output, backend.precision(variant)).map_err(|e| format!("{} run: {e}", what()))?;
    }
    Ok(())
}

/// Exercises every workload of the list, in order, stopping at the first failure.
macro_rules! exercise_each {
    ([$backend:expr, $thread:expr] $($name:ident: $workload:ty),* $(,)?) => {{
        $(exercise::<$workload, _>($backend, $thread)?;)*
        Ok(())
    }};
}

/// Every workload on `backend` from [`THREADS`] threads at once: `conformance::<label>::eight_threads`, the label
/// naming the backend or a mode of it (`cuda-pipelined`).
pub fn eight_threads_trial<B: ImplementsEveryWorkload + 'static>(backend: &Arc<B>, label: &str) -> Trial {
    let backend = Arc::clone(backend);
    Trial::test(format!("conformance::{label}::eight_threads"), move || {
        let b = &*backend;
        let failures: Vec<String> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..THREADS)
                .map(|thread| {
                    scope.spawn(move || -> Result<(), String> {
                        gpuworthy_core::for_each_workload!(exercise_each; b, thread)
                    })
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| match h.join() {
                    Ok(result) => result.err(),
                    Err(_) => Some("a thread panicked".to_owned()),
                })
                .collect()
        });
        if failures.is_empty() { Ok(()) } else { Err(failures.join("\n").into()) }
    })
}
