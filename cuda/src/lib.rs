//! # gpuworthy-cuda
//!
//! The CUDA backend: NVIDIA GPUs through the driver API (cudarc), with kernels written in CUDA C and compiled at run
//! time by NVRTC for the device's own architecture, the analogue of PyTorch's `load_inline` and CuPy's `RawKernel`.
//!
//! cudarc loads `libcuda` and `libnvrtc` dynamically, so this crate builds on machines without a CUDA toolkit; but
//! cudarc *panics* when a library it needs is missing. [`CudaBackend::new`] therefore probes for each library first
//! and returns [`Error::Unavailable`] with the reason, so that no machine without CUDA ever sees a panic.
//!
//! One backend may be shared by threads. All work goes to one stream, and CUDA events time everything that stream
//! runs between them, so a timing window holds the backend's [`QueueLock`] until its end event is recorded and
//! every launch and copy holds it while it enqueues: another thread's work waits instead of being timed.

#![deny(missing_docs)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use cudarc::driver::{CudaContext, CudaFunction, CudaStream, DriverError, sys};
use gpuworthy_core::{
    Backend, BackendKind, DeviceInfo, DeviceType, Error, KernelClock, QueueGuard, QueueLock, Result, WaitLimit, env,
};

pub mod collective;
mod custom;
pub mod disk_cache;
pub mod expr;
mod kernels;
pub mod launch;
mod memory;
mod pipeline;
mod raw;
mod tensor_map;
mod workloads;

/// The cudarc crate this backend is built on, whose launch builder and buffers the extension points take.
pub use cudarc;
pub use custom::CustomKernel;
pub use disk_cache::DiskCache;
pub use kernels::{KERNEL_FILES, compile_options};
pub use memory::{HostMemory, TransferRates};
pub use pipeline::{
    PIPELINE_CHUNK_MAX_BYTES, PIPELINE_CHUNK_MIN_BYTES, PIPELINE_CHUNKS, PIPELINE_LANES, pipeline_chunk_bytes,
};
pub use raw::RawOnDevice;
pub use workloads::launch_config;
pub use workloads::variant_kernels;

/// Threads per block of the elementwise kernels unless [`CudaBackend::with_elementwise_block_size`] says otherwise.
pub const DEFAULT_ELEMENTWISE_BLOCK: u32 = 256;

/// The CUDA backend on one device, with its own stream.
pub struct CudaBackend {
    context: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    device: DeviceInfo,
    capability: (i32, i32),
    multiprocessors: u32,
    /// The shared memory one block may opt in to, in bytes (the tensor-core matmul rungs need more than the default
    /// 48 KiB).
    shared_optin: u32,
    host_memory: HostMemory,
    /// Threads per block of the elementwise kernels (`square`, `saxpy`).
    elementwise_block: u32,
    /// Loaded modules, by a hash of their source, compile options and toolchain ([`disk_cache::module_key`]).
    modules: Arc<Mutex<HashMap<String, kernels::LoadedModule>>>,
    /// Where compiled modules are kept between processes.
    disk_cache: DiskCache,
    /// The driver's and NVRTC's versions, part of every module's key.
    toolchain: String,
    /// Whether generated expression kernels compile with NVRTC's `-minimal` (NVRTC 12.4 and later, unless
    /// `GPUWORTHY_NVRTC_MINIMAL` turns it off): on an H200 and an H100 an expression compiled faster with it
    /// (measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    nvrtc_minimal: bool,
    functions: Mutex<HashMap<&'static str, CudaFunction>>,
    /// Kernels already allowed more dynamic shared memory than the default 48 KiB: set once, since `prepare` runs
    /// before every launch and a driver call there would be timed with the kernel.
    large_shared: Mutex<std::collections::HashSet<&'static str>>,
    /// Expressions' faster kernels compiling on threads of their own, by their source ([`expr`]).
    faster_kernels: Mutex<HashMap<String, Arc<expr::FasterKernel>>>,
    staging: memory::Staging,
    lanes: pipeline::Lanes,
    blas: OnceLock<std::result::Result<workloads::Blas, String>>,
    /// The device's memory, in bytes.
    memory_bytes: u64,
    /// The device's L2 cache, in bytes.
    l2_bytes: u64,
    /// Keeps other threads' work off the stream while a timing window is open: CUDA events time everything the
    /// stream runs between them.
    queue_lock: QueueLock,
    /// The bound on every wait for the stream, and whether one has run past it ([`WaitLimit`]).
    wait: WaitLimit,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend").field("device", &self.device).field("host_memory", &self.host_memory).finish()
    }
}

