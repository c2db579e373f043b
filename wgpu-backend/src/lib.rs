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
//!   cost up to 3 times on an H200, while the shaders' loops provably end, so the default drops loop bounding and
//!   keeps the index clamps and division guards; `GPUWORTHY_WGPU_CHECKS` chooses otherwise ([`ShaderChecks`]).
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
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use gpuworthy_core::{
    Backend, BackendKind, DeviceInfo, DeviceType, Error, KernelClock, QueueLock, Result, env, spin_up,
};

mod checks;
mod shaders;
mod workloads;

pub use checks::ShaderChecks;
pub use shaders::SHADERS;
pub use workloads::variant_kernels;

/// Which adapter to use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AdapterChoice {
    /// The best adapter: discrete GPU, then integrated, virtual, CPU.
    #[default]
    Auto,
    /// The adapter at this index in [`WgpuBackend::adapters`]' list.
    Index(usize),
    /// The best adapter of this wgpu backend (`vulkan`, `metal`, `dx12`).
    Api(wgpu::Backend),
    /// The best adapter whose name contains this text (case-insensitive).
    Name(String),
}

impl AdapterChoice {
    /// The choice named by the environment variable `GPUWORTHY_WGPU_ADAPTER`, or [`AdapterChoice::Auto`] when it is
    /// unset or empty. Any text is a valid choice; one that matches no adapter makes the backend unavailable, with
    /// the adapters found named.
    pub fn from_env() -> Result<Self> {
        Ok(env::read("GPUWORTHY_WGPU_ADAPTER")?
            .map_or(Self::Auto, |s| s.parse().unwrap_or_else(|never: std::convert::Infallible| match never {})))
    }
}

impl FromStr for AdapterChoice {
    type Err = std::convert::Infallible;

    /// A number is an index, a wgpu backend name is an API, anything else part of a name.
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        let s = s.trim();
        if let Ok(index) = s.parse() {
            return Ok(AdapterChoice::Index(index));
        }
        let api = match s.to_ascii_lowercase().as_str() {
            "vulkan" | "vk" => Some(wgpu::Backend::Vulkan),
            "metal" => Some(wgpu::Backend::Metal),
            "dx12" | "d3d12" => Some(wgpu::Backend::Dx12),
            "gl" | "gles" => Some(wgpu::Backend::Gl),
            _ => None,
        };
        Ok(api.map_or_else(|| AdapterChoice::Name(s.to_owned()), AdapterChoice::Api))
    }
}

impl fmt::Display for AdapterChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdapterChoice::Auto => f.write_str("the best adapter"),
            AdapterChoice::Index(i) => write!(f, "adapter {i}"),
            AdapterChoice::Api(api) => write!(f, "a {api} adapter"),
            AdapterChoice::Name(name) => write!(f, "an adapter named like `{name}`"),
        }
    }
}

