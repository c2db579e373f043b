//! The WGSL sources, embedded at compile time, and which file defines which entry point.
//!
//! One file per workload, entry points named `<workload>_<variant>` (with a suffix for the kernels of a multi-kernel
//! variant). The subgroup sum lives in its own file: a module that uses subgroup operations cannot even be created on
//! an adapter without them, and the other sum kernels must still work there. Its module is `sum.wgsl` followed by
//! `sum_subgroup.wgsl`, so the two kernels share one per-thread loop. The sources come from the `gpuworthy-shaders`
//! crate (the top-level `shaders/` folder), so that this crate can be packaged.

use std::sync::LazyLock;

use gpuworthy_core::KernelSource;

use crate::workloads::shader;

/// Every shader of the backend (under `shaders/`) and the compute entry points it defines: each workload's (from the
/// one list of workloads) and the copy that measures the adapter's bandwidth.
pub static SHADERS: LazyLock<Vec<KernelSource>> = LazyLock::new(|| {
    let copy = shader!("copy.wgsl", ["copy_vec4"]);
    crate::workloads::WORKLOAD_SHADERS.iter().flat_map(|shaders| shaders.iter().copied()).chain([copy]).collect()
});

/// The shader that defines `entry`.
pub(crate) fn shader_of(entry: &str) -> Option<&'static KernelSource> {
    KernelSource::defining(&SHADERS, entry)
}
