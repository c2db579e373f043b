//! The bytes a backend's kernel really moves to and from memory, where they differ from what a perfect
//! implementation moves ([`crate::Workload::traffic`]): the cost model extrapolates past its calibrated sizes in
//! them, since two shapes of one cost can move different bytes (a softmax row too long to be held on chip is read
//! twice), and one kernel can move different bytes per element at different sizes (the CPU writes large outputs with
//! streaming stores, small ones with ordinary stores, which read each line before they overwrite it).
//!
//! The facts are the backends' (their kernels follow these constants), kept here so that a model can apply them to
//! a machine it only has the calibration of (`explain --on`), with no backend open.

/// Outputs longer than this many elements (16 MiB of `f32`) are written by the CPU backend's vectorised variants with
/// streaming stores: they would not stay in cache anyway, and a streaming store skips reading each line before
/// overwriting it. Below it, a pass that reads one array and writes another moves 12 bytes per element, not 8.
pub const CPU_STREAM_ABOVE: usize = 1 << 22;

/// The longest softmax row the GPU backends' `fused` kernels read from memory once: WGSL holds up to this many floats
/// of a row in registers between its two sweeps (512 threads, four `vec4`s each), and CUDA's second sweep finds a row
/// this short still in its caches. A longer row is read twice.
pub const FUSED_ROW_READ_ONCE: usize = 8192;

/// The bytes the CPU backend's ordinary stores read before overwriting `elements` output elements: 4 per element,
/// none where `streamed`.
pub fn cpu_line_reads(elements: u64, streamed: bool) -> u64 {
    if streamed { 0 } else { 4 * elements }
}
