//! The run-time [`Device`]: one value, chosen while the program runs, that every workload's phases take.
//!
//! The backends are separate types (`CpuBackend`, `CudaBackend`, `WgpuBackend`), each implementing
//! [`Implements<W>`] for every workload `W`, with the resident data as an associated type. That is what the harness
//! needs to time a kernel without a virtual call in the loop, but a program that picks its backend at run time
//! ("CUDA if there is one, else wgpu, else the CPU") would have to name all three types and write the fallback by
//! hand. [`Device`] is that choice made once: an enum over the backends this build has (the cargo features `cuda` and
//! `wgpu`), with the same phases as `Implements<W>` for every workload, the resident data type-erased into a
//! [`Resident<W>`]. Like candle's `Device`, it is cheap to clone and to share between threads (the backends inside
//! are behind an `Arc`).
//!
//! A workload says which backends implement it ([`DeviceWorkload`]): the eight built-in ones run on every backend,
//! and a workload defined in another crate implements the backends it can. On a backend it lacks, every phase returns
//! [`Error::Unsupported`] naming the workload and the backend, as candle's custom ops answer "no cuda
//! implementation": never a compile error in the user's crate, never a panic.
//!
//! This folder holds what runs work: the device (this module), its description ([`spec`]), its host memory
//! ([`host_memory`]), the machine's list of devices ([`listing`]), the workloads a device implements
//! ([`device_workload`], [`erased`]), the built-in workloads by name ([`dispatch`]) and data from other libraries
//! ([`foreign`]), and one computation over several devices: in one process ([`group`]) or a process per device
//! ([`rank`]). It stands on [`crate::measure`] only.

pub mod collective;
pub mod device_workload;
pub mod dispatch;
pub mod erased;
pub mod foreign;
pub mod group;
pub mod host_memory;
pub mod listing;
pub mod rank;
pub mod spec;

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use gpuworthy_core::{Backend, BackendKind, DeviceInfo, Error, Implements, KernelClock, Precision, Result, Workload};
use gpuworthy_cpu::CpuBackend;
#[cfg(feature = "cuda")]
use gpuworthy_cuda::CudaBackend;
#[cfg(feature = "wgpu")]
use gpuworthy_wgpu::{AdapterChoice, WgpuBackend};

use serde::{Deserialize, Serialize};

pub use crate::device::device_workload::{DeviceWorkload, NO_VARIANT};
use crate::device::erased::ErasedImplements;
use crate::device::spec::DeviceSpec;
use crate::measure::{CheckResult, ClockComparison, MeasureOptions, Measurement, Stats};

/// A place that computes, chosen at run time: one of the backends this build has.
///
/// Open one with [`Device::open`], [`Device::from_env`] or [`Device::best_available`]; then every workload runs on
/// it through the same phases as [`Implements`] (`run`, `upload`, `launch`, `download`, `variants`, `best_variant`,
/// `prepare`, `check_size`), with the workload as a type parameter:
///
/// ```
/// use gpuworthy::Device;
/// use gpuworthy::core::{Workload, workloads::{Shape2, Softmax}};
///
/// let device = Device::cpu()?;
/// let input = Softmax::generate(&Shape2::new(4, 1000), 1)?;
/// let variant = device.best_variant::<Softmax>(&Shape2::new(4, 1000));
/// let mut resident = device.upload::<Softmax>(&input)?;   // data stays on the device
/// for _ in 0..3 {
///     device.launch(variant, &mut resident)?;
/// }
/// let rows = device.download(&mut resident)?;
/// assert_eq!(rows.len(), 4000);
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
///
/// A `Device` is itself a [`Backend`] and an [`Implements<W>`] for every workload, so generic code written for one
/// backend type (the harness's [`measure`](crate::measure::measure), the conformance tests) takes it too.
#[derive(Clone)]
#[non_exhaustive]
pub enum Device {
    /// The host CPU.
    Cpu(Arc<CpuBackend>),
    /// An NVIDIA GPU through CUDA.
    #[cfg(feature = "cuda")]
    Cuda(Arc<CudaBackend>),
    /// A GPU (or a CPU adapter such as lavapipe) through wgpu.
    #[cfg(feature = "wgpu")]
    Wgpu(Arc<WgpuBackend>),
}

