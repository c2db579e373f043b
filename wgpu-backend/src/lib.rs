//! # gpuworthy-wgpu
//!
//! The portable GPU backend: every workload as WGSL compute shaders (in `shaders/`, embedded at compile time) run
//! through wgpu, so that one code path runs on NVIDIA, AMD, Intel and Apple GPUs (Vulkan, Metal, DX12) and, through
//! Mesa's lavapipe, on a CPU: the wgpu backend is tested on machines without a GPU.
//!
//! Design decisions:
//!
//! - **Adapter choice.** A discrete GPU first, then integrated, virtual, and CPU adapters; overridable with
//!   [`AdapterChoice`] or the environment variable `GPUWORTHY_WGPU_ADAPTER` (an index into `gpuworthy devices`' list,
//!   a wgpu backend name such as `vulkan`, or part of the adapter's name such as `llvmpipe`).
//! - **Options.** The adapter, the shader checks, the chunk size and the order of a sum's additions ([`SumOrder`])
//!   are one [`WgpuOptions`] value, read from the environment in one place ([`WgpuOptions::from_env`], which
//!   [`WgpuBackend::new`] uses) and given in code with [`WgpuBackend::with_options`], which no environment variable
//!   changes.
//! - **Rooms.** `options.rs` (what to open), `pipelines.rs` (shader modules and pipelines), `timer.rs` (timestamp
//!   queries), `shaders.rs` (the WGSL sources), `workloads/` (one table and implementation per workload); this file
//!   opens the device and owns submission, synchronisation and error capture.
//! - **Pipelines** are created once per entry point and cached for the life of the backend; [`Implements::prepare`]
//!   creates them, so their cost is measured as the first-call phase, never inside a timed loop.
//! - **Phases.** Upload writes through wgpu's staging belt and submits; launch encodes one compute pass (with every
//!   dispatch of the variant) and submits without waiting; download copies into a mappable buffer, maps and polls.
//! - **Timing.** Kernel time comes from timestamp queries at the start and end of each compute pass where the adapter
//!   has `TIMESTAMP_QUERY`; otherwise from the wall clock around a synchronised launch, and
//!   [`Backend::kernel_clock`] says which.
//! - **Limits.** Inputs larger than `max_storage_buffer_binding_size` (128 MiB on lavapipe) are split into chunks,
//!   each in its own buffer; dispatches of more than 65535 workgroups are folded into two dimensions.
//! - **Runtime checks.** wgpu clamps every array index in a shader, guards integer division and bounds every loop
//!   with a counter unless told the shader is trusted. The loop counters stop the driver from unrolling loops and
//!   made some kernels several times slower (measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so),
//!   while the shaders' loops provably end, so the default drops loop bounding and keeps the index clamps and
//!   division guards; `GPUWORTHY_WGPU_CHECKS` chooses otherwise ([`ShaderChecks`]).
//! - **Driver limits.** Mesa's llvmpipe (lavapipe) stops a shader invocation's loops once they have run 65535
//!   trips in all, and the shader goes on with wrong values. On that driver every launch first counts the loop trips
//!   its invocations may run (as if no loop were unrolled) and refuses one beyond the limit with
//!   [`Error::TooLarge`] naming it: matmul with K near 2^16, softmax rows of 2^24, mandelbrot beyond 65535
//!   iterations.
//! - **Threads.** One backend may be shared by threads. A timing window holds the backend's [`QueueLock`] from its
//!   first timestamp until they are read, and every submission holds it while it encodes, so another thread's pass
//!   never lands in a window (one query set and readback buffer serve every window in turn).
//! - **Errors.** Validation and out-of-memory errors are captured with error scopes and returned as
//!   [`Error::Device`]; errors that escape a scope are recorded by an uncaptured-error handler and returned by the
//!   next synchronisation, never panicked.
//!
//! [`Implements::prepare`]: gpuworthy_core::Implements::prepare

#![deny(missing_docs)]

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use gpuworthy_core::{
    Backend, BackendKind, DeviceInfo, DeviceType, Error, KernelClock, QueueLock, Result, WaitLimit, spin_up,
};

mod checks;
mod custom;
mod devices;
pub mod expr;
mod options;
mod pipelines;
mod raw;
mod shaders;
mod timer;
mod workloads;

