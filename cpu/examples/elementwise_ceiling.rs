//! How fast can one elementwise pass over memory go on this CPU? Times, on every thread at 2^26 elements (or the
//! length given as the first argument):
//!
//! - `saxpy` in place (`y = a*x + y`): two arrays read, one written back where it was read, 12 bytes an element;
//! - `y = a*x + b` into another array, one fused loop with ordinary stores, then with streaming stores (which skip
//!   reading each output line before overwriting it), 8 bytes an element;
//! - the same expression through the CPU backend's block evaluator, on resident data.
//!
//! The fused loop with streaming stores is the most any one-input, one-output pass reaches here: it is what a
//! compiler could generate for the expression, with nothing between the load and the store. The in-place `saxpy`
//! reaches more bytes a second because each output line it writes was just read, so its third stream costs no
//! read for ownership; a pass that writes to a new array cannot do that.
//!
//! ```text
//! cargo run --release -p gpuworthy-cpu --example elementwise_ceiling [LENGTH]
//! ```

use std::sync::Arc;
use std::time::Instant;

use gpuworthy_core::expr::{Expr, ExprParams, Expression};
use gpuworthy_core::{Implements, Workload};
use gpuworthy_cpu::CpuBackend;
use rayon::prelude::*;

/// Elements per parallel task of the hand-written loops.
const CHUNK: usize = 1 << 16;

/// Timed repetitions of each pass, after three untimed ones.
const REPETITIONS: usize = 30;

/// Prints the median time of `pass` and the bytes a second it moves, counting `bytes` per call.
fn time(name: &str, bytes: usize, mut pass: impl FnMut()) {
    for _ in 0..3 {
        pass();
    }
    let mut seconds: Vec<f64> = (0..REPETITIONS)
        .map(|_| {
            let start = Instant::now();
            pass();
            start.elapsed().as_secs_f64()
        })
        .collect();
    seconds.sort_by(f64::total_cmp);
    let median = seconds[REPETITIONS / 2];
    println!("{name:<44} {:>8.3} ms {:>8.1} GB/s", median * 1e3, bytes as f64 / median / 1e9);
}

/// `y = a*x + b` with streaming stores past the first 16-byte boundary of `y` (x86-64 only).
#[cfg(target_arch = "x86_64")]
fn affine_streaming(a: f32, b: f32, x: &[f32], y: &mut [f32]) {
    use std::arch::x86_64::{_mm_add_ps, _mm_loadu_ps, _mm_mul_ps, _mm_set1_ps, _mm_sfence, _mm_stream_ps};
    let head = y.as_ptr().align_offset(16).min(y.len());
    let (x_head, x_rest) = x.split_at(head);
    let (y_head, y_rest) = y.split_at_mut(head);
    for (y, x) in y_head.iter_mut().zip(x_head) {
        *y = a * x + b;
    }
    let mut sources = x_rest.chunks_exact(4);
    let mut targets = y_rest.chunks_exact_mut(4);
    // SAFETY: SSE is part of x86-64. Each load reads the 4 elements of a whole chunk of `x`, and each streaming store
    // writes the 4 elements of a whole chunk of `y`, which starts at a 16-byte boundary (`y` is aligned from `head`
    // on, and the chunks are 16 bytes). The fence after the loop orders the streaming stores before the function
    // returns.
    unsafe {
        let (va, vb) = (_mm_set1_ps(a), _mm_set1_ps(b));
        for (x, y) in (&mut sources).zip(&mut targets) {
            let v = _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(x.as_ptr()), va), vb);
            _mm_stream_ps(y.as_mut_ptr(), v);
        }
        _mm_sfence();
    }
    for (y, x) in targets.into_remainder().iter_mut().zip(sources.remainder()) {
        *y = a * x + b;
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n = match std::env::args().nth(1) {
        Some(arg) => arg
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("the length `{arg}` is not a positive integer"))?,
        None => 1 << 26,
    };
    let cpu = CpuBackend::new()?;
    let (a, b) = (2.0f32, 1.0f32);
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 1e-3).collect();
    let mut y = vec![1.0f32; n];
    println!("{n} elements, {} threads", cpu.threads());
    cpu.install(|| {
        time("saxpy in place (12 bytes an element)", 12 * n, || {
            x.par_chunks(CHUNK).zip(y.par_chunks_mut(CHUNK)).for_each(|(x, y)| {
                y.iter_mut().zip(x).for_each(|(y, x)| *y += a * x);
            });
        });
        time("a*x + b, fused, ordinary stores (8 bytes)", 8 * n, || {
            x.par_chunks(CHUNK).zip(y.par_chunks_mut(CHUNK)).for_each(|(x, y)| {
                y.iter_mut().zip(x).for_each(|(y, x)| *y = a * x + b);
            });
        });
        #[cfg(target_arch = "x86_64")]
        time("a*x + b, fused, streaming stores (8 bytes)", 8 * n, || {
            x.par_chunks(CHUNK).zip(y.par_chunks_mut(CHUNK)).for_each(|(x, y)| affine_streaming(a, b, x, y));
        });
    });
    let program = Arc::new(Expr::parse("y = a*x + b")?.bind(&["a", "b"])?);
    let input = Expression::generate(&ExprParams::new(program, n, vec![a, b]), 1)?;
    let mut resident = Implements::<Expression>::upload(&cpu, &input)?;
    let mut result = Ok(());
    time("a*x + b, the block evaluator (8 bytes)", 8 * n, || {
        if result.is_ok() {
            result = Implements::<Expression>::launch(&cpu, "blocks", &mut resident);
        }
    });
    Ok(result?)
}
