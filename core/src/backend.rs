//! The backend traits: what every place that computes (CPU, CUDA, wgpu) offers.
//!
//! A backend runs a workload in the phases a GPU user pays for: [`Implements::upload`] (host to device),
//! [`Implements::launch`] (enqueue the kernel, no wait), [`Implements::download`] (device to host, which waits). Keeping
//! the phases apart lets the harness time transfers and kernels separately and keep data resident across launches.
//! Kernel compilation happens in [`Implements::prepare`], once per process and variant, so that first-call cost is
//! measured as its own phase and never inside a timed loop.
//!
//! Run-time choice of backend is a closed enum ([`BackendKind`], in its own module so that the error type can name a
//! backend without importing these traits) rather than trait objects: the traits have associated
//! types (the resident data) that trait objects cannot carry, and the set of backends is fixed.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::kind::BackendKind;
use crate::workload::{PartOutput, Precision, Workload};

impl BackendKind {
    /// The backends named in the environment variable `GPUWORTHY_REQUIRE` (comma-separated, e.g. `cpu,wgpu`).
    ///
    /// Tests skip a backend that is unavailable on this machine; a backend listed here turns that skip into a
    /// failure, so that a CI run cannot pass by skipping. An unknown name is an error, not silently ignored.
    ///
    /// ```
    /// # use gpuworthy_core::BackendKind;
    /// let required = BackendKind::parse_list("cpu, wgpu").unwrap();
    /// assert_eq!(required, vec![BackendKind::Cpu, BackendKind::Wgpu]);
    /// ```
    pub fn required_by_env() -> Result<Vec<BackendKind>> {
        const NAME: &str = "GPUWORTHY_REQUIRE";
        match crate::env::read(NAME)? {
            Some(list) => Self::parse_list(&list)
                .map_err(|_| crate::env::invalid_value(NAME, &list, "a comma-separated list of cpu, cuda, wgpu")),
            None => Ok(Vec::new()),
        }
    }

    /// For a test that needs this backend: the backend `opened` holds, or, where it could not open, `None` after a
    /// loud skip on standard error. The skip is a failure (a panic) where `GPUWORTHY_REQUIRE` lists this backend, where
    /// that variable is malformed, or where the backend failed for a reason other than being unavailable here, so
    /// that no test passes by not running.
    ///
    /// ```
    /// # use gpuworthy_core::{BackendKind, Error};
    /// let missing: Result<u32, Error> = Err(Error::Unavailable { backend: BackendKind::Cuda, reason: "no driver".into() });
    /// # if !BackendKind::required_by_env().unwrap().contains(&BackendKind::Cuda) {
    /// assert_eq!(BackendKind::Cuda.opened_or_skipped(missing), None);
    /// # }
    /// ```
    pub fn opened_or_skipped<B>(self, opened: Result<B>) -> Option<B> {
        let error = match opened {
            Ok(backend) => return Some(backend),
            Err(error) => error,
        };
        let required = Self::required_by_env().unwrap_or_else(|bad| panic!("{bad}"));
        assert!(error.is_unavailable(), "{self} failed to open: {error}");
        assert!(!required.contains(&self), "{self} is required by GPUWORTHY_REQUIRE but: {error}");
        eprintln!("SKIPPING {self}: {error}");
        None
    }

    /// Parses a comma-separated list of backend names; empty items are ignored.
    pub fn parse_list(list: &str) -> Result<Vec<BackendKind>> {
        list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::parse).collect()
    }
}

impl FromStr for BackendKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        BackendKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| Error::invalid(format!("unknown backend `{s}`: expected one of cpu, cuda, wgpu")))
    }
}

/// Which clock measured a kernel time, so that reports can say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelClock {
    /// The host's monotonic clock around synchronous work (the CPU backend: the work is the launch).
    HostWallClock,
    /// The host's clock around a launch followed by a full synchronisation: includes launch overhead. A GPU backend
    /// uses it only when its device has no timer.
    SynchronisedWallClock,
    /// CUDA events recorded on the backend's stream.
    CudaEvents,
    /// wgpu timestamp queries written at the start and end of the compute passes.
    TimestampQueries,
}

