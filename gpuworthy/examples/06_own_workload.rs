//! Your own workload, defined in this file alone, on every backend: GELU, the activation of transformer layers (`y =
//! x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³)))`), with a CPU kernel on the backend's thread pool (a kernel written with
//! `gpuworthy::cpu::simd_kernel!` also runs at the backend's SIMD level, `CpuBackend::simd`), a CUDA C kernel compiled
//! through the CUDA backend's NVRTC cache and launched on its stream, and a WGSL kernel made into a pipeline by the
//! wgpu backend (naga-validated). Each is checked against an `f64` reference and timed phase by phase, the workload is
//! swept to its crossover, calibrated, and placed by `auto`, which says why.
//!
//! ```text
//! cargo run --release -p gpuworthy --example 06_own_workload
//! ```
//!
//! No crate of gpuworthy was edited to add it: the workload implements [`Workload`], each backend's [`Implements`]
//! through that backend's public extension points, and [`DeviceWorkload`] to tell the run-time `Device` which
//! backends have it. A backend it did not implement would answer `Error::Unsupported`.

use std::process::ExitCode;
use std::time::Duration;

use gpuworthy::choose::auto::Auto;
use gpuworthy::choose::catalog::{WorkloadEntry, WorkloadOf};
use gpuworthy::core::workload::describe_1d;
use gpuworthy::core::workloads::Len;
use gpuworthy::core::{Cost, Error, Implements, Mismatch, Precision, Result, Tolerance, Workload, rng};
use gpuworthy::cpu::CpuBackend;
use gpuworthy::measure::size::SizeRequest;
use gpuworthy::measure::{MeasureOptions, duration};
use gpuworthy::model::Placement;
use gpuworthy::model::sweep::SweepOptions;
use gpuworthy::{Device, DeviceWorkload, ErasedImplements};

/// Step 1: the workload, independent of where it runs.
struct Gelu;

/// `√(2/π)` and the cubic term's weight, as every kernel below writes them.
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
const CUBIC: f64 = 0.044_715;

/// The tolerance of a backend's GELU against the `f64` reference: a few ulp of the `f32` arithmetic, and an absolute
/// part for large negative `x`, where `1 + tanh` cancels to about 1e-4 and the result's relative error grows.
const TOLERANCE: Tolerance = Tolerance { absolute: 5e-6, relative: 2e-5 };

impl Workload for Gelu {
    const NAME: &'static str = "gelu";
    const LESSON: &'static str = "an elementwise kernel of your own, with a special function in it";
    type Params = Len;
    type Input = Vec<f32>;
    type Output = Vec<f32>;

    fn params(input: &Vec<f32>) -> Len {
        Len(input.len())
    }

    fn validate(_input: &Vec<f32>) -> Result<()> {
        Ok(())
    }

    fn generate(params: &Len, seed: u64) -> Result<Vec<f32>> {
        gpuworthy::core::memory::check_host_memory::<Self>(params)?;
        Ok(rng::uniform_f32(seed, 0, params.0, -4.0, 4.0))
    }

    fn reference(input: &Vec<f32>) -> Result<Vec<f32>> {
        Ok(input
            .iter()
            .map(|&x| {
                let x = x as f64;
                (0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + CUBIC * x * x * x)).tanh())) as f32
            })
            .collect())
    }

    fn check(_: &Vec<f32>, expected: &Vec<f32>, actual: &Vec<f32>, _: Precision) -> std::result::Result<(), Mismatch> {
        TOLERANCE.check_slices(expected, actual, describe_1d)
    }

    fn host_bytes(params: &Len) -> Option<u64> {
        (params.0 as u64).checked_mul(8)
    }

    /// One read and one write per element; 8 arithmetic operations and a tanh, counted as 10 more.
    fn cost(params: &Len) -> Cost {
        let n = params.0 as u64;
        Cost { bytes: 8 * n, flops: 18 * n, elements: n }
    }

    fn ladder() -> Vec<Len> {
        (10..=26).step_by(2).map(|p| Len(1 << p)).collect()
    }

    fn quick_ladder() -> Vec<Len> {
        vec![Len(1 << 10), Len(1 << 14), Len(1 << 18), Len(1 << 22)]
    }

    fn conformance_params() -> Vec<Len> {
        vec![Len(0), Len(1), Len(5), Len(1000)]
    }

    fn special_inputs() -> Vec<(&'static str, Vec<f32>)> {
        Vec::new()
    }
}

