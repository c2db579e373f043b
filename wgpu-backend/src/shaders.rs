//! The WGSL sources, embedded at compile time, and which file defines which entry point.
//!
//! One file per workload, entry points named `<workload>_<variant>` (with a suffix for the kernels of a multi-kernel
//! variant). The subgroup sum lives in its own file: a module that uses subgroup operations cannot even be created on
//! an adapter without them, and the other sum kernels must still work there. Its module is `sum.wgsl` followed by
//! `sum_subgroup.wgsl`, so the two kernels share one per-thread loop.

use gpuworthy_core::KernelSource;

macro_rules! shader {
    ($file:literal, [$($entry:literal),* $(,)?]) => {
        KernelSource {
            file: $file,
            source: include_str!(concat!("../../shaders/", $file)),
            kernels: &[$($entry),*],
        }
    };
    // A file that builds on another: the module is `$base` followed by `$file`.
    ($file:literal after $base:literal, [$($entry:literal),* $(,)?]) => {
        KernelSource {
            file: $file,
            source: concat!(
                include_str!(concat!("../../shaders/", $base)),
                include_str!(concat!("../../shaders/", $file))
            ),
            kernels: &[$($entry),*],
        }
    };
}

/// Every shader of the backend (under `shaders/`) and the compute entry points it defines.
pub const SHADERS: &[KernelSource] = &[
    shader!("square.wgsl", ["square_naive", "square_vec4"]),
    shader!("saxpy.wgsl", ["saxpy_naive", "saxpy_vec4"]),
    shader!("sum.wgsl", ["sum_workgroup"]),
    shader!("sum_subgroup.wgsl" after "sum.wgsl", ["sum_subgroup"]),
    shader!(
        "softmax.wgsl",
        ["softmax_unfused_max", "softmax_unfused_exp", "softmax_unfused_normalize", "softmax_fused"]
    ),
    shader!("matmul.wgsl", ["matmul_naive", "matmul_tiled", "matmul_register", "matmul_wide"]),
    shader!("mandelbrot.wgsl", ["mandelbrot_naive"]),
    shader!("histogram.wgsl", ["histogram_global", "histogram_private"]),
    shader!("stencil.wgsl", ["stencil_naive", "stencil_tiled", "stencil_rows"]),
    shader!("copy.wgsl", ["copy_vec4"]),
];

/// The shader that defines `entry`.
pub(crate) fn shader_of(entry: &str) -> Option<&'static KernelSource> {
    KernelSource::defining(SHADERS, entry)
}
