//! A raw kernel: the `square_matrix_kernel` of torch's `load_inline` tutorial (CUDA C over a 2D grid of 16 x 16
//! blocks), ported as it is, with a WGSL twin and a CPU function beside it. Each backend runs its own body, is checked
//! against the reference expression `result = matrix * matrix`, and is timed phase by phase; then the kernel is
//! swept to its crossover, calibrated, and placed by `auto`, which says why. `mean3`, a kernel that reads its
//! neighbours (what no expression can say, so its CPU function is its reference), is swept after it.
//!
//! ```text
//! cargo run --release -p gpuworthy --example 08_raw_kernel
//! ```
//!
//! In Python the kernel went through `torch.utils.cpp_extension.load_inline` with a C++ wrapper that computed the grid;
//! here the signature says what the wrapper said (one input, one output, a grid shape), and the launch follows the
//! raw-kernel convention (`gpuworthy::core::raw`): inputs, outputs, scalars, then `int width, int height`.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use gpuworthy::Device;

#[path = "kernels/mean3.rs"]
mod mean3;
use gpuworthy::choose::auto::Auto;
use gpuworthy::choose::catalog::{WorkloadEntry, WorkloadOf};
use gpuworthy::core::raw::{Raw, RawKernel, RawParams, Shape};
use gpuworthy::core::{Error, Result, Workload};
use gpuworthy::measure::size::SizeRequest;
use gpuworthy::measure::{MeasureOptions, duration};
use gpuworthy::model::Placement;
use gpuworthy::model::sweep::SweepOptions;
use mean3::neighbourhood_mean;

/// The tutorial's kernel, unchanged but for `extern "C"` (NVRTC looks entry points up by their C name).
const CUDA: &str = r#"
extern "C" __global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < height && col < width) {
        int idx = row * width + col;
        result[idx] = matrix[idx] * matrix[idx];
    }
}
"#;

/// Its WGSL twin: the same 16 x 16 workgroups; binding 0 holds the shape.
const WGSL: &str = "
struct Shape { width: u32, height: u32, row: u32 }
@group(0) @binding(0) var<uniform> shape: Shape;
@group(0) @binding(1) var<storage, read> matrix: array<f32>;
@group(0) @binding(2) var<storage, read_write> result: array<f32>;

@compute @workgroup_size(16, 16)
fn square_matrix(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.y < shape.height && id.x < shape.width) {
        let idx = id.y * shape.width + id.x;
        result[idx] = matrix[idx] * matrix[idx];
    }
}
";

/// The kernel: its signature, three bodies and its reference.
fn square_matrix() -> Result<RawKernel> {
    Ok(RawKernel::new("square_matrix", &["matrix"], &["result"], &[])?
        .cuda(CUDA, "square_matrix_kernel", (16, 16))?
        .wgsl(WGSL, "square_matrix")?
        // The CPU body runs on the backend's thread pool: rayon's parallel iterators use every core.
        .cpu(|args, outputs| {
            use gpuworthy::cpu::rayon::prelude::*;
            outputs[0].par_iter_mut().zip(args.inputs[0]).with_min_len(1 << 14).for_each(|(y, x)| *y = x * x);
        })
        .reference("result = matrix * matrix")?
        .flops_per_element(1))
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("08_raw_kernel: {e}");
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
    let kernel = Arc::new(square_matrix()?);

    // As the tutorial called it: a matrix in, its square out, by name.
    let matrix = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    for device in &devices {
        let out = device.run_raw(&kernel, Shape::Grid { width: 3, height: 2 }, &[("matrix", &matrix)], &[])?;
        println!("{}: {:?}", device.label(), out.array("result").unwrap_or_default());
    }

    // Every device at 1024 x 1024, checked against the reference and timed phase by phase.
    let params = RawParams::new(Arc::clone(&kernel), Shape::Grid { width: 1024, height: 1024 }, vec![])?;
    let input = Raw::generate(&params, 1)?;
    println!("\n{} at {params} (median of each phase):", kernel.name());
    println!(
        "  {:<10} {:>10} {:>10} {:>10} {:>10} {:>12}  check",
        "device", "compile", "upload", "kernel", "download", "end to end"
    );
    let t = |d: Duration| duration(d);
    for device in &devices {
        let m = device.measure::<Raw>(device.best_variant::<Raw>(&params), &input, &MeasureOptions::quick())?;
        let check = match &m.check {
            Some(Ok(())) => "ok".to_owned(),
            Some(Err(e)) => format!("FAILED: {e}"),
            None => "not checked".to_owned(),
        };
        println!(
            "  {:<10} {:>10} {:>10} {:>10} {:>10} {:>12}  {check}",
            device.label(),
            t(m.compile),
            t(m.upload.median),
            t(m.kernel.median),
            t(m.download.median),
            t(m.end_to_end.median)
        );
        if m.check.as_ref().is_some_and(|c| c.is_err()) {
            return Err(Error::invalid(format!("{} does not match the reference", device.label())));
        }
    }

    // The sweep over square grids: from what size does a GPU win?
    let entry = sweep(&params, &devices)?;

    // The kernel that needs a raw kernel, `mean3` (its neighbours), swept the same way over lines.
    let mean3 = RawParams::new(Arc::new(neighbourhood_mean()?), Shape::Line(1 << 20), vec![])?;
    sweep(&mean3, &devices)?;

    // Calibrate the kernel and let auto place it, with its reason.
    let calibration = gpuworthy::choose::catalog::calibrate(&devices, &[&entry], &());
    println!("\ncalibrated {} in {:.1} s", kernel.name(), calibration.took_s);
    let auto = Auto::with_model(devices.clone(), calibration.model);
    for (side, placement) in [(64, Placement::Host), (4096, Placement::Host), (4096, Placement::Resident)] {
        let at = params.with_shape(Shape::Grid { width: side, height: side });
        let choice = auto.choose::<Raw>(&at, placement)?;
        let pipelined = if choice.pipelined { ", pipelined" } else { "" };
        println!("auto, {at}, {placement}: {}{pipelined} ({})", choice.device.label(), choice.reason);
    }
    println!("({} moves {} bytes per element)", Raw::NAME, Raw::cost(&params).bytes / params.len().max(1) as u64);
    Ok(())
}

/// Sweeps `params`'s kernel over its size ladder on every device, prints each size's best kernel and run from the
/// host per device, the crossover and the verdict, and returns the kernel's entry for calibration.
fn sweep(params: &RawParams, devices: &[Device]) -> Result<WorkloadOf<Raw>> {
    let t = |d: Duration| duration(d);
    let entry = gpuworthy::user_code::raw::raw_entry(params);
    let options = SweepOptions { budget: Duration::from_secs(2), ..SweepOptions::default() };
    println!(
        "\n{}: sweep over {:?} (kernel | data from the host):",
        params.kernel.name(),
        entry.sizes(&SizeRequest::quick())?
    );
    let sweep = entry.sweep(devices, &SizeRequest::quick(), &options, &())?;
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
    Ok(entry)
}
