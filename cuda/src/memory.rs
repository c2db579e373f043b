//! Moving data between host and device: pageable (an ordinary `Vec`, which the driver copies through its own pinned
//! bounce buffer) or pinned (page-locked memory the copy engines read directly, usually several times faster).
//!
//! With [`HostMemory::Pinned`], transfers are pipelined through a page-locked staging buffer of two halves of
//! [`STAGING_CHUNK_BYTES`] each, which the backend keeps: an upload copies chunk i+1 of the input into one half, on
//! every core, while the copy engine moves chunk i from the other half to the device; a download copies chunk i+1
//! from the device into one half while the cores copy chunk i out of the other. An event per half says when the copy
//! engine is done with it. The host copies are part of the measured phase, as they are for a user whose data is in
//! an ordinary vector; with them overlapped, the phase approaches the slower of the copy engine and the host's memory.
//! [`CudaBackend::transfer_rates`] measures the raw copy rates with no staging, the figure to compare with `torch`'s
//! `pin_memory()` copies.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use cudarc::driver::{CudaEvent, CudaSlice, CudaView, DeviceRepr, PinnedHostSlice, ValidAsZeroBits, sys};
use gpuworthy_core::{Error, Result};
use rayon::prelude::*;

use crate::{CudaBackend, driver_error, lock};

/// The kind of host memory transfers go through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostMemory {
    /// Ordinary (pageable) memory: what a `Vec` is.
    #[default]
    Pageable,
    /// Page-locked memory, staged by the backend.
    Pinned,
    /// As [`HostMemory::Pinned`] for each phase alone; a whole run (`Implements::run`) is pipelined: cut into chunks
    /// that flow through several streams, so that host staging, both copy directions and the kernels overlap (see
    /// the `pipeline` module).
    Pipelined,
}

/// The size of each half of the pinned staging buffer: large enough that a copy's fixed cost is small against the
/// copy, small enough that the first and last chunks, which nothing overlaps, are short (measured:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
pub const STAGING_CHUNK_BYTES: usize = 16 << 20;

/// Page-locked staging buffers, one per element type, kept by the backend: allocated on the first pinned transfer of
/// that type, grown when a larger one needs more (at most two [`STAGING_CHUNK_BYTES`] halves), never shrunk, so
/// that transfers of alternating sizes (matmul's A and B) do not page-lock memory again inside a timed phase.
#[derive(Default)]
pub(crate) struct Staging {
    f32: Mutex<Option<StagingBuffer<f32>>>,
    u32: Mutex<Option<StagingBuffer<u32>>>,
    u16: Mutex<Option<StagingBuffer<u16>>>,
}

/// A page-locked buffer of two halves and an event per half, recorded after the copy that uses the half.
pub(crate) struct StagingBuffer<T: DeviceRepr> {
    memory: PinnedHostSlice<T>,
    events: [CudaEvent; 2],
}

/// A host vector of `len` default values (zeros) for a download, with its pages mapped in on every core, backed by
/// huge pages where the system has them ([`gpuworthy_core::shard::zeroed`]): a fresh large vector is zero pages the
/// kernel maps in on first touch, and mapping in 256 MiB costs more than copying it (measured on the H200 machine's
/// host: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
pub(crate) fn fresh_host_vec<T: Staged>(len: usize) -> Vec<T> {
    gpuworthy_core::shard::zeroed(len)
}

/// Makes `output` a vector of `len` elements for a run to write every element of: kept as it is (old contents and
/// all) where it already has `len` elements, its pages long mapped in by an earlier run, else replaced by a
/// [`fresh_host_vec`].
pub(crate) fn host_output<T: Staged>(output: &mut Vec<T>, len: usize) {
    if output.len() != len {
        *output = fresh_host_vec(len);
    }
}

/// The host memory this process page-locked through [`CudaBackend::page_lock_host`], as address ranges.
static LOCKED: Mutex<Vec<std::ops::Range<usize>>> = Mutex::new(Vec::new());

/// The locked range that holds `len` bytes from `start`, if one does.
fn locked_range_holding(start: usize, len: usize) -> Option<std::ops::Range<usize>> {
    lock(&LOCKED).iter().find(|range| range.start <= start && start + len <= range.end).cloned()
}

/// The staging buffer of one element type, held for one transfer.
type StagingGuard<'a, T> = std::sync::MutexGuard<'a, Option<StagingBuffer<T>>>;

/// Element types that can be staged through pinned memory.
pub(crate) trait Staged: DeviceRepr + ValidAsZeroBits + Copy + Default + Unpin + Send + Sync {
    fn slot(staging: &Staging) -> &Mutex<Option<StagingBuffer<Self>>>;
}