/// How reports, rows and the cost model name a device: its backend (`cpu`, `cuda`, `wgpu`), or `wgpu(cpu)` for a
/// wgpu adapter that runs on a CPU. A type of its own, so that a row, a model's device and an opened [`Device`] are
/// matched by label and not by comparing arbitrary strings; written as its text in JSON.
///
/// ```
/// use gpuworthy::device::DeviceLabel;
/// let cpu = gpuworthy::Device::cpu()?.label();
/// assert_eq!(cpu, DeviceLabel::of(gpuworthy::core::BackendKind::Cpu));
/// assert_eq!(cpu.to_string(), "cpu");
/// # Ok::<(), gpuworthy::core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DeviceLabel(String);

impl DeviceLabel {
    /// The label of a device that is what its backend is written for (a CPU for `cpu`, a GPU for `cuda` and `wgpu`).
    pub fn of(kind: BackendKind) -> DeviceLabel {
        DeviceLabel(kind.name().to_owned())
    }

    /// A label as written, for models and rows made by hand (tests, worked examples).
    pub fn named(text: &str) -> DeviceLabel {
        DeviceLabel(text.to_owned())
    }

    /// The label's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DeviceLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

/// The devices a caller asked for that opened, and the reasons the others did not.
#[derive(Debug, Default)]
pub struct OpenedDevices {
    /// The devices that opened, in the order asked.
    pub devices: Vec<Device>,
    /// The devices that could not be opened here, with the reason.
    pub unavailable: Vec<(DeviceSpec, Error)>,
}

impl Device {
    /// Opens the device `spec` names (a [`DeviceSpec`], or a [`BackendKind`] for its first device).
    ///
    /// Returns [`Error::Unavailable`] with the reason when the device cannot run here, and [`Error::NotCompiled`]
    /// when its backend was left out of this build.
    pub fn open(spec: impl Into<DeviceSpec>) -> Result<Device> {
        match spec.into() {
            DeviceSpec::Cpu => Device::cpu(),
            DeviceSpec::Cuda { ordinal } => Device::cuda(ordinal),
            DeviceSpec::Wgpu { adapter } => Device::wgpu(adapter.as_deref()),
        }
    }

    /// The host CPU. Fails only on a bad `GPUWORTHY_CPU_SIMD`.
    pub fn cpu() -> Result<Device> {
        CpuBackend::new().map(|b| Device::Cpu(Arc::new(b)))
    }

    /// The CUDA device of this ordinal (0 is the first GPU), moving data through pageable host memory.
    pub fn cuda(ordinal: usize) -> Result<Device> {
        #[cfg(feature = "cuda")]
        return CudaBackend::new(ordinal).map(Device::from);
        #[cfg(not(feature = "cuda"))]
        {
            let _ = ordinal;
            Err(Error::NotCompiled { backend: BackendKind::Cuda, feature: "cuda" })
        }
    }

    /// This device with `threads` threads per block (CUDA) or invocations per workgroup (wgpu) for the elementwise
    /// kernels, `square` and `saxpy`: the block-size lesson. The CPU has no such setting, and a device already shared
    /// (cloned) cannot be changed: both are [`Error::InvalidInput`], as is a size the device cannot run.
    pub fn with_elementwise_block_size(self, threads: u32) -> Result<Device> {
        let label = self.label();
        let shared = || Error::invalid(format!("{label} is shared, so its block size cannot change: open it afresh"));
        // Built with neither GPU backend, only the CPU's arm is left, which needs neither.
        #[cfg(not(any(feature = "cuda", feature = "wgpu")))]
        let _ = (threads, &shared);
        match self {
            Device::Cpu(_) => Err(Error::invalid(format!("{label} has no block size: it runs on CPU threads"))),
            #[cfg(feature = "cuda")]
            Device::Cuda(backend) => {
                Ok(Device::from(Arc::try_unwrap(backend).map_err(|_| shared())?.with_elementwise_block_size(threads)?))
            }
            #[cfg(feature = "wgpu")]
            Device::Wgpu(backend) => Ok(Device::from(
                Arc::try_unwrap(backend).map_err(|_| shared())?.with_elementwise_workgroup_size(threads)?,
            )),
        }
    }

