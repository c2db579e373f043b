//! One wgpu device per adapter for the whole process, shared by every backend opened on that adapter and never
//! destroyed while the process runs.
//!
//! On NVIDIA's Linux driver (580.159.04, on an H200), destroying a Vulkan device while another thread that had called
//! into Vulkan was exiting deadlocked both threads inside the driver: the one in `vkDestroyDevice` or
//! `vkDestroyInstance`, the other in the driver's thread-exit destructor, each waiting for a lock the other held
//! (`docs/results/nvidia-h200/driver-deadlock/`). A program whose threads each open and drop a backend (a test
//! harness, a thread pool serving requests) meets it: the raw-kernel tests hung about once in ten runs, and a test
//! that opens and drops devices on eight threads at once hung every time. One Vulkan instance for the process did
//! not stop it, since the devices were still destroyed; with each adapter's device kept, nothing is destroyed.
//!
//! The backends on one adapter share its device, its queue, the sink of errors that no error scope caught, and the
//! queue's lock, so that a timing window on one backend keeps the others' work out as it keeps other threads' (wgpu's
//! error scopes are per thread, so each caller's stay its own). Everything a backend makes on the device (buffers,
//! pipelines, timestamp queries) is its own and is freed with it. A second device on one adapter would isolate
//! nothing a user needs: the memory is the adapter's either way. A device whose work ran past the wait limit
//! ([`gpuworthy_core::WaitLimit`]) is taken out of the list ([`retire`]), so that a backend opened afterwards gets a
//! fresh one; the stuck one is left to the driver.

use std::sync::{Arc, Mutex};

use gpuworthy_core::{QueueLock, Result};

use crate::{lock, unavailable};

/// An adapter's device and what the backends on it share.
pub(crate) struct SharedDevice {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    /// Errors no error scope caught, reported by the next synchronisation of any backend on the device.
    pub(crate) uncaptured: Arc<Mutex<Vec<String>>>,
    /// Keeps other threads' and other backends' submissions out of a timing window.
    pub(crate) queue_lock: Arc<QueueLock>,
}

/// The devices opened so far, by [`adapter_key`].
static DEVICES: Mutex<Vec<(String, Arc<SharedDevice>)>> = Mutex::new(Vec::new());

/// What tells one adapter from another: its API, name, ids, PCI bus (which tells two GPUs of one model apart where
/// the driver reports it) and driver.
fn adapter_key(info: &wgpu::AdapterInfo) -> String {
    format!(
        "{:?}|{}|{:#x}:{:#x}|{}|{}|{}",
        info.backend, info.name, info.vendor, info.device, info.device_pci_bus_id, info.driver, info.driver_info
    )
}

/// The device of `adapter`: the one already open in this process, or a new one made with `descriptor` (the same for
/// every backend on one adapter, since it follows from the adapter alone).
pub(crate) fn device_for(
    adapter: &wgpu::Adapter,
    descriptor: &wgpu::DeviceDescriptor<'_>,
) -> Result<Arc<SharedDevice>> {
    let info = adapter.get_info();
    let key = adapter_key(&info);
    // Held while a device is made, so that two threads opening one adapter make one device.
    let mut devices = lock(&DEVICES);
    if let Some((_, shared)) = devices.iter().find(|(k, _)| *k == key) {
        return Ok(Arc::clone(shared));
    }
    let (device, queue) = pollster::block_on(adapter.request_device(descriptor))
        .map_err(|e| unavailable(format!("adapter {} refused a device: {e}", info.name)))?;
    let uncaptured = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&uncaptured);
    device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| lock(&sink).push(e.to_string())));
    let shared = Arc::new(SharedDevice { device, queue, uncaptured, queue_lock: Arc::default() });
    devices.push((key, Arc::clone(&shared)));
    Ok(shared)
}

/// Takes `shared` out of the list: its queue is stuck behind work that ran past the wait limit.
pub(crate) fn retire(shared: &Arc<SharedDevice>) {
    lock(&DEVICES).retain(|(_, kept)| !Arc::ptr_eq(kept, shared));
}