/// Locks a mutex, ignoring poisoning (the caches it guards stay consistent if a holder panicked).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An [`Error::Unavailable`] for CUDA with this reason.
fn unavailable(reason: impl Into<String>) -> Error {
    Error::Unavailable { backend: BackendKind::Cuda, reason: reason.into() }
}

/// An [`Error::Device`] for a driver error while doing `what`.
pub(crate) fn driver_error(what: impl Into<String>) -> impl FnOnce(DriverError) -> Error {
    let what = what.into();
    move |e| Error::Device { backend: BackendKind::Cuda, message: format!("{what}: {e}") }
}

/// The share of the device's memory its default memory pool keeps for reuse once freed: one quarter.
const FREED_MEMORY_KEPT_DIVISOR: u64 = 4;

/// Lets the device's default memory pool keep up to `bytes` of freed device memory for later allocations, where the
/// driver's default (a release threshold of 0) hands it back at every synchronisation and maps it in again at the
/// next allocation. Every buffer here is allocated on the stream (`cuMemAllocAsync`) and most live for one run, so
/// with the default a 256 MiB buffer costs a fresh mapping each time, far more than with memory kept (which is
/// what the caching allocators of PyTorch and CuPy do; measured on an H200:
/// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so). Memory in the pool is still this process's: other
/// processes
/// see it as used until the backend's context goes away. Nothing is set where the device has no memory pools
/// (cudarc then allocates with `cuMemAlloc`).
fn keep_freed_memory(context: &CudaContext, bytes: u64) -> Result<()> {
    let what = "keeping freed device memory in the memory pool";
    let pools = context
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
        .map_err(driver_error(what))?;
    if pools == 0 || !context.has_async_alloc() {
        return Ok(());
    }
    let mut pool = std::ptr::null_mut();
    // SAFETY: `pool` is a valid place for the handle, and `cu_device()` is the context's live device.
    unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, context.cu_device()) }.result().map_err(driver_error(what))?;
    let mut threshold = bytes;
    // SAFETY: `pool` is the device's default pool, just returned by the driver; the release threshold attribute
    // reads a `cuuint64_t` from the pointer, which points to `threshold` for the duration of the call.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
    }
    .result()
    .map_err(driver_error(what))
}

impl CudaBackend {
    /// The CUDA backend on device `ordinal` (0 is the first GPU), with pageable host memory.
    ///
    /// Returns [`Error::Unavailable`] when the driver library, NVRTC or a device is missing.
    pub fn new(ordinal: usize) -> Result<Self> {
        Self::with_host_memory(ordinal, HostMemory::Pageable)
    }