    /// A wgpu adapter: the one `adapter` names (as in [`DeviceSpec::Wgpu`]), or when `None` the one
    /// `GPUWORTHY_WGPU_ADAPTER` names, else the best (discrete GPU, integrated, virtual, CPU).
    pub fn wgpu(adapter: Option<&str>) -> Result<Device> {
        #[cfg(feature = "wgpu")]
        {
            let backend = match adapter {
                Some(text) => WgpuBackend::with_adapter(
                    &text.parse().unwrap_or_else(|never: std::convert::Infallible| match never {}),
                )?,
                None => WgpuBackend::with_adapter(&AdapterChoice::from_env()?)?,
            };
            Ok(Device::from(backend))
        }
        #[cfg(not(feature = "wgpu"))]
        {
            let _ = adapter;
            Err(Error::NotCompiled { backend: BackendKind::Wgpu, feature: "wgpu" })
        }
    }

    /// The device `GPUWORTHY_BACKEND` names ([`DeviceSpec`]'s forms), or [`Device::best_available`] when it is unset
    /// or `auto` (a program that wants each call placed by the cost model uses [`crate::choose::auto`] instead).
    /// An unknown value is an error naming the valid ones; a device that cannot run here is [`Error::Unavailable`]
    /// (no fallback: the caller asked for it).
    pub fn from_env() -> Result<Device> {
        match DeviceSpec::from_env()? {
            Some(spec) => Device::open(spec),
            None => Device::best_available(),
        }
    }

    /// A GPU if one is usable (CUDA device 0, then the best wgpu adapter that is a GPU), else the CPU. A wgpu adapter
    /// that runs on the CPU (lavapipe) is not a GPU for this purpose. Errors other than "unavailable here" (a bad
    /// environment variable) are returned, not skipped.
    pub fn best_available() -> Result<Device> {
        let gpus = [DeviceSpec::Cuda { ordinal: 0 }, DeviceSpec::Wgpu { adapter: None }];
        for spec in gpus {
            match Device::open(spec) {
                Ok(device) if device.is_gpu() => return Ok(device),
                Ok(_) => {}
                Err(e) if e.is_unavailable() => {}
                Err(e) => return Err(e),
            }
        }
        Device::cpu()
    }

    /// Every backend's first device that opens here (the CPU, CUDA device 0, the wgpu adapter), and why the others
    /// do not: for code that compares backends.
    pub fn all_available() -> OpenedDevices {
        Device::open_each(BackendKind::ALL.map(DeviceSpec::from))
    }

    /// Opens each of `specs`, recording why any cannot run here.
    pub fn open_each(specs: impl IntoIterator<Item = DeviceSpec>) -> OpenedDevices {
        let mut opened = OpenedDevices::default();
        for spec in specs {
            match Device::open(spec.clone()) {
                Ok(device) => opened.devices.push(device),
                Err(e) => opened.unavailable.push((spec, e)),
            }
        }
        opened
    }

    /// The backend inside, as a [`Backend`].
    pub fn backend(&self) -> &dyn Backend {
        match self {
            Device::Cpu(b) => &**b,
            #[cfg(feature = "cuda")]
            Device::Cuda(b) => &**b,
            #[cfg(feature = "wgpu")]
            Device::Wgpu(b) => &**b,
        }
    }

