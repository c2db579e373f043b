//! The wgpu backend's devices are kept for the process and never destroyed while it runs (NVIDIA's driver can
//! deadlock when one is destroyed as another thread exits: `wgpu-backend/src/devices.rs`), yet no device serves two
//! live backends: two backends open at once have devices of their own, and a backend opened after one was dropped
//! takes the dropped one's device instead of making another. One test in its own binary, so that no other test's
//! backends take or give back devices meanwhile.

use gpuworthy_wgpu::WgpuBackend;

mod common;
use common::backend;

#[test]
fn live_backends_never_share_a_device_and_a_dropped_backends_device_is_taken_again() {
    let Some(first) = backend() else { return };
    let second = WgpuBackend::new().expect("a second backend on the same adapter");
    assert!(first.wgpu_device() != second.wgpu_device(), "two live backends share one device");
    let given_back = second.wgpu_device().clone();
    drop(second);
    let third = WgpuBackend::new().expect("a third backend");
    assert!(third.wgpu_device() == &given_back, "a backend opened after another was dropped made a new device");
    assert!(third.wgpu_device() != first.wgpu_device(), "a live backend's device was handed out again");
}