pub use checks::ShaderChecks;
pub use custom::{CustomPipeline, validate_wgsl};
pub use options::{AdapterChoice, SumOrder, WgpuOptions, check_environment};
pub use raw::RawOnDevice;
/// The wgpu crate this backend is built on, whose buffers and bind groups the extension points take.
pub use wgpu;

use options::device_rank;
pub use shaders::SHADERS;
use timer::{MAX_TIMED_PASSES, Timer};
pub use workloads::variant_kernels;

fn unavailable(reason: impl Into<String>) -> Error {
    Error::Unavailable { backend: BackendKind::Wgpu, reason: reason.into() }
}

/// An [`Error::Device`] for wgpu.
pub(crate) fn device_error(message: impl Into<String>) -> Error {
    Error::Device { backend: BackendKind::Wgpu, message: message.into() }
}

/// The wgpu backend on one adapter.
pub struct WgpuBackend {
    device: wgpu::Device,
    queue: wgpu::Queue,
    adapter: wgpu::AdapterInfo,
    info: DeviceInfo,
    limits: wgpu::Limits,
    features: wgpu::Features,
    modules: Mutex<HashMap<&'static str, wgpu::ShaderModule>>,
    pipelines: Mutex<HashMap<&'static str, Arc<wgpu::ComputePipeline>>>,
    /// Pipelines made from callers' WGSL ([`WgpuBackend::custom_pipeline`]), by a hash of source and entry point.
    custom_pipelines: Mutex<HashMap<u64, Arc<wgpu::ComputePipeline>>>,
    /// How the expression shaders round `f32` to f16 here, found once by [`expr`]'s probe of `pack2x16float`.
    f16_narrowing: std::sync::OnceLock<expr::F16Narrowing>,
    /// Mappable buffers for downloads, by size, reused while sizes repeat.
    staging: Mutex<HashMap<u64, Vec<wgpu::Buffer>>>,
    timer: Option<Timer>,
    /// wgpu's run-time checks compiled into the shaders (`GPUWORTHY_WGPU_CHECKS`).
    shader_checks: ShaderChecks,
    /// A smaller chunk size than the adapter's binding limit (`GPUWORTHY_WGPU_MAX_BINDING`).
    binding_cap: Option<u64>,
    /// Errors no error scope caught, reported by the next synchronisation.
    uncaptured: Arc<Mutex<Vec<String>>>,
    /// The most loop trips one shader invocation may run on this driver, where it has such a limit.
    loop_trip_limit: Option<u64>,
    /// Keeps other threads' submissions out of a timing window (the device's, kept with it in [`devices`]).
    queue_lock: Arc<QueueLock>,
    /// The adapter the device belongs to, for giving the device back when the backend is dropped ([`devices`]).
    adapter_key: String,
    /// Threads per workgroup of the elementwise shaders (`square`, `saxpy`): their overridable constant `WG`.
    elementwise_workgroup: u32,
    /// Whether the cooperative-matrix rung of matmul runs here, or why not ([`cooperative_f16`]).
    cooperative_f16: std::result::Result<(), String>,
    /// How the expressions' reductions combine their partials on this adapter's backend, and with the sum order
    /// asked for ([`SumOrder`]).
    pub(crate) reduction_finish: expr::ReductionFinish,
    /// The finish of a reduction that is not a plain sum: the fixed-order one of this adapter's backend.
    pub(crate) fixed_finish: expr::ReductionFinish,
    /// The bound on every wait for the device, and whether one has run past it ([`WaitLimit`]).
    wait: WaitLimit,
}

impl Drop for WgpuBackend {
    /// Gives the device back for the next backend on the adapter ([`devices`]: no device is destroyed while the
    /// process runs). Where a wait ran past the limit, the device may still be running that work: it is left to the
    /// driver, which frees it when the process ends.
    fn drop(&mut self) {
        if self.wait.is_expired() {
            std::mem::forget(self.device.clone());
            std::mem::forget(self.queue.clone());
            return;
        }
        let kept = devices::KeptDevice {
            device: self.device.clone(),
            queue: self.queue.clone(),
            uncaptured: Arc::clone(&self.uncaptured),
            queue_lock: Arc::clone(&self.queue_lock),
        };
        devices::give_back(std::mem::take(&mut self.adapter_key), kept);
    }
}