    /// Calls `code` with the backend inside, as its own type: for generic code that must not pay a dynamic dispatch
    /// per call (the criterion benches time sub-microsecond CPU kernels), yet should not name the backends.
    pub fn with_backend<C: WithBackend>(&self, code: C) -> C::Output {
        match self {
            Device::Cpu(b) => code.call(b),
            #[cfg(feature = "cuda")]
            Device::Cuda(b) => code.call(b),
            #[cfg(feature = "wgpu")]
            Device::Wgpu(b) => code.call(b),
        }
    }

    /// Whether this device is a GPU: false for the CPU and for a wgpu adapter that runs on the CPU.
    pub fn is_gpu(&self) -> bool {
        self.device().device_type.is_gpu()
    }

    /// How reports name this device's backend: `cpu`, `cuda`, `wgpu`, or `wgpu(cpu)` for a CPU adapter.
    pub fn label(&self) -> DeviceLabel {
        DeviceLabel(self.device().label(self.kind()))
    }

    /// Whether `other` is this very device (the same opened backend), not merely one of the same kind.
    pub fn same_device(&self, other: &Device) -> bool {
        match (self, other) {
            (Device::Cpu(a), Device::Cpu(b)) => Arc::ptr_eq(a, b),
            #[cfg(feature = "cuda")]
            (Device::Cuda(a), Device::Cuda(b)) => Arc::ptr_eq(a, b),
            #[cfg(feature = "wgpu")]
            (Device::Wgpu(a), Device::Wgpu(b)) => Arc::ptr_eq(a, b),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// The variants this device offers for `W`, in ladder order (naive first).
    pub fn variants<W: DeviceWorkload>(&self) -> Vec<&'static str> {
        self.implementation::<W>().map_or_else(|_| Vec::new(), |i| i.variants())
    }

    /// Whether this device's backend implements `W` ([`DeviceWorkload`]): where it does not, every phase returns
    /// [`Error::Unsupported`] and [`Device::variants`] is empty.
    pub fn supports<W: DeviceWorkload>(&self) -> bool {
        self.implementation::<W>().is_ok()
    }

    /// This device's backend seen as an implementation of `W`, or [`Error::Unsupported`] naming both.
    pub fn implementation<W: DeviceWorkload>(&self) -> Result<&dyn ErasedImplements<W>> {
        let found = match self {
            Device::Cpu(b) => W::on_cpu(b),
            #[cfg(feature = "cuda")]
            Device::Cuda(b) => W::on_cuda(b),
            #[cfg(feature = "wgpu")]
            Device::Wgpu(b) => W::on_wgpu(b),
        };
        found.ok_or_else(|| Error::unsupported(self.kind(), W::NAME))
    }

    /// The variant to use for an input of `params` when the caller does not choose: each backend's documented rule
    /// ([`Implements::best_variant`]), full precision only. [`Device::fastest_variant`] measures instead.
    ///
    /// On a backend that does not implement `W` it is [`NO_VARIANT`], which every phase refuses as
    /// [`Error::Unsupported`].
    pub fn best_variant<W: DeviceWorkload>(&self, params: &W::Params) -> &'static str {
        self.implementation::<W>().map_or(NO_VARIANT, |i| i.best_variant(params))
    }

    /// The arithmetic precision `variant` computes in.
    pub fn precision<W: DeviceWorkload>(&self, variant: &str) -> Precision {
        self.implementation::<W>().map_or(Precision::Fp32, |i| i.precision(variant))
    }

    /// Whether this device can take an input of this shape, answered before any data is made.
    pub fn check_size<W: DeviceWorkload>(&self, params: &W::Params) -> Result<()> {
        self.implementation::<W>()?.check_size(params)
    }

    /// Compiles `variant`'s kernel (or builds its pipeline) now, so the first launch does not pay for it.
    pub fn prepare<W: DeviceWorkload>(&self, variant: &str) -> Result<()> {
        self.implementation::<W>()?.prepare(variant)
    }