/// Preference order of device types: lower is better.
fn device_rank(kind: wgpu::DeviceType) -> u8 {
    match kind {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

fn unavailable(reason: impl Into<String>) -> Error {
    Error::Unavailable { backend: BackendKind::Wgpu, reason: reason.into() }
}

/// An [`Error::Device`] for wgpu.
pub(crate) fn device_error(message: impl Into<String>) -> Error {
    Error::Device { backend: BackendKind::Wgpu, message: message.into() }
}

/// Parses every environment variable this backend reads (`GPUWORTHY_WGPU_ADAPTER`, `GPUWORTHY_WGPU_CHECKS`,
/// `GPUWORTHY_WGPU_UNCHECKED`, `GPUWORTHY_WGPU_MAX_BINDING`) without opening an adapter: an error names the first bad
/// one and its valid values. [`WgpuBackend::new`] refuses the same values.
pub fn check_environment() -> Result<()> {
    AdapterChoice::from_env()?;
    ShaderChecks::from_env()?;
    binding_cap_from_env().map(drop)
}

/// The chunk size asked for by `GPUWORTHY_WGPU_MAX_BINDING` (`64M`, `2^26`, `1000000`), at least 1 MiB.
fn binding_cap_from_env() -> Result<Option<u64>> {
    const NAME: &str = "GPUWORTHY_WGPU_MAX_BINDING";
    let Some(text) = env::read(NAME)? else { return Ok(None) };
    let text = text.as_str();
    let (digits, scale) = match text.chars().last() {
        Some('k' | 'K') => (&text[..text.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&text[..text.len() - 1], 1 << 20),
        Some('g' | 'G') => (&text[..text.len() - 1], 1 << 30),
        _ => (text, 1),
    };
    let value = match digits.split_once('^') {
        Some((base, exp)) => base.parse::<u64>().ok().zip(exp.parse::<u32>().ok()).and_then(|(b, e)| b.checked_pow(e)),
        None => digits.parse::<u64>().ok(),
    }
    .and_then(|v| v.checked_mul(scale))
    .filter(|&v| v >= 1 << 20)
    .ok_or_else(|| env::invalid_value(NAME, text, "a size of at least 1M, such as 64M"))?;
    Ok(Some(value / 16 * 16))
}

/// The timestamp queries of one timing window.
#[derive(Debug)]
struct Timer {
    queries: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    readback: wgpu::Buffer,
    /// Nanoseconds per timestamp tick.
    period: f64,
    /// Passes encoded in the current window (timed up to [`MAX_TIMED_PASSES`]); `None` when no window is open.
    passes: Mutex<Option<u32>>,
}

/// How many compute passes one timing window can hold.
const MAX_TIMED_PASSES: u32 = 256;

// One pass per launch: a window must hold the launches callers may time together.
const _: () = assert!(MAX_TIMED_PASSES as usize >= gpuworthy_core::MAX_LAUNCHES_PER_TIMING);

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
    /// Keeps other threads' submissions out of a timing window.
    queue_lock: QueueLock,
}

/// The loop trips Mesa's llvmpipe lets one shader invocation run, summed over all its loops: past it, every loop
/// exits early (`LP_MAX_TGSI_LOOP_ITERATIONS` in gallivm, one counter per invocation).
const LLVMPIPE_LOOP_TRIPS: u64 = 65535;

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

/// Locks a mutex, ignoring poisoning (the data guarded here stays consistent if a holder panicked).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl WgpuBackend {
    /// The backend on the adapter chosen by `GPUWORTHY_WGPU_ADAPTER`, or the best one.
    pub fn new() -> Result<Self> {
        Self::with_adapter(&AdapterChoice::from_env()?)
    }

    /// Every adapter wgpu finds on this machine, in preference order, as `(backend, device type, name, driver)`.
    pub fn adapters() -> Vec<wgpu::AdapterInfo> {
        Self::sorted_adapters(&Self::instance()).into_iter().map(|a| a.get_info()).collect()
    }

    fn instance() -> wgpu::Instance {
        let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
        descriptor.backends = wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12;
        wgpu::Instance::new(descriptor)
    }

    fn sorted_adapters(instance: &wgpu::Instance) -> Vec<wgpu::Adapter> {
        let mut adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
        adapters.sort_by_key(|a| device_rank(a.get_info().device_type));
        adapters
    }

    /// The backend on the chosen adapter.
    ///
    /// Returns [`Error::Unavailable`] when there is no adapter (or none matches the choice), with a hint: Mesa's
    /// lavapipe (`mesa-vulkan-drivers`) runs WGSL on the CPU.
    pub fn with_adapter(choice: &AdapterChoice) -> Result<Self> {
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
        Self::on(adapter)
    }

    fn on(adapter: &wgpu::Adapter) -> Result<Self> {
        let adapter_info = adapter.get_info();
        let wanted = wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::SUBGROUP;
        let features = adapter.features() & wanted;
        // The adapter's own limits, not wgpu's conservative defaults: the largest buffers and bindings it allows.
        let limits = adapter.limits();
        let descriptor = wgpu::DeviceDescriptor {
            label: Some("gpuworthy"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&descriptor))
            .map_err(|e| unavailable(format!("adapter {} refused a device: {e}", adapter_info.name)))?;

        let uncaptured = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&uncaptured);
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| lock(&sink).push(e.to_string())));

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

        let shader_checks = ShaderChecks::from_env()?;
        let loop_trip_limit = loop_trip_limit(&adapter_info);
        let mib = |bytes: u64| format!("{} MiB", bytes >> 20);
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
                ("shader_checks".into(), shader_checks.to_string()),
                (
                    "max_loop_trips_per_invocation".into(),
                    loop_trip_limit.map_or_else(|| "none known".to_owned(), |l| format!("{l} (llvmpipe)")),
                ),
            ],
        };
        Ok(WgpuBackend {
            device,
            queue,
            adapter: adapter_info,
            info,
            limits,
            features,
            modules: Mutex::new(HashMap::new()),
            pipelines: Mutex::new(HashMap::new()),
            staging: Mutex::new(HashMap::new()),
            timer,
            shader_checks,
            binding_cap: binding_cap_from_env()?,
            uncaptured,
            loop_trip_limit,
            queue_lock: QueueLock::default(),
        })
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

    /// Holds the queue against other threads' timing windows while work is enqueued (see [`QueueLock`]).
    pub(crate) fn hold_queue(&self) -> gpuworthy_core::QueueGuard<'_> {
        self.queue_lock.hold()
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

    /// The compute pipeline for `entry` (an entry point in `shaders/`), created on first use and cached.
    pub(crate) fn pipeline(&self, entry: &'static str) -> Result<Arc<wgpu::ComputePipeline>> {
        if let Some(p) = lock(&self.pipelines).get(entry) {
            return Ok(Arc::clone(p));
        }
        let shader = shaders::shader_of(entry)
            .ok_or_else(|| device_error(format!("no shader defines the entry point `{entry}`")))?;
        let module = {
            let mut modules = lock(&self.modules);
            match modules.get(shader.file) {
                Some(m) => m.clone(),
                None => {
                    let m = self.compile(shader.file, shader.source, entry)?;
                    modules.insert(shader.file, m.clone());
                    m
                }
            }
        };
        let pipeline = self
            .scoped(&format!("creating the pipeline `{entry}`"), || {
                self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry),
                    layout: None,
                    module: &module,
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    cache: None,
                })
            })
            .map_err(|e| Error::Compile {
                backend: BackendKind::Wgpu,
                kernel: entry.to_owned(),
                options: "automatic layout".into(),
                log: e.to_string(),
            })?;
        let pipeline = Arc::new(pipeline);
        lock(&self.pipelines).insert(entry, Arc::clone(&pipeline));
        Ok(pipeline)
    }

    fn compile(&self, file: &'static str, source: &'static str, entry: &str) -> Result<wgpu::ShaderModule> {
        let descriptor =
            wgpu::ShaderModuleDescriptor { label: Some(file), source: wgpu::ShaderSource::Wgsl(source.into()) };
        let module = self.scoped(&format!("compiling {file}"), || {
            if self.shader_checks == ShaderChecks::ALL {
                self.device.create_shader_module(descriptor)
            } else {
                // SAFETY: wgpu requires the checks left out to be unneeded. Loop bounding guards against loops that
                // never end, and every loop in `shaders/` ends: each is a counted loop whose bound is a constant or
                // comes from the uniform parameters, with a counter that grows by a non-zero step (a constant, the
                // workgroup size or the grid's thread count) or halves down to zero, and the host's limits keep
                // every bound far below 2^32, so no counter wraps; mandelbrot's `loop` breaks once its counter
                // reaches `max_iter`. Index clamps and division guards are only left out when the user asks for it
                // (GPUWORTHY_WGPU_CHECKS or GPUWORTHY_WGPU_UNCHECKED=1): every shader tests each index it uses
                // against the lengths the host passes, divides only by non-zero constants and sizes, and the
                // conformance tests run them at odd sizes, empty ones and sizes beyond a binding.
                unsafe { self.device.create_shader_module_trusted(descriptor, self.shader_checks.runtime_checks()) }
            }
        });
        module.map_err(|e| Error::Compile {
            backend: BackendKind::Wgpu,
            kernel: format!("{entry} in {file}"),
            options: format!("{:?}", self.features),
            log: e.to_string(),
        })
    }

    /// The timestamp writes for the next compute pass, when a timing window is open.
    pub(crate) fn timestamp_writes(&self) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let timer = self.timer.as_ref()?;
        let mut passes = lock(&timer.passes);
        let used = passes.as_mut()?;
        // Counted even when the query set is full, so that the window reports the passes it could not time.
        *used += 1;
        if *used > MAX_TIMED_PASSES {
            return None;
        }
        let index = 2 * (*used - 1);
        Some(wgpu::ComputePassTimestampWrites {
            query_set: &timer.queries,
            beginning_of_pass_write_index: Some(index),
            end_of_pass_write_index: Some(index + 1),
        })
    }

    /// Encodes one compute pass with `record` (timed when a timing window is open) after `prepare` (copies and
    /// clears outside the pass), and submits it without waiting.
    pub(crate) fn submit_pass(
        &self,
        what: &str,
        prepare: impl FnOnce(&mut wgpu::CommandEncoder),
        record: impl FnOnce(&mut wgpu::ComputePass<'_>),
    ) -> Result<()> {
        let _queue = self.hold_queue();
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

    /// Waits for all submitted work, returning any error the device reported meanwhile.
    fn wait(&self) -> Result<()> {
        self.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| device_error(format!("waiting: {e}")))?;
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

    fn time_with_queries(&self, timer: &Timer, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        // Held until the timestamps are read: the query set and the readback buffer serve one window at a time.
        let _window = self.hold_queue();
        *lock(&timer.passes) = Some(0);
        let result = work();
        let passes = lock(&timer.passes).take().unwrap_or(0);
        result?;
        if passes == 0 {
            // Nothing was launched (an empty input): no device time.
            return Ok(Duration::ZERO);
        }
        if passes > MAX_TIMED_PASSES {
            return Err(device_error(format!(
                "the timed work encoded {passes} compute passes; one timing window holds {MAX_TIMED_PASSES}"
            )));
        }
        let bytes = 16 * passes as u64;
        self.scoped("reading timestamps", || {
            let mut encoder = self.device.create_command_encoder(&Default::default());
            encoder.resolve_query_set(&timer.queries, 0..2 * passes, &timer.resolve, 0);
            encoder.copy_buffer_to_buffer(&timer.resolve, 0, &timer.readback, 0, bytes);
            self.queue.submit([encoder.finish()]);
        })?;
        let ticks: Vec<u64> =
            self.read_mapped(&timer.readback, |raw| bytemuck::pod_collect_to_vec(&raw[..bytes as usize]))?;
        let total: u64 = ticks.chunks_exact(2).map(|pair| pair[1].saturating_sub(pair[0])).sum();
        Ok(Duration::from_nanos((total as f64 * timer.period).round() as u64))
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
                let _window = self.hold_queue();
                self.wait()?;
                let start = Instant::now();
                work()?;
                self.wait()?;
                Ok(start.elapsed())
            }
        }
    }
}