    /// How many CUDA devices the driver reports; 0 where there is no driver (never a panic).
    pub fn device_count() -> usize {
        // SAFETY: the probe only tries to open the shared library by name; it calls no CUDA function.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return 0;
        }
        CudaContext::device_count().map_or(0, |count| count.max(0) as usize)
    }

    /// The CUDA backend on device `ordinal`, moving data through `host_memory`.
    pub fn with_host_memory(ordinal: usize, host_memory: HostMemory) -> Result<Self> {
        // SAFETY: the probes only try to open the shared libraries by name; they call no CUDA function.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(unavailable(
                "the NVIDIA driver library (libcuda) was not found: this machine has no NVIDIA driver",
            ));
        }
        // SAFETY: as above.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(unavailable(
                "the NVRTC library (libnvrtc) was not found: install the CUDA toolkit's runtime compiler",
            ));
        }
        let count = CudaContext::device_count().map_err(|e| unavailable(format!("the driver failed to start: {e}")))?;
        if ordinal >= count.max(0) as usize {
            return Err(unavailable(format!("no CUDA device {ordinal}: the driver reports {count} device(s)")));
        }
        let context = CudaContext::new(ordinal).map_err(|e| unavailable(format!("device {ordinal}: {e}")))?;
        // SAFETY: every buffer of this backend is used on its one stream only, so cudarc's cross-stream event
        // tracking (an event recorded per buffer per launch) is unnecessary overhead.
        unsafe { context.disable_event_tracking() };
        let stream = context.new_stream().map_err(driver_error("creating a stream"))?;
        let device = describe(&context)?;
        let capability = context.compute_capability().map_err(driver_error("reading the compute capability"))?;
        let multiprocessors = context
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(driver_error("reading the multiprocessor count"))? as u32;
        let shared_optin = context
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .map_err(driver_error("reading the shared memory a block may opt in to"))?
            .max(0) as u32;
        let memory_bytes = context.total_mem().map_err(driver_error("reading the memory size"))? as u64;
        let l2_bytes = context
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
            .map_err(driver_error("reading the L2 cache size"))?
            .max(0) as u64;
        keep_freed_memory(&context, memory_bytes / FREED_MEMORY_KEPT_DIVISOR)?;
        let disk_cache = DiskCache::from_env()?;
        let wait = WaitLimit::from_env()?;
        Ok(CudaBackend {
            context,
            stream,
            device,
            capability,
            multiprocessors,
            shared_optin,
            host_memory,
            elementwise_block: DEFAULT_ELEMENTWISE_BLOCK,
            modules: Arc::default(),
            disk_cache,
            toolchain: toolchain(),
            nvrtc_minimal: env::read_flag("GPUWORTHY_NVRTC_MINIMAL")?.unwrap_or(true) && nvrtc_version() >= (12, 4),
            functions: Mutex::new(HashMap::new()),
            large_shared: Mutex::default(),
            faster_kernels: Mutex::new(HashMap::new()),
            staging: memory::Staging::default(),
            lanes: pipeline::Lanes::default(),
            blas: OnceLock::new(),
            memory_bytes,
            l2_bytes,
            queue_lock: QueueLock::default(),
            wait,
        })
    }

    /// How data moves between the host and the device.
    pub fn host_memory(&self) -> HostMemory {
        self.host_memory
    }

    /// This backend with `threads` threads per block for the elementwise kernels (`square` and `saxpy`, both
    /// variants): a multiple of the warp size (32) up to 1024. For the lesson on block size and occupancy; the
    /// default is [`DEFAULT_ELEMENTWISE_BLOCK`].
    pub fn with_elementwise_block_size(mut self, threads: u32) -> Result<Self> {
        if threads == 0 || threads > 1024 || !threads.is_multiple_of(32) {
            return Err(Error::invalid(format!(
                "a CUDA block size must be a multiple of 32 from 32 to 1024 threads, got {threads}"
            )));
        }
        self.elementwise_block = threads;
        Ok(self)
    }

    /// Threads per block of the elementwise kernels.
    pub fn elementwise_block_size(&self) -> u32 {
        self.elementwise_block
    }

    /// The driver context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.context
    }

    /// The stream every phase runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// This backend with every wait for its stream bounded by `limit` instead of `GPUWORTHY_WAIT_LIMIT`'s
    /// ([`WaitLimit`]).
    pub fn with_wait_limit(mut self, limit: Duration) -> Self {
        self.wait = WaitLimit::new(limit);
        self
    }

    /// The bound on every wait for the stream.
    pub fn wait_limit(&self) -> Duration {
        self.wait.limit()
    }

    /// Holds the stream against other threads' timing windows while work is enqueued on it (see [`QueueLock`]).
    /// Fails at once where a wait has run past the wait limit: the stream is still busy with that work, and anything
    /// enqueued behind it would wait for it.
    pub(crate) fn hold_queue(&self) -> Result<QueueGuard<'_>> {
        self.wait.check(BackendKind::Cuda)?;
        Ok(self.queue_lock.hold())
    }

    /// Waits, at most the wait limit, for everything enqueued on the stream so far, by an event recorded after it.
    /// `cuStreamSynchronize` would wait for ever for a kernel that never ends.
    pub(crate) fn wait_for_stream(&self, what: &str) -> Result<()> {
        self.wait.check(BackendKind::Cuda)?;
        let untimed = Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
        let done = self.stream.record_event(untimed).map_err(driver_error(what))?;
        self.wait_for_event(&done, what)
    }

    /// Waits, at most the wait limit, for the work recorded in `event`.
    pub(crate) fn wait_for_event(&self, event: &cudarc::driver::CudaEvent, what: &str) -> Result<()> {
        self.wait.poll_until(BackendKind::Cuda, what, || event.try_is_complete().map_err(driver_error(what)))
    }
}

