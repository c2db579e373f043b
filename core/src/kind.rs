//! [`BackendKind`]: which backend, as a value.
//!
//! It sits in a module of its own, below both the error type (which names the backend an error came from) and the
//! backend traits (which return errors), so that neither imports the other. Parsing a name, which returns an error,
//! lives with the traits in [`crate::backend`].

use std::fmt;

/// The backends gpuworthy knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BackendKind {
    /// The host CPU: rayon threads and explicit SIMD.
    Cpu,
    /// NVIDIA GPUs through the CUDA driver and NVRTC.
    Cuda,
    /// Any GPU through WGSL compute shaders on wgpu (Vulkan, Metal, DX12), or a CPU through lavapipe.
    Wgpu,
}

impl BackendKind {
    /// Every backend, in a stable order.
    pub const ALL: [BackendKind; 3] = [BackendKind::Cpu, BackendKind::Cuda, BackendKind::Wgpu];

    /// The lower-case name used on the command line, in benchmark ids and in `GPUWORTHY_REQUIRE`.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Cuda => "cuda",
            BackendKind::Wgpu => "wgpu",
        }
    }

    /// Whether this backend is written for GPUs (so data must travel to its device). Its device may still be a CPU
    /// adapter: see [`crate::DeviceInfo::device_type`].
    pub fn is_gpu(self) -> bool {
        !matches!(self, BackendKind::Cpu)
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