/// The loop trips Mesa's llvmpipe lets one shader invocation run, summed over all its loops: past it, every loop
/// exits early (`LP_MAX_TGSI_LOOP_ITERATIONS` in gallivm, one counter per invocation).
const LLVMPIPE_LOOP_TRIPS: u64 = 65535;

/// Invocations per workgroup of the elementwise shaders unless [`WgpuBackend::with_elementwise_workgroup_size`] says
/// otherwise: the `WG` the shaders declare.
pub const DEFAULT_ELEMENTWISE_WORKGROUP: u32 = 256;

/// Workgroup memory the cooperative-matrix shader declares: the staged slices of A (128 x 40 halves) and B
/// (32 x 136 halves) and one 16 x 16 f32 tile per subgroup for the stores past C's edge.
const COOPERATIVE_WORKGROUP_BYTES: u32 = (128 * 40 + 32 * 136) * 2 + 8 * 256 * 4;

/// Whether the cooperative-matrix shader (`matmul_coop.wgsl`) can run on `adapter` with the `features` it grants,
/// or the first reason it cannot: wgpu's experimental cooperative-matrix feature (Vulkan's
/// `VK_KHR_cooperative_matrix`, Metal's SIMD-group matrices), `shader-f16`, subgroups exactly 32 invocations wide
/// (the shader's eight subgroups of a 256-invocation workgroup own fixed blocks of its tile), a reported
/// 16 x 16 x 16 configuration with f16 inputs and f32 sums, and the workgroup size and memory it declares.
fn cooperative_f16(
    adapter: &wgpu::Adapter,
    features: wgpu::Features,
    limits: &wgpu::Limits,
) -> std::result::Result<(), String> {
    let info = adapter.get_info();
    for (feature, name) in [
        (wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX, "no cooperative matrices in wgpu on this adapter"),
        (wgpu::Features::SHADER_F16, "no shader-f16"),
        (wgpu::Features::SUBGROUP, "no subgroups"),
    ] {
        if !features.contains(feature) {
            return Err(name.to_owned());
        }
    }
    if (info.subgroup_min_size, info.subgroup_max_size) != (32, 32) {
        return Err(format!(
            "subgroups of {}-{} invocations; the shader is written for 32",
            info.subgroup_min_size, info.subgroup_max_size
        ));
    }
    let wanted = |p: &wgpu::CooperativeMatrixProperties| {
        (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
            && p.ab_type == wgpu::CooperativeScalarType::F16
            && p.cr_type == wgpu::CooperativeScalarType::F32
    };
    if !adapter.cooperative_matrix_properties().iter().any(wanted) {
        return Err("no 16x16x16 configuration with f16 inputs and f32 sums".to_owned());
    }
    if limits.max_compute_invocations_per_workgroup < 256 || limits.max_compute_workgroup_size_x < 256 {
        return Err("fewer than 256 invocations per workgroup".to_owned());
    }
    if limits.max_compute_workgroup_storage_size < COOPERATIVE_WORKGROUP_BYTES {
        return Err(format!("less than {COOPERATIVE_WORKGROUP_BYTES} bytes of workgroup memory"));
    }
    Ok(())
}

/// The loop-trip limit of an adapter's driver: llvmpipe's, or none known.
fn loop_trip_limit(adapter: &wgpu::AdapterInfo) -> Option<u64> {
    let llvmpipe = [&adapter.name, &adapter.driver, &adapter.driver_info]
        .iter()
        .any(|text| text.to_ascii_lowercase().contains("llvmpipe"));
    llvmpipe.then_some(LLVMPIPE_LOOP_TRIPS)
}

impl fmt::Debug for WgpuBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WgpuBackend").field("adapter", &self.adapter).finish_non_exhaustive()
    }
}