/// Step 2: the CPU, on the backend's thread pool. `scalar` is one thread; `parallel` splits the data across the pool.
impl Implements<Gelu> for CpuBackend {
    type Resident = (Vec<f32>, Vec<f32>);

    fn variants(&self) -> Vec<&'static str> {
        vec!["scalar", "parallel"]
    }

    fn best_variant(&self, params: &Len) -> &'static str {
        if params.0 < 1 << 16 { "scalar" } else { "parallel" }
    }

    fn prepare(&self, _variant: &str) -> Result<()> {
        Ok(())
    }

    fn upload(&self, input: &Vec<f32>) -> Result<Self::Resident> {
        Ok((input.clone(), vec![0.0; input.len()]))
    }

    fn launch(&self, variant: &str, (x, y): &mut Self::Resident) -> Result<()> {
        use gpuworthy::cpu::rayon::prelude::*;
        fn gelu(x: &[f32], y: &mut [f32]) {
            let (k, c) = (SQRT_2_OVER_PI as f32, CUBIC as f32);
            for (y, &x) in y.iter_mut().zip(x) {
                *y = 0.5 * x * (1.0 + (k * (x + c * x * x * x)).tanh());
            }
        }
        match variant {
            "scalar" => gelu(x, y),
            "parallel" => self.install(|| {
                y.par_chunks_mut(1 << 14).zip(x.par_chunks(1 << 14)).for_each(|(y, x)| gelu(x, y));
            }),
            other => return Err(Implements::<Gelu>::unknown_variant(self, other)),
        }
        Ok(())
    }

    fn download(&self, (_, y): &mut Self::Resident) -> Result<Vec<f32>> {
        Ok(y.clone())
    }
}

/// Step 3: CUDA, compiled from this source at the first launch and cached by the backend.
#[cfg(feature = "cuda")]
mod on_cuda {
    use gpuworthy::core::{Error, Implements, Result};
    use gpuworthy::cuda::cudarc::driver::{CudaSlice, PushKernelArg};
    use gpuworthy::cuda::{CudaBackend, launch_config};

    use super::{Gelu, Len};

    const SOURCE: &str = r#"
extern "C" __global__ void gelu(const float* __restrict__ x, float* __restrict__ y, int n) {
    const float k = 0.7978845608028654f, c = 0.044715f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(k * (v + c * v * v * v)));
    }
}
"#;
    const BLOCK: u32 = 256;

    /// The input and output on the device, and their length.
    pub struct OnDevice {
        x: CudaSlice<f32>,
        y: CudaSlice<f32>,
        n: usize,
    }

    impl Implements<Gelu> for CudaBackend {
        type Resident = OnDevice;

        fn variants(&self) -> Vec<&'static str> {
            vec!["naive"]
        }

        fn best_variant(&self, _: &Len) -> &'static str {
            "naive"
        }

        fn prepare(&self, _variant: &str) -> Result<()> {
            self.custom_kernel(SOURCE, "gelu", &[]).map(drop)
        }

        fn upload(&self, input: &Vec<f32>) -> Result<OnDevice> {
            if i32::try_from(input.len()).is_err() {
                return Err(Error::TooLarge { what: format!("{} elements", input.len()), limit: "2^31 - 1".into() });
            }
            Ok(OnDevice { x: self.buffer_from(input)?, y: self.buffer_zeroed(input.len())?, n: input.len() })
        }

        fn launch(&self, variant: &str, data: &mut OnDevice) -> Result<()> {
            if variant != "naive" {
                return Err(Implements::<Gelu>::unknown_variant(self, variant));
            }
            let kernel = self.custom_kernel(SOURCE, "gelu", &[])?;
            let blocks = (data.n as u64).div_ceil(BLOCK as u64).min(65535);
            let config = launch_config((blocks, 1), (BLOCK, 1), 0)?;
            let n = data.n as i32;
            self.with_stream(|stream| {
                let mut launch = stream.launch_builder(kernel.function());
                launch.arg(&data.x).arg(&mut data.y).arg(&n);
                // SAFETY: `gelu` takes (const float*, float*, int n) and touches elements below n of both buffers,
                // which hold n elements (one at least); the grid-stride loop covers n with any grid.
                unsafe { launch.launch(config) }
                    .map(drop)
                    .map_err(|e| Error::Device { backend: gpuworthy::core::BackendKind::Cuda, message: e.to_string() })
            })
        }

        fn download(&self, data: &mut OnDevice) -> Result<Vec<f32>> {
            self.read_buffer(&data.y, data.n)
        }
    }
}