impl fmt::Display for KernelClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KernelClock::HostWallClock => "host wall clock",
            KernelClock::SynchronisedWallClock => "wall clock around a synchronised launch",
            KernelClock::CudaEvents => "CUDA events",
            KernelClock::TimestampQueries => "timestamp queries",
        })
    }
}

/// What kind of processor a backend's device is: a wgpu adapter may be a CPU (Mesa's lavapipe), and a report that
/// called it a GPU would mislead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceType {
    /// A CPU: the host itself, or a software implementation of a GPU API on it (lavapipe, SwiftShader, WARP).
    Cpu,
    /// A GPU with its own memory.
    DiscreteGpu,
    /// A GPU that shares the host's memory.
    IntegratedGpu,
    /// A virtualised GPU.
    VirtualGpu,
    /// The driver does not say.
    Unknown,
}

impl DeviceType {
    /// Whether this is a GPU (of any kind): what "send the work to the GPU" means.
    pub fn is_gpu(self) -> bool {
        matches!(self, DeviceType::DiscreteGpu | DeviceType::IntegratedGpu | DeviceType::VirtualGpu)
    }
}

/// What a backend says about the device it computes on, for reports and machine fingerprints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's name, e.g. `AMD EPYC 7B13` or `NVIDIA H200`.
    pub name: String,
    /// What kind of processor it is.
    pub device_type: DeviceType,
    /// The driver, API or instruction set in use, e.g. `AVX2+FMA, 16 threads` or `Vulkan, NVIDIA 580.65`.
    pub driver: String,
    /// Limits that matter for sizing work, as `(name, value)` pairs, e.g. `("max_storage_buffer_binding_size",
    /// "128 MiB")`.
    pub limits: Vec<(String, String)>,
}

impl DeviceInfo {
    /// How reports name a backend on this device: the backend's name, marked `(cpu)` when a GPU backend runs on a CPU
    /// adapter (`wgpu(cpu)` on lavapipe), so that no table calls a CPU a GPU.
    pub fn label(&self, kind: BackendKind) -> String {
        if kind.is_gpu() && self.device_type == DeviceType::Cpu { format!("{kind}(cpu)") } else { kind.to_string() }
    }
}

/// A place that computes: its identity, synchronisation and timer.
pub trait Backend: Send + Sync {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;

    /// The device this backend computes on.
    fn device(&self) -> &DeviceInfo;

    /// Waits until all work enqueued so far has finished. Called before every host clock read.
    fn synchronize(&self) -> Result<()>;

    /// The clock [`Backend::time_on_device`] uses.
    fn kernel_clock(&self) -> KernelClock;

    /// Runs `work` (which enqueues launches), waits for it, and returns the time the device spent on it as measured by
    /// [`Backend::kernel_clock`].
    fn time_on_device(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration>;

    /// The device's memory in bytes, where inputs must fit beside their outputs; `None` for the CPU (whose memory the
    /// generators check) and where the driver does not say.
    fn device_memory(&self) -> Option<u64> {
        None
    }

    /// The bytes of the device's last-level cache, where the driver says (a GPU's L2; `None` by default): a kernel
    /// whose data is larger streams from memory on every run.
    fn cache_bytes(&self) -> Option<u64> {
        None
    }

    /// The device's measured memory bandwidth, in decimal GB/s counting bytes read plus bytes written: the median of
    /// a few copies of `bytes` bytes from one device buffer to another (the CPU: from one vector to another on every
    /// thread). The "peak" that memory-bound kernels are compared with.
    fn copy_bandwidth(&self, bytes: usize) -> Result<f64>;

    /// Page-locks the host memory `bytes` in place for this backend's copies (and its other devices'), as PyTorch's
    /// `pin_memory()` makes a tensor page-locked: copies to and from it then go straight between the device and that
    /// memory, with no staging copy on the cores. `Ok(None)` where the backend has no such copies (the default), or
    /// where the memory was page-locked already. Page-locking costs milliseconds per hundred MiB, so a caller locks
    /// memory it keeps, once.
    ///
    /// # Safety
    ///
    /// `bytes` must stay allocated, at the same address, until the returned lock is dropped: the system keeps the
    /// pages locked until then, and memory freed while locked would leave the device copying into pages that are no
    /// longer the caller's.
    unsafe fn page_lock(&self, bytes: &[u8]) -> Result<Option<PageLock>> {
        let _ = bytes;
        Ok(None)
    }
}

/// Host memory page-locked in place ([`Backend::page_lock`]): unlocked when dropped.
pub struct PageLock {
    unlock: Option<Box<dyn FnOnce() + Send + Sync>>,
    bytes: usize,
}

impl PageLock {
    /// A lock that runs `unlock` when dropped, over `bytes` bytes.
    pub fn new(bytes: usize, unlock: impl FnOnce() + Send + Sync + 'static) -> PageLock {
        PageLock { unlock: Some(Box::new(unlock)), bytes }
    }