    /// [`Device::prepare`] for inputs of `params`: for a workload whose kernel depends on its input (an expression),
    /// compiles that kernel now.
    pub fn prepare_for<W: DeviceWorkload>(&self, variant: &str, params: &W::Params) -> Result<()> {
        self.implementation::<W>()?.prepare_for(variant, params)
    }

    /// Makes ready the kernel that runs inputs of `params` from now on: waits for what [`Device::prepare_for`] left
    /// compiling in the background (a faster kernel, where the first calls run one that compiled sooner), or compiles
    /// it now, so that a measurement from here on times the kernel that runs from then on.
    pub fn settle<W: DeviceWorkload>(&self, variant: &str, params: &W::Params) -> Result<()> {
        self.implementation::<W>()?.settle(variant, params)
    }

    /// Validates `input` and copies it to the device, where it stays until the [`Resident`] is dropped.
    pub fn upload<W: DeviceWorkload>(&self, input: &W::Input) -> Result<Resident<W>> {
        Ok(Resident { device: self.clone(), data: self.implementation::<W>()?.upload(input)?, workload: PhantomData })
    }

    /// Enqueues one run of `variant` on data uploaded to this device. May return before the work finishes.
    pub fn launch<W: DeviceWorkload>(&self, variant: &str, resident: &mut Resident<W>) -> Result<()> {
        self.owns(resident)?;
        self.implementation::<W>()?.launch(variant, &mut *resident.data)
    }

    /// Waits for the work on `resident` and copies the output of its last launch back to the host.
    pub fn download<W: DeviceWorkload>(&self, resident: &mut Resident<W>) -> Result<W::Output> {
        self.owns(resident)?;
        self.implementation::<W>()?.download(&mut *resident.data)
    }

    /// [`Device::download`] of a group member's part of `input` (its `units`) into `output`, its place in the group's
    /// whole output ([`gpuworthy_core::InPlace`]).
    pub fn download_part<W: DeviceWorkload>(
        &self,
        resident: &mut Resident<W>,
        input: &W::Input,
        units: std::ops::Range<usize>,
        output: &mut gpuworthy_core::PartOutput<'_>,
    ) -> Result<()> {
        self.owns(resident)?;
        self.implementation::<W>()?.download_part(&mut *resident.data, input, units, output)
    }

    /// Upload, one launch of `variant`, download: the whole job for one input.
    pub fn run<W: DeviceWorkload>(&self, variant: &str, input: &W::Input) -> Result<W::Output> {
        self.implementation::<W>()?.run(variant, input)
    }

    /// [`Device::run`] with the result written into `output`, a previous result kept for reuse
    /// ([`Implements::run_into`]): CUDA's pipelined path writes into it in place where its length is the result's.
    ///
    /// ```
    /// use gpuworthy::Device;
    /// use gpuworthy::core::{Workload, workloads::{Len, Square}};
    ///
    /// let device = Device::cpu()?;
    /// let variant = device.best_variant::<Square>(&Len(1000));
    /// let mut y = Vec::new();
    /// for seed in 0..3 {
    ///     let x = Square::generate(&Len(1000), seed)?;
    ///     device.run_into::<Square>(variant, &x, &mut y)?; // y is this input's result, whatever it held
    ///     assert_eq!(y[7], x[7] * x[7]);
    /// }
    /// # Ok::<(), gpuworthy::core::Error>(())
    /// ```
    pub fn run_into<W: DeviceWorkload>(&self, variant: &str, input: &W::Input, output: &mut W::Output) -> Result<()> {
        self.implementation::<W>()?.run_into(variant, input, output)
    }

    /// Runs `variant` on the units `units` of `input` and writes their output into `output`, its place in a
    /// group's whole output ([`Implements::run_part`]): a group member's run, reading the input where it lies where
    /// the backend can.
    pub fn run_part<W: DeviceWorkload>(
        &self,
        variant: &str,
        input: &W::Input,
        units: std::ops::Range<usize>,
        output: &mut gpuworthy_core::PartOutput<'_>,
    ) -> Result<()> {
        self.implementation::<W>()?.run_part(variant, input, units, output)
    }