impl Drop for CudaBackend {
    /// Where a wait ran past the limit, the stream may still be running that kernel, and unloading a module,
    /// destroying the cuBLAS handle or releasing the context would wait for it: everything that holds the device is
    /// left to the driver, which frees it when the process ends.
    fn drop(&mut self) {
        if self.wait.is_expired() {
            std::mem::forget(Arc::clone(&self.context));
            std::mem::forget(Arc::clone(&self.stream));
            std::mem::forget(Arc::clone(&self.modules));
            std::mem::forget(std::mem::take(self.functions.get_mut().unwrap_or_else(PoisonError::into_inner)));
            std::mem::forget(std::mem::take(self.faster_kernels.get_mut().unwrap_or_else(PoisonError::into_inner)));
            std::mem::forget(std::mem::take(&mut self.staging));
            std::mem::forget(std::mem::take(&mut self.lanes));
            std::mem::forget(std::mem::take(&mut self.blas));
        }
    }
}

/// NVRTC's version, `(0, 0)` where it cannot be read.
pub(crate) fn nvrtc_version() -> (i32, i32) {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: nvrtcVersion writes two ints through valid pointers; the NVRTC library was found before.
    match unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) } {
        cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS => (major, minor),
        _ => (0, 0),
    }
}

/// The driver's and NVRTC's versions, as one line: part of every compiled module's cache key, so that neither a new
/// driver nor a new compiler loads code the old one made.
fn toolchain() -> String {
    let mut driver = 0;
    // SAFETY: cuDriverGetVersion writes one int through a valid pointer; the driver library was found before.
    let driver_status = unsafe { sys::cuDriverGetVersion(&mut driver) };
    let (mut major, mut minor) = (0, 0);
    // SAFETY: nvrtcVersion writes two ints through valid pointers; the NVRTC library was found before.
    let nvrtc_status = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    format!("driver {driver} ({driver_status:?}), nvrtc {major}.{minor} ({nvrtc_status:?})")
}