/// Step 4: WGSL, made into a pipeline by the wgpu backend (naga checks it first) and dispatched inside its queue lock.
#[cfg(feature = "wgpu")]
mod on_wgpu {
    use gpuworthy::core::{Error, Implements, Result};
    use gpuworthy::wgpu::WgpuBackend;

    use super::{Gelu, Len};

    const SOURCE: &str = "
struct Params { n: u32, row: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn gelu(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x + id.y * params.row;
    if (i < params.n) {
        let v = x[i];
        // tanh of a clamped argument: tanh(±10) is ±1 in f32, and some drivers compute tanh through exp, which
        // overflows far beyond.
        let u = clamp(0.7978845608028654 * (v + 0.044715 * v * v * v), -10.0, 10.0);
        y[i] = 0.5 * v * (1.0 + tanh(u));
    }
}
";
    const WORKGROUP: u64 = 256;

    /// The buffers, their bind group and the grid.
    pub struct OnDevice {
        y: gpuworthy::wgpu::wgpu::Buffer,
        group: gpuworthy::wgpu::wgpu::BindGroup,
        grid: (u32, u32, u32),
        n: usize,
    }

    impl Implements<Gelu> for WgpuBackend {
        type Resident = OnDevice;

        fn variants(&self) -> Vec<&'static str> {
            vec!["naive"]
        }

        fn best_variant(&self, _: &Len) -> &'static str {
            "naive"
        }

        fn prepare(&self, _variant: &str) -> Result<()> {
            self.custom_pipeline(SOURCE, "gelu").map(drop)
        }

        fn upload(&self, input: &Vec<f32>) -> Result<OnDevice> {
            let bytes = 4 * input.len() as u64;
            if bytes > self.max_storage_binding_bytes() || u32::try_from(input.len()).is_err() {
                return Err(Error::TooLarge {
                    what: format!("{} elements ({bytes} bytes)", input.len()),
                    limit: format!("one storage binding of {} bytes on this adapter", self.max_storage_binding_bytes()),
                });
            }
            let pipeline = self.custom_pipeline(SOURCE, "gelu")?;
            let groups = (input.len() as u64).div_ceil(WORKGROUP);
            let across = groups.min(self.max_workgroups_per_dimension() as u64).max(1);
            let grid = (across as u32, groups.div_ceil(across) as u32, 1);
            let params = [input.len() as u32, (across * WORKGROUP) as u32];
            let uniform = self.uniform_buffer("gelu params", &params)?;
            let x = self.storage_buffer("gelu x", input)?;
            let y = self.zeroed_storage_buffer("gelu y", bytes)?;
            let group = self.bind_buffers(&pipeline, &[(0, &uniform), (1, &x), (2, &y)])?;
            Ok(OnDevice { y, group, grid, n: input.len() })
        }

        fn launch(&self, variant: &str, data: &mut OnDevice) -> Result<()> {
            if variant != "naive" {
                return Err(Implements::<Gelu>::unknown_variant(self, variant));
            }
            if data.n == 0 {
                return Ok(());
            }
            let pipeline = self.custom_pipeline(SOURCE, "gelu")?;
            self.dispatch(&pipeline, &data.group, data.grid)
        }

        fn download(&self, data: &mut OnDevice) -> Result<Vec<f32>> {
            self.read_buffer(&data.y, data.n)
        }
    }
}

/// Step 5: tell the run-time `Device` which backends have it.
impl DeviceWorkload for Gelu {
    fn on_cpu(backend: &CpuBackend) -> Option<&dyn ErasedImplements<Self>> {
        Some(backend)
    }

    #[cfg(feature = "cuda")]
    fn on_cuda(backend: &gpuworthy::cuda::CudaBackend) -> Option<&dyn ErasedImplements<Self>> {
        Some(backend)
    }