    /// Whether [`Device::run_part`] of `variant` at `params` reads the part where it lies and writes in place, with
    /// no copy on the host ([`Implements::reads_parts_in_place`]); `false` for a workload the device does not run.
    pub fn reads_parts_in_place<W: DeviceWorkload>(&self, variant: &str, params: &W::Params) -> bool {
        self.implementation::<W>().is_ok_and(|i| i.reads_parts_in_place(variant, params))
    }

    /// Measures every phase of `variant` on `input` with the harness ([`measure`](crate::measure::measure)), timed on the backend itself (no
    /// dispatch through this enum inside the timed loops).
    pub fn measure<W: DeviceWorkload>(
        &self,
        variant: &str,
        input: &W::Input,
        options: &MeasureOptions,
    ) -> Result<Measurement> {
        self.implementation::<W>()?.measure(variant, input, options)
    }

    /// Measures the end-to-end phase alone ([`measure_end_to_end`](crate::measure::measure_end_to_end)): the upload, launch and download of `variant`,
    /// and whether the first run's output passed its check (`None` when the options do not validate).
    pub fn measure_end_to_end<W: DeviceWorkload>(
        &self,
        variant: &str,
        input: &W::Input,
        options: &MeasureOptions,
    ) -> Result<(Stats, Option<CheckResult>)> {
        self.implementation::<W>()?.measure_end_to_end(variant, input, options)
    }

    /// One launch of `variant` on resident data timed three ways ([`compare_clocks`](crate::measure::compare_clocks)):
    /// the host clock without synchronising (the host's cost of a call), synchronised, and the device timer.
    pub fn compare_clocks<W: DeviceWorkload>(
        &self,
        variant: &str,
        input: &W::Input,
        options: &MeasureOptions,
    ) -> Result<ClockComparison> {
        self.implementation::<W>()?.compare_clocks(variant, input, options)
    }

    /// One launch of `variant` on data uploaded once, timed by the device's own timer only
    /// ([`time_resident_kernel`](crate::measure::time_resident_kernel)).
    pub fn time_resident_kernel<W: DeviceWorkload>(
        &self,
        variant: &str,
        input: &W::Input,
        options: &MeasureOptions,
    ) -> Result<Stats> {
        self.implementation::<W>()?.time_resident_kernel(variant, input, options)
    }

    /// Measures every full-precision variant on `input` and returns the one whose kernel was fastest, with all the
    /// measurements: the answer to "which variant", by measurement on this machine.
    pub fn fastest_variant<W: DeviceWorkload>(
        &self,
        input: &W::Input,
        options: &MeasureOptions,
    ) -> Result<(&'static str, Vec<Measurement>)> {
        let implementation = self.implementation::<W>()?;
        let mut fastest: Option<(&'static str, Duration)> = None;
        let mut measured = Vec::new();
        for variant in implementation.variants() {
            if implementation.precision(variant) != Precision::Fp32 {
                continue;
            }
            let m = implementation.measure(variant, input, options)?;
            if m.check.as_ref().is_none_or(|check| check.is_ok())
                && fastest.is_none_or(|(_, best)| m.kernel.median < best)
            {
                fastest = Some((variant, m.kernel.median));
            }
            measured.push(m);
        }
        let (variant, _) = fastest.ok_or_else(|| {
            Error::invalid(format!("{} has no full-precision {} variant that passed its check", self.label(), W::NAME))
        })?;
        Ok((variant, measured))
    }

    fn owns<W: Workload>(&self, resident: &Resident<W>) -> Result<()> {
        if resident.device.same_device(self) {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "this {} data was uploaded to {} ({}), not to {} ({}): upload it to the device that launches it",
                W::NAME,
                resident.device.label(),
                resident.device.device().name,
                self.label(),
                self.device().name
            )))
        }
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({}: {})", self.label(), self.device().name)
    }
}

