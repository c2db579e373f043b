//! `square` and `saxpy`: one pass over memory. The `scalar` variants are the single-threaded loops anyone writes
//! first; `simd` runs explicit vector code, on the calling thread below [`PARALLEL_FROM`] elements and split over
//! rayon tasks above, so that it is never the slower of the two at a size where the thread pool does not pay.

/// The variants of both.
pub(super) const VARIANTS: [&str; 2] = ["scalar", "simd"];

/// From this many elements the parallel `simd` pass beats the one-thread loop (measured on 2 and 16 cores): below
/// it, `simd` runs on the calling thread. With the pool woken at every size, `simd` was slower than `scalar` at 2^18
/// on an H200's 16-core host, and a model calibrated at 2^16 and 2^20, where `simd` was the
/// faster, chose it there (measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
pub(super) const PARALLEL_FROM: usize = 1 << 20;