    #[cfg(feature = "wgpu")]
    fn on_wgpu(backend: &gpuworthy::wgpu::WgpuBackend) -> Option<&dyn ErasedImplements<Self>> {
        Some(backend)
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("06_own_workload: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let opened = Device::all_available();
    for (spec, why) in &opened.unavailable {
        println!("{spec}: not here ({why})");
    }
    let devices = opened.devices;

    // Every variant on every device: checked against the reference, each phase timed.
    let size = Len(1 << 20);
    let input = Gelu::generate(&size, 1)?;
    println!("\n{} at {size} elements, every backend and variant (median of each phase):", Gelu::NAME);
    println!(
        "  {:<10} {:<9} {:>10} {:>10} {:>10} {:>10} {:>12}  check",
        "device", "variant", "compile", "upload", "kernel", "download", "end to end"
    );
    let t = |d: Duration| duration(d);
    for device in &devices {
        for variant in device.variants::<Gelu>() {
            let m = device.measure::<Gelu>(variant, &input, &MeasureOptions::quick())?;
            let check = match &m.check {
                Some(Ok(())) => "ok".to_owned(),
                Some(Err(e)) => format!("FAILED: {e}"),
                None => "not checked".to_owned(),
            };
            println!(
                "  {:<10} {:<9} {:>10} {:>10} {:>10} {:>10} {:>12}  {check}",
                device.label(),
                variant,
                t(m.compile),
                t(m.upload.median),
                t(m.kernel.median),
                t(m.download.median),
                t(m.end_to_end.median)
            );
            if m.check.as_ref().is_some_and(|c| c.is_err()) {
                return Err(Error::invalid(format!("{} {variant} does not match the reference", device.label())));
            }
        }
    }

    // The sweep, through the run-time list's entry for this workload: where does a GPU start to win?
    let entry = WorkloadOf::<Gelu>::sized_by_text();
    let options = SweepOptions { budget: Duration::from_secs(2), ..SweepOptions::default() };
    println!(
        "\nsweep over {:?} (best variant per device; kernel | data from the host):",
        entry.sizes(&SizeRequest::quick())?
    );
    let sweep = entry.sweep(&devices, &SizeRequest::quick(), &options, &())?;
    for size in gpuworthy::model::rows::sizes(&sweep.rows) {
        let cells: Vec<String> = gpuworthy::model::rows::labels(&sweep.rows, |_| true)
            .iter()
            .filter_map(|label| {
                let kernel = gpuworthy::model::rows::best(&sweep.rows, &size, label, |r| r.kernel_s)?;
                let host = gpuworthy::model::rows::best(&sweep.rows, &size, label, |r| r.host_time())?;
                let s = |x: f64| t(Duration::from_secs_f64(x));
                Some(format!("{label} {} | {}", s(kernel.kernel_s), s(host.host_time())))
            })
            .collect();
        println!("  {size:>9}: {}", cells.join("   "));
    }
    if let Some(failed) = sweep.failed_checks().next() {
        return Err(Error::invalid(format!("{} at {}: {}", failed.label, failed.size, failed.check)));
    }
    match &sweep.crossover {
        Some(crossover) => {
            let show = gpuworthy::model::crossover::describe;
            println!(
                "crossover: data resident {}; data on the host {}",
                show(&crossover.resident),
                show(&crossover.host)
            );
            println!("verdict: {}", crossover.verdict);
        }
        None => println!("crossover: no GPU here to compare with the CPU"),
    }

    // Calibrate this one workload and let auto place it, with its reason.
    let calibration = gpuworthy::choose::catalog::calibrate(&devices, &[&entry], &());
    println!("\ncalibrated {} in {:.1} s", Gelu::NAME, calibration.took_s);
    let auto = Auto::with_model(devices.clone(), calibration.model);
    for (params, placement) in
        [(Len(1 << 12), Placement::Host), (Len(1 << 24), Placement::Host), (Len(1 << 24), Placement::Resident)]
    {
        let choice = auto.choose::<Gelu>(&params, placement)?;
        let pipelined = if choice.pipelined { ", pipelined" } else { "" };
        println!(
            "auto, {params} elements, {placement}: {} {}{pipelined} ({})",
            choice.device.label(),
            choice.variant,
            choice.reason
        );
    }
    Ok(())
}
