//! What the wgpu backend's integration tests share: opening the backend, or skipping loudly where there is none.

use gpuworthy_core::BackendKind;
use gpuworthy_wgpu::WgpuBackend;

/// The wgpu backend, or `None` where no adapter opens here; that is a failure when `GPUWORTHY_REQUIRE` names wgpu
/// (and a bad `GPUWORTHY_REQUIRE` fails with the error that names the variable and its valid values).
pub fn backend() -> Option<WgpuBackend> {
    match WgpuBackend::new() {
        Ok(b) => Some(b),
        Err(e) => {
            let required = BackendKind::required_by_env().unwrap_or_else(|bad| panic!("{bad}"));
            assert!(!required.contains(&BackendKind::Wgpu), "wgpu is required but unavailable: {e}");
            println!("wgpu unavailable here, nothing to test: {e}");
            None
        }
    }
}