    /// The bytes it keeps locked.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl fmt::Debug for PageLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PageLock({} bytes)", self.bytes)
    }
}

impl Drop for PageLock {
    fn drop(&mut self) {
        if let Some(unlock) = self.unlock.take() {
            unlock();
        }
    }
}

/// Times synchronous work with the host clock: the [`Backend::time_on_device`] of a backend whose launches complete
/// before they return.
pub fn time_synchronous(work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
    let start = Instant::now();
    work()?;
    Ok(start.elapsed())
}

/// The most launches a caller puts in one [`Backend::time_on_device`] window; every backend accepts at least this
/// many (a wgpu window holds 256 compute passes, one per launch).
pub const MAX_LAUNCHES_PER_TIMING: usize = 64;

/// Keeps `backend` busy with back-to-back calls of `launch` for `duration` of wall time (at least one call), then
/// synchronises: it brings a GPU that has been idle back to its working clocks before something is timed on it.
///
/// The device must be kept busy without gaps, or its clock governor sees an idle device: launches are queued in
/// batches of about 5 ms of device time (sized from the first call, timed on the device) with a synchronisation
/// after each batch, so the queue never runs far past `duration` either. Returns what one call takes: the device time
/// of that first call, or where the batches after it ran faster per call (wall clock, synchronised, which bounds the
/// device's time from above), theirs. A first call slowed by something else (a thread preempted, a page fault) would
/// otherwise size every batch timed after it ([`launches_per`]) as if each launch took that long: batches of one
/// launch, each timed with the launch's host latency inside the window, several times a kernel of a few microseconds.
pub fn spin_up<B: Backend + ?Sized>(
    backend: &B,
    duration: Duration,
    launch: &mut dyn FnMut() -> Result<()>,
) -> Result<Duration> {
    let started = Instant::now();
    let one = backend.time_on_device(launch)?;
    let batch = launches_per(Duration::from_millis(5), one, 1000);
    let (batches_started, mut launched) = (Instant::now(), 0u32);
    while started.elapsed() < duration {
        for _ in 0..batch {
            launch()?;
        }
        backend.synchronize()?;
        launched = launched.saturating_add(batch as u32);
    }
    Ok(match launched {
        0 => one,
        launched => one.min(batches_started.elapsed() / launched),
    })
}

/// How many launches taking `one` each fill about `span` of device time: at least 1, at most `most`.
pub fn launches_per(span: Duration, one: Duration, most: usize) -> usize {
    (span.as_secs_f64() / one.as_secs_f64().max(1e-6)).clamp(1.0, most as f64) as usize
}

/// Serialises the use of one device queue between threads, so that a backend shared by threads times only the work of
/// the thread that asked.
///
/// A device timer measures everything its queue runs between two marks (CUDA events on a stream), or marks passes as
/// they are encoded (wgpu timestamp queries, with one query set per backend). When another thread's launch or copy
/// is enqueued inside a timing window, the window measures it too, or loses its marks. So a timing window holds this
/// lock from its first mark until its result is read, and every launch, upload and download holds it while it
/// enqueues. The lock is reentrant: the thread that holds a window launches inside it.
///
/// ```
/// use gpuworthy_core::QueueLock;
/// let lock = QueueLock::default();
/// let window = lock.hold();
/// let launch = lock.hold(); // the same thread may enqueue inside its own window
/// drop((launch, window));
/// ```
#[derive(Debug, Default)]
pub struct QueueLock {
    /// The thread holding the lock and how many times it holds it.
    holder: Mutex<Option<(ThreadId, usize)>>,
    released: Condvar,
}