impl Staged for f32 {
    fn slot(staging: &Staging) -> &Mutex<Option<StagingBuffer<f32>>> {
        &staging.f32
    }
}

impl Staged for u16 {
    fn slot(staging: &Staging) -> &Mutex<Option<StagingBuffer<u16>>> {
        &staging.u16
    }
}

impl Staged for u32 {
    fn slot(staging: &Staging) -> &Mutex<Option<StagingBuffer<u32>>> {
        &staging.u32
    }
}

/// Measured host-device copy rates, in decimal GB/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransferRates {
    /// Bytes per copy.
    pub bytes: usize,
    /// Host to device from pageable memory.
    pub host_to_device_pageable: f64,
    /// Host to device from pinned memory.
    pub host_to_device_pinned: f64,
    /// Device to host into pageable memory.
    pub device_to_host_pageable: f64,
    /// Device to host into pinned memory.
    pub device_to_host_pinned: f64,
}

impl CudaBackend {
    /// A device buffer of `len` zeros (at least one element: the driver refuses empty allocations).
    pub(crate) fn zeros<T: DeviceRepr + ValidAsZeroBits>(&self, len: usize) -> Result<CudaSlice<T>> {
        let _queue = self.hold_queue()?;
        self.stream
            .alloc_zeros(len.max(1))
            .map_err(driver_error(format!("allocating {} bytes on the device", len * size_of::<T>())))
    }

    /// Copies `host` to a new device buffer (of at least one element), through the configured host memory.
    pub(crate) fn to_device<T: Staged>(&self, host: &[T]) -> Result<CudaSlice<T>> {
        if host.is_empty() {
            return self.zeros(1);
        }
        let _queue = self.hold_queue()?;
        // SAFETY: the copy below writes every element before any kernel reads the buffer (same stream, in order).
        let mut device = unsafe { self.stream.alloc::<T>(host.len()) }
            .map_err(driver_error(format!("allocating {} bytes on the device", std::mem::size_of_val(host))))?;
        let what = format!("copying {} bytes to the device", std::mem::size_of_val(host));
        match self.host_memory {
            HostMemory::Pageable => self.stream.memcpy_htod(host, &mut device).map_err(driver_error(&what))?,
            HostMemory::Pinned | HostMemory::Pipelined => self.upload_pipelined(host, &mut device, &what)?,
        }
        Ok(device)
    }

    /// The staging buffer for `len` elements (two halves of at most [`STAGING_CHUNK_BYTES`], reused when the kept one
    /// is large enough), and the length of one half.
    fn staging_for<T: Staged>(&self, len: usize, what: &str) -> Result<(StagingGuard<'_, T>, usize)> {
        let chunk = (STAGING_CHUNK_BYTES / size_of::<T>()).min(len).max(1);
        let mut guard = lock(T::slot(&self.staging));
        if guard.as_ref().is_none_or(|kept| kept.memory.len() < 2 * chunk) {
            *guard = None; // free the old one first
            // SAFETY: each half is written (by a copy from the host or from the device) before anything reads it.
            let memory = unsafe { self.context.alloc_pinned_with_flags::<T>(2 * chunk, 0) }.map_err(driver_error(
                format!("allocating {} bytes of pinned host memory", 2 * chunk * size_of::<T>()),
            ))?;
            let event = || self.context.new_event(None).map_err(driver_error(what));
            *guard = Some(StagingBuffer { memory, events: [event()?, event()?] });
        }
        Ok((guard, chunk))
    }

    /// Uploads `host` into `device` through the pinned staging buffer, staging one chunk while the previous one is
    /// copied, and waits for the last copy (the staging buffer is then free for the next caller).
    fn upload_pipelined<T: Staged>(&self, host: &[T], device: &mut CudaSlice<T>, what: &str) -> Result<()> {
        let (mut guard, chunk) = self.staging_for::<T>(host.len(), what)?;
        let StagingBuffer { memory, events } = guard.as_mut().expect("allocated by staging_for");
        let staging = memory.as_mut_slice().map_err(driver_error(what))?;
        let (first, second) = staging.split_at_mut(chunk);
        let halves = [first, &mut second[..chunk]];
        for (i, part) in host.chunks(chunk).enumerate() {
            let half = i % 2;
            if i >= 2 {
                // The copy engine must be done reading this half (chunk i - 2) before it is overwritten.
                self.wait_for_event(&events[half], what)?;
            }
            let stage = &mut halves[half][..part.len()];
            stage.par_chunks_mut(1 << 16).zip(part.par_chunks(1 << 16)).for_each(|(to, from)| to.copy_from_slice(from));
            let start = i * chunk;
            let mut target = device.slice_mut(start..start + part.len());
            // The copy is asynchronous: it reads this half of the page-locked buffer after the call returns, which is
            // why the half is not written again until its event (recorded next) has completed.
            self.stream.memcpy_htod(&*stage, &mut target).map_err(driver_error(what))?;
            events[half].record(&self.stream).map_err(driver_error(what))?;
        }
        for event in events.iter() {
            self.wait_for_event(event, what)?;
        }
        Ok(())
    }

