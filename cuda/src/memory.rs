//! Moving data between host and device: pageable (an ordinary `Vec`, which the driver copies through its own pinned
//! bounce buffer) or pinned (page-locked memory the copy engines read directly, usually several times faster).
//!
//! With [`HostMemory::Pinned`], uploads copy the input into a page-locked staging buffer the backend keeps (and
//! reuses while sizes repeat) and transfer from there; downloads do the reverse. The extra host copy is part of the
//! measured phase, as it is for a user whose data is in an ordinary vector. [`CudaBackend::transfer_rates`] measures
//! the raw copy rates with no staging, the figure to compare with `torch`'s `pin_memory()` copies.

use std::sync::Mutex;
use std::time::Instant;

use cudarc::driver::{CudaSlice, DeviceRepr, PinnedHostSlice, ValidAsZeroBits};
use gpuworthy_core::Result;
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
}

/// Page-locked staging buffers, one per element type, reused while the size repeats.
#[derive(Default)]
pub(crate) struct Staging {
    f32: Mutex<Option<PinnedHostSlice<f32>>>,
    u32: Mutex<Option<PinnedHostSlice<u32>>>,
}

/// Element types that can be staged through pinned memory.
pub(crate) trait Staged: DeviceRepr + ValidAsZeroBits + Copy + Default + Unpin + Send + Sync {
    fn slot(staging: &Staging) -> &Mutex<Option<PinnedHostSlice<Self>>>;
}

impl Staged for f32 {
    fn slot(staging: &Staging) -> &Mutex<Option<PinnedHostSlice<f32>>> {
        &staging.f32
    }
}

impl Staged for u32 {
    fn slot(staging: &Staging) -> &Mutex<Option<PinnedHostSlice<u32>>> {
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
        let _queue = self.hold_queue();
        self.stream
            .alloc_zeros(len.max(1))
            .map_err(driver_error(format!("allocating {} bytes on the device", len * size_of::<T>())))
    }

    /// A pinned buffer of exactly `len` elements from `slot`, reusing the last one when the length matches.
    fn pinned<'a, T: Staged>(
        &self,
        slot: &'a Mutex<Option<PinnedHostSlice<T>>>,
        len: usize,
    ) -> Result<std::sync::MutexGuard<'a, Option<PinnedHostSlice<T>>>> {
        let mut guard = lock(slot);
        if guard.as_ref().is_none_or(|p| p.len() != len) {
            *guard = None; // free the old one first
            // SAFETY: the memory is written (by a copy from the host or from the device) before anything reads it.
            let fresh = unsafe { self.context.alloc_pinned_with_flags::<T>(len, 0) }
                .map_err(driver_error(format!("allocating {} bytes of pinned host memory", len * size_of::<T>())))?;
            *guard = Some(fresh);
        }
        Ok(guard)
    }

    /// Copies `host` to a new device buffer (of at least one element), through the configured host memory.
    pub(crate) fn to_device<T: Staged>(&self, host: &[T]) -> Result<CudaSlice<T>> {
        if host.is_empty() {
            return self.zeros(1);
        }
        let _queue = self.hold_queue();
        // SAFETY: the copy below writes every element before any kernel reads the buffer (same stream, in order).
        let mut device = unsafe { self.stream.alloc::<T>(host.len()) }
            .map_err(driver_error(format!("allocating {} bytes on the device", std::mem::size_of_val(host))))?;
        let what = format!("copying {} bytes to the device", std::mem::size_of_val(host));
        match self.host_memory {
            HostMemory::Pageable => self.stream.memcpy_htod(host, &mut device).map_err(driver_error(&what))?,
            HostMemory::Pinned => {
                let mut guard = self.pinned(T::slot(&self.staging), host.len())?;
                let pinned = guard.as_mut().expect("allocated above");
                pinned.as_mut_slice().map_err(driver_error(&what))?.copy_from_slice(host);
                self.stream.memcpy_htod(pinned, &mut device).map_err(driver_error(&what))?;
            }
        }
        Ok(device)
    }

    /// Copies the first `len` elements of `device` to the host, through the configured host memory, and waits.
    pub(crate) fn to_host<T: Staged>(&self, device: &CudaSlice<T>, len: usize) -> Result<Vec<T>> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let what = format!("copying {} bytes to the host", len * size_of::<T>());
        let _queue = self.hold_queue();
        let view = device.slice(..len);
        let mut host = vec![T::default(); len];
        // A fresh vector's pages are mapped on first touch; faulting them in during the driver's copy makes a
        // pageable download several times slower. Touching them first, on every core, keeps the copy at the
        // bus's speed.
        host.par_chunks_mut(1 << 18).for_each(|chunk| chunk.fill(T::default()));
        match self.host_memory {
            HostMemory::Pageable => {
                self.stream.memcpy_dtoh(&view, &mut host).map_err(driver_error(&what))?;
                self.stream.synchronize().map_err(driver_error(&what))?;
            }
            HostMemory::Pinned => {
                let mut guard = self.pinned(T::slot(&self.staging), len)?;
                let pinned = guard.as_mut().expect("allocated above");
                self.stream.memcpy_dtoh(&view, pinned).map_err(driver_error(&what))?;
                self.stream.synchronize().map_err(driver_error(&what))?;
                host.copy_from_slice(pinned.as_slice().map_err(driver_error(&what))?);
            }
        }
        Ok(host)
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