/// Holds a [`QueueLock`] until dropped.
#[derive(Debug)]
#[must_use = "the lock is released when the guard is dropped"]
pub struct QueueGuard<'a> {
    lock: &'a QueueLock,
}

impl QueueLock {
    fn state(&self) -> MutexGuard<'_, Option<(ThreadId, usize)>> {
        self.holder.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until no other thread holds the lock, then holds it (again, if this thread already does).
    pub fn hold(&self) -> QueueGuard<'_> {
        let me = std::thread::current().id();
        let mut holder = self.state();
        loop {
            match &mut *holder {
                None => {
                    *holder = Some((me, 1));
                    break;
                }
                Some((owner, depth)) if *owner == me => {
                    *depth += 1;
                    break;
                }
                Some(_) => holder = self.released.wait(holder).unwrap_or_else(PoisonError::into_inner),
            }
        }
        QueueGuard { lock: self }
    }
}

impl Drop for QueueGuard<'_> {
    fn drop(&mut self) {
        let mut holder = self.lock.state();
        if let Some((_, depth)) = &mut *holder {
            *depth -= 1;
            if *depth == 0 {
                *holder = None;
                self.lock.released.notify_all();
            }
        }
    }
}

/// A backend's implementation of workload `W`, split into the phases a GPU user pays for.
///
/// `launch` may be called many times on one resident value (benchmarks do); [`Implements::download`] returns the
/// result of the last launch. Validate with one launch per upload: a second launch of an in-place workload (saxpy)
/// applies it twice.
pub trait Implements<W: Workload>: Backend {
    /// The inputs and outputs where the backend computes (device buffers, or host vectors on the CPU).
    type Resident: Send;

    /// The variants this backend offers for `W` on this device, in ladder order (naive first). A variant that is not
    /// written, or that this device cannot run, is absent.
    fn variants(&self) -> Vec<&'static str>;

    /// The arithmetic precision a variant computes in; reduced-precision variants are checked at a looser tolerance
    /// and labelled in every report.
    fn precision(&self, variant: &str) -> Precision {
        let _ = variant;
        Precision::Fp32
    }

    /// Whether this backend can take an input of this shape at all, answered before any data is made: an error names
    /// the device limit it would exceed ([`Error::TooLarge`]). The default compares the input and output's bytes with
    /// [`Backend::device_memory`]; backends with further limits (bindings, grids) add theirs.
    fn check_size(&self, params: &W::Params) -> Result<()> {
        match self.device_memory() {
            Some(bytes) => crate::memory::check_device_memory::<W>(params, bytes, &self.device().name),
            None => Ok(()),
        }
    }

    /// The variant to use when the caller does not choose one, for an input of `params`: a documented rule, per
    /// backend, of which full-precision variant measured fastest at this size on the project's reference machines
    /// (`docs/results/`). A rule, not a measurement: to measure on this machine, time each of
    /// [`Implements::variants`].
    fn best_variant(&self, params: &W::Params) -> &'static str;

    /// Does the first-use work of a variant (compiling its kernel, building its pipeline) and caches it. Cheap when
    /// already done. [`Implements::launch`] calls it too, so calling it first only moves the cost out of the launch.
    fn prepare(&self, variant: &str) -> Result<()>;

    /// [`Implements::prepare`] for inputs of `params`: where the kernel depends on the input itself (an expression's
    /// program is compiled for that program), this compiles it, so that the harness reports compilation as a phase of
    /// its own and not inside the first upload. The default is [`Implements::prepare`].
    fn prepare_for(&self, variant: &str, params: &W::Params) -> Result<()> {
        let _ = params;
        self.prepare(variant)
    }