impl fmt::Display for Device {
    /// `cuda: NVIDIA H200 (CUDA driver 13.0, compute capability 9.0)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.label(), self.device().name, self.device().driver)
    }
}

impl From<CpuBackend> for Device {
    fn from(backend: CpuBackend) -> Self {
        Device::Cpu(Arc::new(backend))
    }
}

#[cfg(feature = "cuda")]
impl From<CudaBackend> for Device {
    fn from(backend: CudaBackend) -> Self {
        Device::Cuda(Arc::new(backend))
    }
}

#[cfg(feature = "wgpu")]
impl From<WgpuBackend> for Device {
    fn from(backend: WgpuBackend) -> Self {
        Device::Wgpu(Arc::new(backend))
    }
}

impl Backend for Device {
    fn kind(&self) -> BackendKind {
        self.backend().kind()
    }

    fn device(&self) -> &DeviceInfo {
        self.backend().device()
    }

    fn synchronize(&self) -> Result<()> {
        self.backend().synchronize()
    }

    fn kernel_clock(&self) -> KernelClock {
        self.backend().kernel_clock()
    }

    fn time_on_device(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        self.backend().time_on_device(work)
    }

    fn device_memory(&self) -> Option<u64> {
        self.backend().device_memory()
    }

    fn cache_bytes(&self) -> Option<u64> {
        self.backend().cache_bytes()
    }

    fn copy_bandwidth(&self, bytes: usize) -> Result<f64> {
        self.backend().copy_bandwidth(bytes)
    }
}

/// A workload's data on a [`Device`]: inputs and outputs where the device computes, kept there across launches until
/// this is dropped. It remembers its device: launching it on another is an error, not a wrong answer.
pub struct Resident<W: Workload> {
    device: Device,
    data: Box<dyn Any + Send>,
    workload: PhantomData<fn() -> W>,
}

impl<W: Workload> Resident<W> {
    /// The device the data lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The backend's own resident data (for a collective that reaches into it).
    #[cfg(feature = "cuda")]
    pub(crate) fn data_mut(&mut self) -> &mut (dyn Any + Send) {
        self.data.as_mut()
    }
}

impl<W: Workload> fmt::Debug for Resident<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Resident<{}>({:?})", W::NAME, self.device)
    }
}

impl<W: DeviceWorkload> Implements<W> for Device {
    type Resident = Resident<W>;

    fn variants(&self) -> Vec<&'static str> {
        Device::variants::<W>(self)
    }

    fn precision(&self, variant: &str) -> Precision {
        Device::precision::<W>(self, variant)
    }

    fn check_size(&self, params: &W::Params) -> Result<()> {
        Device::check_size::<W>(self, params)
    }

    fn best_variant(&self, params: &W::Params) -> &'static str {
        Device::best_variant::<W>(self, params)
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        Device::prepare::<W>(self, variant)
    }

    fn upload(&self, input: &W::Input) -> Result<Resident<W>> {
        Device::upload::<W>(self, input)
    }

    fn launch(&self, variant: &str, resident: &mut Resident<W>) -> Result<()> {
        Device::launch(self, variant, resident)
    }

    fn download(&self, resident: &mut Resident<W>) -> Result<W::Output> {
        Device::download(self, resident)
    }

    fn download_part(
        &self,
        resident: &mut Resident<W>,
        input: &W::Input,
        units: std::ops::Range<usize>,
        output: &mut gpuworthy_core::PartOutput<'_>,
    ) -> Result<()> {
        Device::download_part::<W>(self, resident, input, units, output)
    }

    fn run(&self, variant: &str, input: &W::Input) -> Result<W::Output> {
        Device::run::<W>(self, variant, input)
    }

    fn run_into(&self, variant: &str, input: &W::Input, output: &mut W::Output) -> Result<()> {
        Device::run_into::<W>(self, variant, input, output)
    }
}