fn describe(context: &Arc<CudaContext>) -> Result<DeviceInfo> {
    let name = context.name().map_err(driver_error("reading the device name"))?;
    let (major, minor) = context.compute_capability().map_err(driver_error("reading the compute capability"))?;
    let memory = context.total_mem().map_err(driver_error("reading the memory size"))?;
    let attribute = |a| context.attribute(a).map_err(driver_error("reading a device attribute"));
    let sms = attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    let max_grid_x = attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?;
    let max_shared = attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
    let l2 = attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?;
    let mut version = 0i32;
    // SAFETY: the driver library is loaded (the context exists) and `version` is a valid place for one int.
    let driver = match unsafe { sys::cuDriverGetVersion(&mut version) } {
        sys::CUresult::CUDA_SUCCESS => format!("CUDA driver {}.{}", version / 1000, (version % 1000) / 10),
        _ => "CUDA driver".to_owned(),
    };
    let integrated = attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED)? != 0;
    Ok(DeviceInfo {
        name,
        device_type: if integrated { DeviceType::IntegratedGpu } else { DeviceType::DiscreteGpu },
        driver: format!("{driver}, compute capability {major}.{minor}"),
        limits: vec![
            ("memory".into(), format!("{:.1} GiB", memory as f64 / (1u64 << 30) as f64)),
            ("multiprocessors".into(), sms.to_string()),
            ("max_grid_dim_x".into(), max_grid_x.to_string()),
            ("max_shared_memory_per_block".into(), format!("{} KiB", max_shared / 1024)),
            ("l2_cache".into(), format!("{} MiB", l2 / (1 << 20))),
        ],
    })
}

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn device(&self) -> &DeviceInfo {
        &self.device
    }

    fn synchronize(&self) -> Result<()> {
        self.wait_for_stream("synchronising the stream")
    }

    fn kernel_clock(&self) -> KernelClock {
        KernelClock::CudaEvents
    }

    fn device_memory(&self) -> Option<u64> {
        Some(self.memory_bytes)
    }

    fn cache_bytes(&self) -> Option<u64> {
        (self.l2_bytes > 0).then_some(self.l2_bytes)
    }

    /// Records an event before and after `work` on the backend's stream and returns the time between them.
    fn time_on_device(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        // Held until the end event: another thread's launch between the events would be timed as this work.
        let _window = self.hold_queue()?;
        let timed = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.stream.record_event(timed).map_err(driver_error("recording the start event"))?;
        work()?;
        let end = self.stream.record_event(timed).map_err(driver_error("recording the end event"))?;
        self.wait_for_event(&end, "waiting for the timed work")?;
        let ms = start.elapsed_ms(&end).map_err(driver_error("reading the events"))?;
        Ok(Duration::from_secs_f64(ms as f64 / 1e3))
    }

    fn copy_bandwidth(&self, bytes: usize) -> Result<f64> {
        let len = (bytes / 4).max(1);
        let source = self.zeros::<f32>(len)?;
        let mut target = self.zeros::<f32>(len)?;
        let mut samples = Vec::new();
        for i in 0..7 {
            let t = self.time_on_device(&mut || {
                self.stream.memcpy_dtod(&source, &mut target).map_err(driver_error("copying on the device"))
            })?;
            if i >= 2 {
                samples.push(t.as_secs_f64());
            }
        }
        samples.sort_by(f64::total_cmp);
        Ok(8.0 * len as f64 / samples[samples.len() / 2] / 1e9)
    }

    unsafe fn page_lock(&self, bytes: &[u8]) -> Result<Option<gpuworthy_core::backend::PageLock>> {
        // SAFETY: the caller keeps `bytes` allocated until the lock drops (this method's contract).
        unsafe { self.page_lock_host(bytes) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a machine without CUDA this must be an `Unavailable` error, never a panic; on a machine with CUDA, a
    /// backend that names its device.
    #[test]
    fn new_never_panics() {
        if let Some(cuda) = BackendKind::Cuda.opened_or_skipped(CudaBackend::new(0)) {
            assert!(!cuda.device().name.is_empty());
        }
    }

    #[test]
    fn a_device_that_does_not_exist_is_unavailable() {
        let err = CudaBackend::new(1 << 20).unwrap_err();
        assert!(err.is_unavailable(), "{err}");
    }

    /// Every block size the lesson sweeps gives the reference's answer, at a length that is not a multiple of any,
    /// and a block size the hardware cannot run is refused before a launch.
    #[test]
    fn elementwise_kernels_are_right_at_every_block_size() {
        use gpuworthy_core::workloads::{Len, Square};
        use gpuworthy_core::{Implements, Workload};
        let Some(cuda) = gpuworthy_core::BackendKind::Cuda.opened_or_skipped(CudaBackend::new(0)) else { return };
        let input = Square::generate(&Len((1 << 20) + 7), 3).unwrap();
        let expected = Square::reference(&input).unwrap();
        let mut cuda = cuda;
        for threads in [32, 64, 96, 128, 256, 512, 1024] {
            cuda = cuda.with_elementwise_block_size(threads).unwrap();
            for variant in ["naive", "vec4"] {
                let out = Implements::<Square>::run(&cuda, variant, &input).unwrap();
                assert_eq!(out, expected, "{variant} at {threads} threads per block");
            }
        }
        for bad in [0, 31, 48, 2048] {
            assert!(cuda.with_elementwise_block_size(bad).is_err(), "{bad}");
            cuda = CudaBackend::new(0).unwrap();
        }
    }

    /// The pipelined pinned path is exact at lengths around and between its chunks (1, a chunk less one, a chunk, a
    /// chunk and one, three chunks and a few), for f32 data both ways and for u32 results.
    #[test]
    fn pinned_transfers_are_exact_at_lengths_that_are_not_a_multiple_of_the_chunk() {
        use gpuworthy_core::workloads::{Len, Mandelbrot, MandelbrotParams, Square};
        use gpuworthy_core::{Implements, Workload};
        let Some(cuda) =
            gpuworthy_core::BackendKind::Cuda.opened_or_skipped(CudaBackend::with_host_memory(0, HostMemory::Pinned))
        else {
            return;
        };
        let chunk = memory::STAGING_CHUNK_BYTES / 4;
        for len in [1, chunk - 1, chunk, chunk + 1, 3 * chunk + 5] {
            let input = Square::generate(&Len(len), 7).unwrap();
            let expected = Square::reference(&input).unwrap();
            assert_eq!(Implements::<Square>::run(&cuda, "vec4", &input).unwrap(), expected, "square of {len}");
        }
        // 2100 x 2100 counts: a little over a chunk of u32s, through the download path.
        let params = MandelbrotParams::new(2100, 2100);
        let input = Mandelbrot::generate(&params, 1).unwrap();
        let expected = Mandelbrot::reference(&input).unwrap();
        let counts = Implements::<Mandelbrot>::run(&cuda, "naive", &input).unwrap();
        assert_eq!(counts.len(), expected.len());
        Mandelbrot::check(&input, &expected, &counts, gpuworthy_core::Precision::Fp32).unwrap();
    }
}