    /// Makes ready the kernel that runs inputs of `params` from now on. A backend may answer a kernel's first calls
    /// with a shape that compiles sooner while a faster one compiles on a thread of its own (CUDA does for expressions
    /// that call special functions): this waits for that one, or compiles it directly where nothing started it. A
    /// harness calls it after the first call, so that what it times next is what runs from then on; a caller that
    /// times a kernel at once calls it instead of [`Implements::prepare_for`], and saves compiling the first-call
    /// shape. The default is [`Implements::prepare_for`].
    fn settle(&self, variant: &str, params: &W::Params) -> Result<()> {
        self.prepare_for(variant, params)
    }

    /// Validates the input and copies it to where the backend computes.
    fn upload(&self, input: &W::Input) -> Result<Self::Resident>;

    /// Enqueues one run of `variant` on resident data. May return before the work finishes.
    fn launch(&self, variant: &str, resident: &mut Self::Resident) -> Result<()>;

    /// Waits for the work and copies the output back to the host.
    fn download(&self, resident: &mut Self::Resident) -> Result<W::Output>;

    /// Upload, one launch and download: the whole job for one input.
    fn run(&self, variant: &str, input: &W::Input) -> Result<W::Output> {
        let mut resident = self.upload(input)?;
        self.launch(variant, &mut resident)?;
        self.download(&mut resident)
    }

    /// [`Implements::run`] with the result written into `output`, a result the caller keeps from one call to the next
    /// (as NumPy's, CuPy's and PyTorch's `out=`): its old contents never matter, and on return it holds this input's
    /// result, whatever its length was before.
    ///
    /// A backend that can write into the caller's memory in place does so where `output` already has the result's
    /// length, and saves allocating a fresh output and having the system map its pages in, which for a result of
    /// hundreds of MiB costs more than copying it (CUDA's pipelined path). The default runs [`Implements::run`] and
    /// moves its result into `output`.
    fn run_into(&self, variant: &str, input: &W::Input, output: &mut W::Output) -> Result<()> {
        *output = self.run(variant, input)?;
        Ok(())
    }

    /// Runs `variant` on the units `units` of `input` (a member's part of a group's run) and writes the part's output
    /// into `output`, its place in the group's whole output ([`crate::InPlace`]). A backend that reads the caller's
    /// arrays where they lie and writes into `output` directly overrides it (the CPU's and CUDA's elementwise work),
    /// saving the cut's copy and the join's; the default cuts the part, runs it and copies its output in.
    fn run_part(
        &self,
        variant: &str,
        input: &W::Input,
        units: Range<usize>,
        output: &mut PartOutput<'_>,
    ) -> Result<()> {
        run_part_by_cut(self, variant, input, units, output)
    }

    /// Whether [`Implements::run_part`] of `variant` at `params` reads the part where it lies and writes its output
    /// in place, with no copy on the host; `false` for the default, which cuts the part and copies its output in.
    /// The cost model charges a group's member the host's copies where this is `false`.
    fn reads_parts_in_place(&self, variant: &str, params: &W::Params) -> bool {
        let _ = (variant, params);
        false
    }

    /// Waits for the work on `resident`, a group member's part of `input` (its `units`, as uploaded), and copies its
    /// output into `output`, its place in the group's whole output ([`crate::InPlace`]). A backend that copies from
    /// the device straight into the place overrides it (CUDA's elementwise work, matmul and the stencil); the default
    /// downloads the part's output and copies it in.
    fn download_part(
        &self,
        resident: &mut Self::Resident,
        input: &W::Input,
        units: Range<usize>,
        output: &mut PartOutput<'_>,
    ) -> Result<()> {
        download_part_by_copy(self, resident, input, units, output)
    }

    /// The error for a variant name this backend does not offer.
    fn unknown_variant(&self, variant: &str) -> Error {
        Error::UnknownVariant {
            backend: self.kind(),
            workload: W::NAME,
            variant: variant.to_owned(),
            available: self.variants(),
        }
    }
}

