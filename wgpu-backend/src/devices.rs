//! The wgpu devices of this process, kept for its whole life: a backend takes an idle device of its adapter, or a new
//! one, and gives it back when dropped, so that no device is ever destroyed while the process runs.
//!
//! On NVIDIA's Linux driver (580.159.04, on an H200), destroying a Vulkan device while another thread that had called
//! into Vulkan was exiting deadlocked both threads inside the driver: the one in `vkDestroyDevice` or
//! `vkDestroyInstance`, the other in the driver's thread-exit destructor, each waiting for a lock the other held
//! (`docs/results/nvidia-h200/driver-deadlock/`). A program whose threads each open and drop a backend (a test
//! harness, a thread pool serving requests) meets it: the raw-kernel tests hung about once in ten runs, and a test
//! that opens and drops devices on eight threads at once hung every time. One Vulkan instance for the process did
//! not stop it, since the devices were still destroyed.
//!
//! Why a pool and not one device shared by every backend on an adapter: one shared device stopped the hangs, but one
//! run of the raw-kernel tests in 38 then ended in a segmentation fault, whose cause was not found; sharing had made
//! one device the driver's for every backend's threads at once, which no run before had done. From the pool each live
//! backend has a device of its own, as when every backend made its own, and the pool holds as many devices as the
//! most backends the process has had open on the adapter at one time. On the H200 the raw-kernel tests then ran 54
//! times without a hang or a fault, and the eight-thread test passed three times of three. A device whose work ran
//! past the wait limit ([`gpuworthy_core::WaitLimit`]) is never given back: its queue is stuck behind that work, and
//! the driver frees it when the process ends.

use std::sync::{Arc, Mutex};

use gpuworthy_core::{QueueLock, Result};

use crate::{lock, unavailable};

/// A device with its queue, the sink of the errors no error scope caught, and the lock that keeps other threads'
/// submissions out of a timing window.
pub(crate) struct KeptDevice {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) uncaptured: Arc<Mutex<Vec<String>>>,
    pub(crate) queue_lock: Arc<QueueLock>,
}

/// Devices no backend holds, each with its [`adapter_key`].
static IDLE: Mutex<Vec<(String, KeptDevice)>> = Mutex::new(Vec::new());

/// What tells one adapter from another: its API, name, ids, PCI bus (which tells two GPUs of one model apart where
/// the driver reports it) and driver.
pub(crate) fn adapter_key(info: &wgpu::AdapterInfo) -> String {
    format!(
        "{:?}|{}|{:#x}:{:#x}|{}|{}|{}",
        info.backend, info.name, info.vendor, info.device, info.device_pci_bus_id, info.driver, info.driver_info
    )
}

/// An idle device of `adapter`, or a new one made with `descriptor` (the same for every backend on one adapter,
/// since it follows from the adapter alone).
pub(crate) fn take(adapter: &wgpu::Adapter, descriptor: &wgpu::DeviceDescriptor<'_>) -> Result<KeptDevice> {
    let info = adapter.get_info();
    let key = adapter_key(&info);
    {
        let mut idle = lock(&IDLE);
        if let Some(at) = idle.iter().position(|(k, _)| *k == key) {
            let (_, kept) = idle.swap_remove(at);
            lock(&kept.uncaptured).clear();
            return Ok(kept);
        }
    }
    let (device, queue) = pollster::block_on(adapter.request_device(descriptor))
        .map_err(|e| unavailable(format!("adapter {} refused a device: {e}", info.name)))?;
    let uncaptured = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&uncaptured);
    device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| lock(&sink).push(e.to_string())));
    Ok(KeptDevice { device, queue, uncaptured, queue_lock: Arc::default() })
}

/// Gives `kept`, a device of the adapter `key` names, back for the next backend on that adapter.
pub(crate) fn give_back(key: String, kept: KeptDevice) {
    lock(&IDLE).push((key, kept));
}