/// Keeps Mesa's Vulkan layers from printing a false error on a machine without a display.
///
/// Mesa's device-selection layer (`VK_LAYER_MESA_device_select`, installed with lavapipe and Mesa's GPU drivers) asks
/// the Wayland client library for the display when wgpu creates its instance; with `XDG_RUNTIME_DIR` unset that
/// library prints `error: XDG_RUNTIME_DIR is invalid or not set in the environment.` once per instance, the first
/// words a new user would read. Where the variable is unset (or not an absolute path, which the library also refuses)
/// there is no Wayland session to find, so pointing it at the temporary directory for this process alone changes no
/// choice: the library then looks for a socket that is not there and says nothing. A value already set is left alone.
fn quiet_window_system_on_a_headless_machine() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if !cfg!(all(unix, not(target_os = "macos"))) {
            return;
        }
        let unusable = std::env::var_os("XDG_RUNTIME_DIR").is_none_or(|dir| !std::path::Path::new(&dir).is_absolute());
        if unusable {
            let temporary = std::env::temp_dir();
            // SAFETY: `set_var` is serialised with every read through `std::env`; what it cannot serialise is a C
            // `getenv` on another thread at the same instant. It runs once per process, just before the first wgpu
            // instance (no driver thread exists yet), and only where the variable is unset, so a reader racing it
            // would have found nothing there either way.
            unsafe { std::env::set_var("XDG_RUNTIME_DIR", temporary) };
        }
    });
}