/// Code generic over the backend type, run by [`Device::with_backend`] on the backend a device holds.
pub trait WithBackend {
    /// What the code returns.
    type Output;
    /// Runs the code on `backend`.
    fn call<B: ImplementsEveryWorkload + 'static>(self, backend: &Arc<B>) -> Self::Output;
}

macro_rules! implements_every_workload {
    ([] $($name:ident: $workload:ty),* $(,)?) => {
        /// A backend that implements every workload of the list ([`gpuworthy_core::for_each_workload!`]) and
        /// users' expressions ([`gpuworthy_core::expr::Expression`]).
        pub trait ImplementsEveryWorkload:
            Backend $(+ Implements<$workload>)* + Implements<gpuworthy_core::expr::Expression>
        {
        }

        impl<B: Backend $(+ Implements<$workload>)* + Implements<gpuworthy_core::expr::Expression>>
            ImplementsEveryWorkload for B
        {
        }
    };
}

gpuworthy_core::for_each_workload!(implements_every_workload);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_size_is_set_on_a_gpu_and_refused_on_the_cpu_and_on_a_shared_device() {
        use gpuworthy_core::Workload;
        use gpuworthy_core::workloads::{Len, Square};
        let err = Device::cpu().unwrap().with_elementwise_block_size(128).unwrap_err().to_string();
        assert!(err.contains("no block size"), "{err}");
        for device in Device::all_available().devices.into_iter().filter(|d| d.kind() != BackendKind::Cpu) {
            let kept = device.clone();
            let err = device.with_elementwise_block_size(128).unwrap_err().to_string();
            assert!(err.contains("shared"), "{err}");
            drop(kept);
        }
        if let Some(wgpu) = BackendKind::Wgpu.opened_or_skipped(Device::wgpu(None)) {
            let wgpu = wgpu.with_elementwise_block_size(64).unwrap();
            let input = Square::generate(&Len(1000), 1).unwrap();
            assert_eq!(wgpu.run::<Square>("naive", &input).unwrap(), Square::reference(&input).unwrap());
            assert!(wgpu.with_elementwise_block_size(48).is_err());
        }
    }

    #[test]
    fn a_missing_cuda_device_is_unavailable_with_its_reason() {
        // No machine has a 1000th GPU: whatever the machine, this is "unavailable", never a panic.
        let err = Device::cuda(1000).unwrap_err();
        assert!(err.is_unavailable(), "{err}");
    }

    #[test]
    fn resident_data_launches_only_on_its_own_device() {
        use gpuworthy_core::workloads::{Len, Square};
        let (one, other) = (Device::cpu().unwrap(), Device::cpu().unwrap());
        let input = Square::generate(&Len(16), 1).unwrap();
        let mut resident = one.upload::<Square>(&input).unwrap();
        let err = other.launch("simd", &mut resident).unwrap_err().to_string();
        assert!(err.contains("uploaded to cpu"), "{err}");
        one.clone().launch("simd", &mut resident).unwrap();
        assert_eq!(one.download(&mut resident).unwrap(), Square::reference(&input).unwrap());
    }

    #[test]
    fn a_backend_left_out_of_the_build_is_not_compiled_and_named() {
        let left_out: Vec<(Result<Device>, &str)> = vec![
            #[cfg(not(feature = "cuda"))]
            (Device::open(DeviceSpec::Cuda { ordinal: 0 }), "cuda"),
            #[cfg(not(feature = "wgpu"))]
            (Device::open(BackendKind::Wgpu), "wgpu"),
        ];
        for (result, feature) in left_out {
            let err = result.unwrap_err();
            assert!(matches!(err, Error::NotCompiled { .. }) && err.is_unavailable(), "{err}");
            assert!(err.to_string().contains(&format!("feature `{feature}`")), "{err}");
        }
    }

    #[test]
    fn the_best_available_device_is_never_a_cpu_adapter() {
        let device = Device::best_available().unwrap();
        assert!(device.kind() == BackendKind::Cpu || device.is_gpu(), "{device}");
    }
}