    /// Downloads the first `host.len()` elements of `device` into `host` through the pinned staging buffer: chunk
    /// i + 1 is copied from the device while the cores copy chunk i out of the other half.
    fn download_pipelined<T: Staged>(&self, device: &CudaView<'_, T>, host: &mut [T], what: &str) -> Result<()> {
        let (mut guard, chunk) = self.staging_for::<T>(host.len(), what)?;
        let StagingBuffer { memory, events } = guard.as_mut().expect("allocated by staging_for");
        let staging = memory.as_mut_slice().map_err(driver_error(what))?;
        let (first, second) = staging.split_at_mut(chunk);
        let halves = [first, &mut second[..chunk]];
        let parts: Vec<&mut [T]> = host.chunks_mut(chunk).collect();
        let count = parts.len();
        let mut parts = parts.into_iter();
        let mut pending: Option<(usize, &mut [T])> = None;
        for i in 0..=count {
            let half = i % 2;
            let next = parts.next();
            if let Some(part) = &next {
                let start = i * chunk;
                let source = device.slice(start..start + part.len());
                // Asynchronous: the copy engine writes this half after the call returns; its event says when.
                self.stream.memcpy_dtoh(&source, &mut halves[half][..part.len()]).map_err(driver_error(what))?;
                events[half].record(&self.stream).map_err(driver_error(what))?;
            }
            if let Some((previous, out)) = pending.take() {
                self.wait_for_event(&events[previous], what)?;
                let stage = &halves[previous][..out.len()];
                out.par_chunks_mut(1 << 16)
                    .zip(stage.par_chunks(1 << 16))
                    .for_each(|(to, from)| to.copy_from_slice(from));
            }
            pending = next.map(|part| (half, part));
        }
        Ok(())
    }

    /// Copies the first `len` elements of `device` to the host, through the configured host memory, and waits.
    pub(crate) fn to_host<T: Staged>(&self, device: &CudaSlice<T>, len: usize) -> Result<Vec<T>> {
        // Mapped in on every core first (see `fresh_host_vec`): faulting pages in during the driver's copy makes a
        // pageable download several times slower, and a pinned one's copies out of staging wait for the faults.
        let mut host = fresh_host_vec::<T>(len);
        self.copy_to_host(device, &mut host)?;
        Ok(host)
    }

    /// Copies the first `host.len()` elements of `device` into `host` (memory the caller owns, such as a group
    /// member's place in one output), through the configured host memory, and waits.
    pub(crate) fn copy_to_host<T: Staged>(&self, device: &CudaSlice<T>, host: &mut [T]) -> Result<()> {
        self.copy_range_to_host(device, 0, host)
    }

    /// Copies elements `from..from + host.len()` of `device` into `host`, and waits: straight into `host` where it is
    /// ordinary memory and the backend moves data pageable, or where it is page-locked (the copy engine writes it
    /// directly, no staging), else through the pinned staging.
    pub(crate) fn copy_range_to_host<T: Staged>(
        &self,
        device: &CudaSlice<T>,
        from: usize,
        host: &mut [T],
    ) -> Result<()> {
        if host.is_empty() {
            return Ok(());
        }
        if from + host.len() > device.len() {
            return Err(Error::invalid(format!(
                "elements {from}..{} of a device buffer of {}",
                from + host.len(),
                device.len()
            )));
        }
        let what = format!("copying {} bytes to the host", std::mem::size_of_val(host));
        let _queue = self.hold_queue()?;
        // The kernels before the copy finish first, within the wait limit: the copy itself would wait for them
        // without one.
        self.wait_for_stream(&what)?;
        let view = device.slice(from..from + host.len());
        if self.host_memory == HostMemory::Pageable || self.is_page_locked(host) {
            self.stream.memcpy_dtoh(&view, host).map_err(driver_error(&what))?;
            self.stream.synchronize().map_err(driver_error(&what))
        } else {
            self.download_pipelined(&view, host, &what)
        }
    }