/// Locks a mutex, ignoring poisoning (the data guarded here stays consistent if a holder panicked).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl WgpuBackend {
    /// The backend with the options the environment asks for ([`WgpuOptions::from_env`]): the adapter chosen by
    /// `GPUWORTHY_WGPU_ADAPTER`, or the best one.
    pub fn new() -> Result<Self> {
        Self::with_options(&WgpuOptions::from_env()?)
    }

    /// Every adapter wgpu finds on this machine, in preference order, as `(backend, device type, name, driver)`.
    pub fn adapters() -> Vec<wgpu::AdapterInfo> {
        Self::sorted_adapters(&Self::instance()).into_iter().map(|a| a.get_info()).collect()
    }

    /// The process's one wgpu instance, made on first use and never destroyed: every backend and adapter list
    /// shares it, as no device is destroyed either ([`devices`] says why: on NVIDIA's driver a Vulkan instance or
    /// device destroyed while another thread exits can deadlock).
    fn instance() -> wgpu::Instance {
        static INSTANCE: std::sync::OnceLock<wgpu::Instance> = std::sync::OnceLock::new();
        INSTANCE
            .get_or_init(|| {
                quiet_window_system_on_a_headless_machine();
                let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
                descriptor.backends = wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12;
                wgpu::Instance::new(descriptor)
            })
            .clone()
    }

    fn sorted_adapters(instance: &wgpu::Instance) -> Vec<wgpu::Adapter> {
        let mut adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
        adapters.sort_by_key(|a| device_rank(a.get_info().device_type));
        adapters
    }

    /// The backend on the chosen adapter, with the other options the environment asks for.
    pub fn with_adapter(choice: &AdapterChoice) -> Result<Self> {
        Self::with_options(&WgpuOptions::from_env()?.with_adapter(choice.clone()))
    }

    /// The backend with these options, whatever the environment holds.
    ///
    /// Returns [`Error::Unavailable`] when there is no adapter (or none matches the choice), with a hint: Mesa's
    /// lavapipe (`mesa-vulkan-drivers`) runs WGSL on the CPU.
    pub fn with_options(options: &WgpuOptions) -> Result<Self> {
        let choice = &options.adapter;
        let instance = Self::instance();
        let adapters = Self::sorted_adapters(&instance);
        if adapters.is_empty() {
            return Err(unavailable(
                "no GPU adapter found (Vulkan, Metal or DX12); on Linux without a GPU, Mesa's lavapipe runs WGSL on \
                 the CPU: apt-get install mesa-vulkan-drivers libvulkan1",
            ));
        }
        let names = || adapters.iter().map(|a| a.get_info().name).collect::<Vec<_>>().join(", ");
        let adapter = match choice {
            AdapterChoice::Auto => adapters.first(),
            AdapterChoice::Index(i) => adapters.get(*i),
            AdapterChoice::Api(api) => adapters.iter().find(|a| a.get_info().backend == *api),
            AdapterChoice::Name(name) => {
                let name = name.to_lowercase();
                adapters.iter().find(|a| a.get_info().name.to_lowercase().contains(&name))
            }
        }
        .ok_or_else(|| unavailable(format!("no adapter matches {choice}; found: {}", names())))?;
        Self::on(adapter, options)
    }

    fn on(adapter: &wgpu::Adapter, options: &WgpuOptions) -> Result<Self> {
        let wait = WaitLimit::from_env()?;
        let adapter_info = adapter.get_info();
        // The adapter's own limits, not wgpu's conservative defaults: the largest buffers and bindings it allows.
        let limits = adapter.limits();
        // Float atomics are asked for wherever the adapter has them, whatever the sum order: a kept device serves every
        // later backend on the adapter ([`devices`]), whose options may differ.
        let wanted = wgpu::Features::TIMESTAMP_QUERY
            | wgpu::Features::SUBGROUP
            | wgpu::Features::SHADER_F16
            | wgpu::Features::SHADER_FLOAT32_ATOMIC
            | wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
        let mut features = adapter.features() & wanted;
        let cooperative_f16 = cooperative_f16(adapter, features, &limits);
        if cooperative_f16.is_err() {
            // Asked for only where the one shader that uses it can run.
            features.remove(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX);
        }
        let experimental_features = if features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX) {
            // SAFETY: wgpu asks callers of experimental features to accept that its implementation of them may have
            // bugs. One shader uses this one (`matmul_coop.wgsl`): its cooperative loads and stores address
            // workgroup arrays and storage buffers within their bounds for every shape the host launches (the
            // inputs are padded to whole tiles, stores past C's edge go through workgroup memory), it runs only on
            // adapters whose subgroups are 32 invocations wide (eight per workgroup, as the shader assumes) and with
            // a 16 x 16 x 16 f16 x f16 + f32 configuration the driver reports, and the conformance tests check its
            // every result against the reference.
            unsafe { wgpu::ExperimentalFeatures::enabled() }
        } else {
            wgpu::ExperimentalFeatures::disabled()
        };
        let descriptor = wgpu::DeviceDescriptor {
            label: Some("gpuworthy"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features,
            ..Default::default()
        };
        // A device kept for the process, given back when the backend is dropped ([`devices`] says why none is
        // ever destroyed).
        let kept = devices::take(adapter, &descriptor)?;
        let (device, queue) = (kept.device.clone(), kept.queue.clone());
        let uncaptured = Arc::clone(&kept.uncaptured);

        let timer = features.contains(wgpu::Features::TIMESTAMP_QUERY).then(|| Timer {
            queries: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("kernel timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: 2 * MAX_TIMED_PASSES,
            }),
            resolve: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("timestamp resolve"),
                size: 16 * MAX_TIMED_PASSES as u64,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            readback: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("timestamp readback"),
                size: 16 * MAX_TIMED_PASSES as u64,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            period: queue.get_timestamp_period() as f64,
            passes: Mutex::new(None),
        });

        let shader_checks = options.shader_checks;
        let loop_trip_limit = loop_trip_limit(&adapter_info);
        let mib = |bytes: u64| format!("{} MiB", bytes >> 20);
        let fixed_finish = expr::ReductionFinish::for_backend(adapter_info.backend);
        let float_atomics = features.contains(wgpu::Features::SHADER_FLOAT32_ATOMIC);
        let reduction_finish = match options.sum_order {
            SumOrder::Any if float_atomics => expr::ReductionFinish::FloatAtomic,
            _ => fixed_finish,
        };
        let info = DeviceInfo {
            name: adapter_info.name.clone(),
            device_type: match adapter_info.device_type {
                wgpu::DeviceType::Cpu => DeviceType::Cpu,
                wgpu::DeviceType::DiscreteGpu => DeviceType::DiscreteGpu,
                wgpu::DeviceType::IntegratedGpu => DeviceType::IntegratedGpu,
                wgpu::DeviceType::VirtualGpu => DeviceType::VirtualGpu,
                wgpu::DeviceType::Other => DeviceType::Unknown,
            },
            driver: format!(
                "{} on {:?}, {} {}",
                adapter_info.backend, adapter_info.device_type, adapter_info.driver, adapter_info.driver_info
            )
            .trim()
            .to_owned(),
            limits: vec![
                ("max_storage_buffer_binding_size".into(), mib(limits.max_storage_buffer_binding_size)),
                ("max_buffer_size".into(), mib(limits.max_buffer_size)),
                (
                    "max_compute_workgroups_per_dimension".into(),
                    limits.max_compute_workgroups_per_dimension.to_string(),
                ),
                (
                    "max_compute_workgroup_storage_size".into(),
                    format!("{} KiB", limits.max_compute_workgroup_storage_size / 1024),
                ),
                ("timestamp_query".into(), features.contains(wgpu::Features::TIMESTAMP_QUERY).to_string()),
                ("subgroups".into(), features.contains(wgpu::Features::SUBGROUP).to_string()),
                ("shader_f16".into(), features.contains(wgpu::Features::SHADER_F16).to_string()),
                (
                    "cooperative_matrix".into(),
                    match &cooperative_f16 {
                        Ok(()) => "16x16x16 f16 x f16 + f32 (matmul coop-f16)".to_owned(),
                        Err(why) => format!("none ({why})"),
                    },
                ),
                (
                    "sum_order".into(),
                    match (options.sum_order, float_atomics) {
                        (SumOrder::Any, true) => "any (float atomics: a sum's last bits may differ between runs)",
                        (SumOrder::Any, false) => {
                            "fixed (GPUWORTHY_WGPU_SUM_ORDER=any needs float atomics, absent here)"
                        }
                        (SumOrder::Fixed, _) => "fixed",
                    }
                    .to_owned(),
                ),
                ("shader_checks".into(), shader_checks.to_string()),
                (
                    "max_loop_trips_per_invocation".into(),
                    loop_trip_limit.map_or_else(|| "none known".to_owned(), |l| format!("{l} (llvmpipe)")),
                ),
            ],
        };
        let adapter_key = devices::adapter_key(&adapter_info);
        Ok(WgpuBackend {
            device,
            queue,
            adapter: adapter_info,
            info,
            limits,
            features,
            modules: Mutex::new(HashMap::new()),
            pipelines: Mutex::new(HashMap::new()),
            custom_pipelines: Mutex::new(HashMap::new()),
            f16_narrowing: std::sync::OnceLock::new(),
            staging: Mutex::new(HashMap::new()),
            timer,
            shader_checks,
            binding_cap: options.binding_cap,
            uncaptured,
            loop_trip_limit,
            queue_lock: Arc::clone(&kept.queue_lock),
            adapter_key,
            elementwise_workgroup: DEFAULT_ELEMENTWISE_WORKGROUP,
            cooperative_f16,
            reduction_finish,
            fixed_finish,
            wait,
        })
    }

    /// Whether the device has `shader-f16` (WGSL's `f16` type and 16-bit storage), which matmul's 16-bit rungs need.
    pub fn has_shader_f16(&self) -> bool {
        self.features.contains(wgpu::Features::SHADER_F16)
    }

    /// Whether matmul's cooperative-matrix rung (`coop-f16`) runs on this adapter, or why not.
    pub fn cooperative_f16(&self) -> std::result::Result<(), &str> {
        self.cooperative_f16.as_ref().map(|_| ()).map_err(String::as_str)
    }

    /// This backend with `threads` invocations per workgroup for the elementwise shaders (`square` and `saxpy`, both
    /// variants): a multiple of 32 from 32 up to what the adapter allows in one workgroup's first dimension. For the
    /// lesson on block size and occupancy; the default is [`DEFAULT_ELEMENTWISE_WORKGROUP`]. Pipelines built before
    /// are dropped, so every later launch uses the new size.
    pub fn with_elementwise_workgroup_size(mut self, threads: u32) -> Result<Self> {
        let most = self.device_limit_for_workgroup_size();
        if threads < 32 || threads > most || !threads.is_multiple_of(32) {
            return Err(Error::invalid(format!(
                "a wgpu workgroup size must be a multiple of 32 from 32 to {most} invocations (this adapter's \
                 max_compute_workgroup_size_x and max_compute_invocations_per_workgroup), got {threads}"
            )));
        }
        self.elementwise_workgroup = threads;
        self.pipelines.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
        Ok(self)
    }

    /// Invocations per workgroup of the elementwise shaders.
    pub fn elementwise_workgroup_size(&self) -> u32 {
        self.elementwise_workgroup
    }

    /// The most invocations one workgroup of the elementwise shaders may have on this adapter: the smaller of its
    /// `max_compute_workgroup_size_x` and `max_compute_invocations_per_workgroup`.
    pub fn device_limit_for_workgroup_size(&self) -> u32 {
        self.limits.max_compute_workgroup_size_x.min(self.limits.max_compute_invocations_per_workgroup)
    }

    /// The adapter in use: its name, wgpu backend (Vulkan, Metal, DX12), device type and driver.
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.adapter
    }

    /// Whether the device has subgroup operations (the `subgroup` sum variant needs them).
    pub fn has_subgroups(&self) -> bool {
        self.features.contains(wgpu::Features::SUBGROUP)
    }

    /// The largest number of bytes one storage binding may cover, and so the largest chunk a kernel sees at once:
    /// the adapter's limit, or less when `GPUWORTHY_WGPU_MAX_BINDING` (e.g. `64M`) asks for smaller chunks (to
    /// exercise the chunked path on a large GPU, or to compare chunk sizes).
    pub(crate) fn max_binding_bytes(&self) -> u64 {
        let adapter = self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size);
        self.binding_cap.map_or(adapter, |cap| cap.min(adapter))
    }

    /// Refuses a launch whose shader invocations may run `trips` loop trips (all loops together, none unrolled) where
    /// the driver stops loops before that, naming the limit; `what` describes the launch.
    pub(crate) fn check_loop_trips(&self, what: impl FnOnce() -> String, trips: u64) -> Result<()> {
        match self.loop_trip_limit {
            Some(limit) if trips > limit => Err(Error::TooLarge {
                what: format!("{} ({trips} loop trips per shader invocation)", what()),
                limit: format!(
                    "{limit} loop trips per invocation on {} (Mesa's llvmpipe ends every loop there, so the result \
                     would be wrong)",
                    self.adapter.name
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Holds the queue against other threads' timing windows while work is enqueued (see [`QueueLock`]). Fails at
    /// once where a wait has run past the wait limit: the device is still busy with that work.
    pub(crate) fn hold_queue(&self) -> Result<gpuworthy_core::QueueGuard<'_>> {
        self.wait.check(BackendKind::Wgpu)?;
        Ok(self.queue_lock.hold())
    }

    /// This backend with every wait for the device bounded by `limit` instead of `GPUWORTHY_WAIT_LIMIT`'s
    /// ([`WaitLimit`]).
    pub fn with_wait_limit(mut self, limit: Duration) -> Self {
        self.wait = WaitLimit::new(limit);
        self
    }

    /// The bound on every wait for the device.
    pub fn wait_limit(&self) -> Duration {
        self.wait.limit()
    }

    /// The wgpu device this backend runs on: one of the devices the process keeps, its own while the backend lives
    /// and handed to the next backend on the adapter once it is dropped ([`devices`]).
    pub fn wgpu_device(&self) -> &wgpu::Device {
        &self.device
    }

    pub(crate) fn device_handle(&self) -> &wgpu::Device {
        &self.device
    }

    pub(crate) fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// Runs `f` inside validation and out-of-memory error scopes, returning what they caught as an error.
    pub(crate) fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T> {
        let out_of_memory = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = f();
        let invalid = pollster::block_on(validation.pop());
        let oom = pollster::block_on(out_of_memory.pop());
        match invalid.or(oom) {
            None => Ok(value),
            Some(wgpu::Error::OutOfMemory { .. }) => Err(device_error(format!("{what}: out of device memory"))),
            Some(e) => Err(device_error(format!("{what}: {e}"))),
        }
    }

    /// Encodes one compute pass with `record` (timed when a timing window is open) after `prepare` (copies and
    /// clears outside the pass), and submits it without waiting.
    pub(crate) fn submit_pass(
        &self,
        what: &str,
        prepare: impl FnOnce(&mut wgpu::CommandEncoder),
        record: impl FnOnce(&mut wgpu::ComputePass<'_>),
    ) -> Result<()> {
        let _queue = self.hold_queue()?;
        self.settle_before_submit()?;
        self.scoped(what, || {
            let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(what) });
            prepare(&mut encoder);
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(what),
                    timestamp_writes: self.timestamp_writes(),
                });
                record(&mut pass);
            }
            self.queue.submit([encoder.finish()]);
        })
    }

    /// On llvmpipe, waits for the work already submitted (within the wait limit) before more is submitted: there
    /// `vkQueueSubmit` itself blocks until every earlier submission has run to its end (one thread runs each
    /// submission to completion, and a submission waits for the one before it), so a submission behind a kernel that
    /// runs long would block past any limit. Elsewhere a submission is queued and returns at once: nothing to do.
    pub(crate) fn settle_before_submit(&self) -> Result<()> {
        if self.loop_trip_limit.is_some() { self.wait() } else { Ok(()) }
    }

    /// Waits for all submitted work, at most the wait limit ([`WaitLimit`]), returning any error the device reported
    /// meanwhile.
    fn wait(&self) -> Result<()> {
        self.wait.check(BackendKind::Wgpu)?;
        let bounded = wgpu::PollType::Wait { submission_index: None, timeout: Some(self.wait.limit()) };
        match self.device.poll(bounded) {
            Ok(_) => {}
            Err(wgpu::PollError::Timeout) => {
                return Err(self.wait.expire(BackendKind::Wgpu, "waiting for the submitted work"));
            }
            Err(e) => return Err(device_error(format!("waiting: {e}"))),
        }
        let errors = std::mem::take(&mut *lock(&self.uncaptured));
        if errors.is_empty() { Ok(()) } else { Err(device_error(errors.join("; "))) }
    }

    /// Maps `buffer` (a `MAP_READ` buffer whose copies have been submitted), waits, and hands its bytes to `read`.
    pub(crate) fn read_mapped<T>(&self, buffer: &wgpu::Buffer, read: impl FnOnce(&[u8]) -> T) -> Result<T> {
        let (sender, receiver) = std::sync::mpsc::channel();
        buffer.map_async(wgpu::MapMode::Read, .., move |result| {
            let _ = sender.send(result);
        });
        self.wait()?;
        receiver
            .recv()
            .map_err(|_| device_error("the buffer mapping was dropped"))?
            .map_err(|e| device_error(format!("mapping a buffer for reading: {e}")))?;
        let value = {
            let mapped =
                buffer.get_mapped_range(..).map_err(|e| device_error(format!("reading a mapped buffer: {e}")))?;
            read(&mapped)
        };
        buffer.unmap();
        Ok(value)
    }
}

