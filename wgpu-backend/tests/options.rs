//! Options given in code win over the environment: a bad `GPUWORTHY_WGPU_*` value stops `WgpuBackend::new` with an
//! error naming it, and does not touch a backend opened with `WgpuBackend::with_options`. A test binary of its own,
//! since it sets environment variables.

use gpuworthy_core::Backend;
use gpuworthy_wgpu::{ShaderChecks, WgpuBackend, WgpuOptions};

#[test]
fn explicit_options_bypass_the_environment() {
    // SAFETY: this test binary has one test, so no other thread reads the environment while it is changed.
    unsafe { std::env::set_var("GPUWORTHY_WGPU_CHECKS", "bogus") };
    let err = WgpuBackend::new().unwrap_err().to_string();
    assert!(err.contains("GPUWORTHY_WGPU_CHECKS=bogus"), "{err}");

    let options = WgpuOptions { shader_checks: ShaderChecks::ALL, ..WgpuOptions::default() };
    match WgpuBackend::with_options(&options) {
        Ok(backend) => {
            let checks = backend.device().limits.iter().find(|(name, _)| name == "shader_checks").cloned();
            assert_eq!(checks.map(|(_, value)| value), Some(ShaderChecks::ALL.to_string()));
        }
        Err(e) => assert!(e.is_unavailable(), "{e}"),
    }
}
