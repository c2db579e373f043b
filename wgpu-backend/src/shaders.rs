//! The WGSL sources, embedded at compile time, and which file defines which entry point.
//!
//! One file per workload, entry points named `<workload>_<variant>` (with a suffix for the kernels of a multi-kernel
//! variant). The subgroup sum lives in its own file: a module that uses subgroup operations cannot even be created on
//! an adapter without them, and the other sum kernels must still work there. Its module is `sum.wgsl` followed by
//! `sum_subgroup.wgsl`, so the two kernels share one per-thread loop. The sources come from the `gpuworthy-shaders`
//! crate (the top-level `shaders/` folder), so that this crate can be packaged.

use gpuworthy_core::KernelSource;

macro_rules! shader {
    ($file:literal = $source:ident, [$($entry:literal),* $(,)?]) => {
        KernelSource { file: $file, source: gpuworthy_shaders::$source, kernels: &[$($entry),*] }
    };
}

/// Every shader of the backend (under `shaders/`) and the compute entry points it defines.
pub const SHADERS: &[KernelSource] = &[
    shader!("square.wgsl" = SQUARE, ["square_naive", "square_vec4"]),
    shader!("saxpy.wgsl" = SAXPY, ["saxpy_naive", "saxpy_vec4"]),
    shader!("sum.wgsl" = SUM, ["sum_workgroup"]),
    shader!("sum_subgroup.wgsl" = SUM_WITH_SUBGROUPS, ["sum_subgroup"]),
    shader!(
        "softmax.wgsl" = SOFTMAX,
        [
            "softmax_unfused_max",
            "softmax_unfused_exp",
            "softmax_unfused_normalize",
            "softmax_fused",
            "softmax_split_stats",
            "softmax_split_normalize"
        ]
    ),
    shader!("matmul.wgsl" = MATMUL, ["matmul_naive", "matmul_tiled", "matmul_register", "matmul_wide"]),
    shader!("mandelbrot.wgsl" = MANDELBROT, ["mandelbrot_naive"]),
    shader!("histogram.wgsl" = HISTOGRAM, ["histogram_global", "histogram_private"]),
    shader!("stencil.wgsl" = STENCIL, ["stencil_naive", "stencil_tiled", "stencil_rows"]),
    shader!("copy.wgsl" = COPY, ["copy_vec4"]),
];

/// The shader that defines `entry`.
pub(crate) fn shader_of(entry: &str) -> Option<&'static KernelSource> {
    KernelSource::defining(SHADERS, entry)
}