    /// Page-locks the host pages that hold `bytes` for every context of the process
    /// (`CU_MEMHOSTREGISTER_PORTABLE`, so that every GPU's copies go straight to them), until the lock drops; `None`
    /// where they lie inside memory this process locked already, or `bytes` is empty.
    ///
    /// # Safety
    ///
    /// `bytes` stays allocated at the same address until the lock is dropped.
    pub(crate) unsafe fn page_lock_host(&self, bytes: &[u8]) -> Result<Option<gpuworthy_core::backend::PageLock>> {
        if bytes.is_empty() || locked_range_holding(bytes.as_ptr() as usize, bytes.len()).is_some() {
            return Ok(None);
        }
        // The range exactly (the driver locks the pages it touches): rounding it out to whole pages here could take in
        // a neighbouring array's page, which a lock of its own may hold already.
        let (start, end) = (bytes.as_ptr() as usize, bytes.as_ptr() as usize + bytes.len());
        let what = format!("page-locking {} bytes of host memory", bytes.len());
        self.context.bind_to_thread().map_err(driver_error(&what))?;
        // SAFETY: [start, end) is the caller's memory, which stays allocated while the lock lives (this function's
        // contract); registering changes how they are backed, never their contents.
        let status = unsafe {
            sys::cuMemHostRegister_v2(start as *mut std::ffi::c_void, end - start, sys::CU_MEMHOSTREGISTER_PORTABLE)
        };
        match status {
            sys::CUresult::CUDA_SUCCESS => {}
            // Locked by someone else (the caller's own `pin_memory`): copies stage as for any memory this process
            // did not lock, which is correct, only not direct.
            sys::CUresult::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => return Ok(None),
            error => return Err(driver_error(what)(cudarc::driver::DriverError(error))),
        }
        lock(&LOCKED).push(start..end);
        let context = Arc::clone(&self.context);
        Ok(Some(gpuworthy_core::backend::PageLock::new(end - start, move || {
            lock(&LOCKED).retain(|range| range.start != start);
            // A failure to unlock leaves the pages locked until the process ends: nothing to report it to.
            if context.bind_to_thread().is_ok() {
                // SAFETY: `start` is the address registered above, still allocated (the lock's contract).
                unsafe { sys::cuMemHostUnregister(start as *mut std::ffi::c_void) };
            }
        })))
    }

    /// Whether all of `host` lies in memory this process page-locked ([`CudaBackend::page_lock_host`]): then copies
    /// may go straight to and from it, asynchronously, without staging. The process keeps its own list of what it
    /// locked rather than asking the driver about each address, which answers an error for memory it does not know
    /// (and a sanitizer counts each such answer as an error).
    pub(crate) fn is_page_locked<T>(&self, host: &[T]) -> bool {
        host.is_empty() || locked_range_holding(host.as_ptr() as usize, std::mem::size_of_val(host)).is_some()
    }

    /// Measures raw copy rates for `bytes` bytes each way, pageable and pinned, as the median of `repetitions`
    /// copies after one warm-up each (no staging: the host data already lives in the kind of memory measured).
    pub fn transfer_rates(&self, bytes: usize, repetitions: usize) -> Result<TransferRates> {
        let len = (bytes / 4).max(1);
        let what = "measuring transfer rates";
        let mut device = self.zeros::<f32>(len)?;
        let mut pageable = vec![1.0f32; len];
        // SAFETY: written by the copies below before it is read.
        let mut pinned = unsafe { self.context.alloc_pinned_with_flags::<f32>(len, 0) }
            .map_err(driver_error("allocating pinned memory"))?;
        pinned.as_mut_slice().map_err(driver_error(what))?.fill(1.0);
        let seconds = |copy: &mut dyn FnMut() -> std::result::Result<(), cudarc::driver::DriverError>| -> Result<f64> {
            let mut samples = Vec::new();
            for i in 0..=repetitions.max(1) {
                self.stream.synchronize().map_err(driver_error(what))?;
                let start = Instant::now();
                copy().map_err(driver_error(what))?;
                self.stream.synchronize().map_err(driver_error(what))?;
                if i > 0 {
                    samples.push(start.elapsed().as_secs_f64());
                }
            }
            samples.sort_by(f64::total_cmp);
            Ok(samples[samples.len() / 2])
        };
        let stream = &self.stream;
        let rate = |s: f64| (4 * len) as f64 / s / 1e9;
        let h2d_pageable = seconds(&mut || stream.memcpy_htod(&pageable, &mut device))?;
        let h2d_pinned = seconds(&mut || stream.memcpy_htod(&pinned, &mut device))?;
        let d2h_pageable = seconds(&mut || stream.memcpy_dtoh(&device, &mut pageable))?;
        let d2h_pinned = seconds(&mut || stream.memcpy_dtoh(&device, &mut pinned))?;
        Ok(TransferRates {
            bytes: 4 * len,
            host_to_device_pageable: rate(h2d_pageable),
            host_to_device_pinned: rate(h2d_pinned),
            device_to_host_pageable: rate(d2h_pageable),
            device_to_host_pinned: rate(d2h_pinned),
        })
    }
}