impl Backend for WgpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Wgpu
    }

    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn synchronize(&self) -> Result<()> {
        self.wait()
    }

    fn kernel_clock(&self) -> KernelClock {
        if self.timer.is_some() { KernelClock::TimestampQueries } else { KernelClock::SynchronisedWallClock }
    }

    /// A compute-shader copy (`copy_vec4` in `shaders/copy.wgsl`) between two buffers of at most one binding each,
    /// timed like a kernel. A buffer-to-buffer copy command is not used: some drivers run it on a DMA engine, far
    /// below the bandwidth the compute units reach.
    fn copy_bandwidth(&self, bytes: usize) -> Result<f64> {
        let bytes = (bytes as u64).min(self.max_binding_bytes()).max(16) / 16 * 16;
        let n4 = (bytes / 16) as u32;
        let params: [u32; 4] = [n4, 0, 0, 0];
        let params = self.uniform("copy params", &params)?;
        let source = self.storage_zeroed("copy source", bytes)?;
        let target = self.storage_zeroed("copy target", bytes)?;
        let entry = "copy_vec4";
        let group = [self.bind(entry, &[(0, &params), (1, &source), (2, &target)])?];
        let grid = workloads::grid_1d((n4 as u64).div_ceil(workloads::WORKGROUP), self.max_workgroups())?;
        let mut copy = || self.dispatch_each(entry, &group, [grid], None);
        // Back-to-back copies first, so the GPU is at its working clocks when the samples are taken.
        spin_up(self, Duration::from_millis(300), &mut copy)?;
        let mut samples = Vec::new();
        for _ in 0..5 {
            samples.push(self.time_on_device(&mut copy)?.as_secs_f64());
        }
        samples.sort_by(f64::total_cmp);
        Ok(2.0 * bytes as f64 / samples[samples.len() / 2].max(f64::MIN_POSITIVE) / 1e9)
    }

    fn time_on_device(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        match &self.timer {
            Some(timer) => self.time_with_queries(timer, work),
            None => {
                let _window = self.hold_queue()?;
                self.wait()?;
                let start = Instant::now();
                work()?;
                self.wait()?;
                Ok(start.elapsed())
            }
        }
    }
}