/// [`Implements::run_part`]'s default, for a backend that overrides it for some inputs only: the part cut from
/// `input` ([`crate::Sharding::cut`]), run, and its output copied into `output` ([`crate::InPlace::fill`]).
pub fn run_part_by_cut<W: Workload, B: Implements<W> + ?Sized>(
    backend: &B,
    variant: &str,
    input: &W::Input,
    units: Range<usize>,
    output: &mut PartOutput<'_>,
) -> Result<()> {
    let (sharding, in_place) = written_in_place::<W>()?;
    let part = (sharding.cut)(input, units.clone());
    let part_output = backend.run(variant, &part)?;
    (in_place.fill)(input, units, &part_output, output)
}

/// `W`'s sharding and its [`crate::InPlace`], or an error saying which of the two it lacks.
fn written_in_place<W: Workload>() -> Result<(crate::Sharding<W>, crate::InPlace<W>)> {
    let mut sharding = W::sharding().ok_or_else(|| Error::invalid(format!("{} does not split", W::NAME)))?;
    let in_place = sharding
        .in_place
        .take()
        .ok_or_else(|| Error::invalid(format!("{}'s parts are joined, not written in place", W::NAME)))?;
    Ok((sharding, in_place))
}

/// [`Implements::download_part`]'s default, for a backend that overrides it for some data only: the part's output
/// downloaded ([`Implements::download`]) and copied into `output` ([`crate::InPlace::fill`]).
pub fn download_part_by_copy<W: Workload, B: Implements<W> + ?Sized>(
    backend: &B,
    resident: &mut B::Resident,
    input: &W::Input,
    units: Range<usize>,
    output: &mut PartOutput<'_>,
) -> Result<()> {
    let (_, in_place) = written_in_place::<W>()?;
    let part_output = backend.download(resident)?;
    (in_place.fill)(input, units, &part_output, output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_lock_keeps_other_threads_out_of_a_window() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let lock = Arc::new(QueueLock::default());
        let in_window = Arc::new(AtomicBool::new(false));
        let window = lock.hold();
        in_window.store(true, Ordering::SeqCst);
        let other = {
            let (lock, in_window) = (Arc::clone(&lock), Arc::clone(&in_window));
            std::thread::spawn(move || {
                let _launch = lock.hold();
                assert!(!in_window.load(Ordering::SeqCst), "another thread enqueued inside an open window");
            })
        };
        {
            let _nested = lock.hold(); // reentrant for the window's own launches
        }
        std::thread::sleep(Duration::from_millis(50));
        in_window.store(false, Ordering::SeqCst);
        drop(window);
        other.join().unwrap();
    }

    #[test]
    fn backend_names_round_trip() {
        for kind in BackendKind::ALL {
            assert_eq!(kind.name().parse::<BackendKind>().unwrap(), kind);
            assert_eq!(kind.to_string(), kind.name());
        }
        assert_eq!("  WGPU ".parse::<BackendKind>().unwrap(), BackendKind::Wgpu);
    }

    #[test]
    fn unknown_backend_is_named_in_the_error() {
        let err = "metal".parse::<BackendKind>().unwrap_err();
        assert!(err.to_string().contains("metal"), "{err}");
    }

    #[test]
    fn a_bad_required_list_is_an_error_naming_the_variable_not_a_panic() {
        let before = std::env::var("GPUWORTHY_REQUIRE").ok();
        // SAFETY: no other test of this crate reads GPUWORTHY_REQUIRE; it is restored below.
        unsafe { std::env::set_var("GPUWORTHY_REQUIRE", "cpu,bogus") };
        let result = BackendKind::required_by_env();
        // SAFETY: as above.
        unsafe {
            match &before {
                Some(value) => std::env::set_var("GPUWORTHY_REQUIRE", value),
                None => std::env::remove_var("GPUWORTHY_REQUIRE"),
            }
        }
        let err = result.unwrap_err().to_string();
        assert!(err.contains("GPUWORTHY_REQUIRE=cpu,bogus") && err.contains("cpu, cuda, wgpu"), "{err}");
    }

    #[test]
    fn required_list_parses_and_rejects_unknown_names() {
        assert_eq!(BackendKind::parse_list("").unwrap(), vec![]);
        assert_eq!(BackendKind::parse_list("cuda,cpu,").unwrap(), vec![BackendKind::Cuda, BackendKind::Cpu]);
        assert!(BackendKind::parse_list("cpu,opencl").is_err());
    }
}
