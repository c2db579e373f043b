//! What the wgpu backend's integration tests share: opening the backend, or skipping loudly where there is none.

use gpuworthy_core::BackendKind;
use gpuworthy_wgpu::WgpuBackend;

/// The wgpu backend, or `None` where no adapter opens here; that is a failure when `GPUWORTHY_REQUIRE` names wgpu
/// (and a bad `GPUWORTHY_REQUIRE` fails with the error that names the variable and its valid values).
pub fn backend() -> Option<WgpuBackend> {
    BackendKind::Wgpu.opened_or_skipped(WgpuBackend::new())
}
