//! Choosing where work runs, from a program of your own: open the device named by `GPUWORTHY_BACKEND` (or the best
//! available: a GPU if one is usable, else the CPU), run saxpy on it once, then keep softmax's data resident on it
//! across ten launches, checking both against the reference and printing what ran where.
//!
//! ```text
//! cargo run --release -p gpuworthy --example 03_choose_device
//! GPUWORTHY_BACKEND=wgpu cargo run --release -p gpuworthy --example 03_choose_device
//! GPUWORTHY_BACKEND=cuda:1 cargo run --release -p gpuworthy --example 03_choose_device
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};

use gpuworthy::core::workloads::{Saxpy, SaxpyParams, Shape2, Softmax};
use gpuworthy::core::{Backend, Error, Result, Workload};
use gpuworthy::{Device, DeviceSpec};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("03_choose_device: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let asked = DeviceSpec::from_env()?;
    let device = Device::from_env()?;
    match &asked {
        Some(spec) => println!("device: {device}  (GPUWORTHY_BACKEND={spec})"),
        None => {
            println!("device: {device}  (the best available; set GPUWORTHY_BACKEND to choose)");
            if !device.is_gpu() {
                explain_why_no_gpu();
            }
        }
    }

    // One job, end to end: the data starts and ends in host memory.
    let params = SaxpyParams::new(1 << 20);
    let input = Saxpy::generate(&params, 1)?;
    let variant = device.best_variant::<Saxpy>(&params);
    device.prepare::<Saxpy>(variant)?;
    let start = Instant::now();
    let y = device.run::<Saxpy>(variant, &input)?;
    let end_to_end = start.elapsed();
    check::<Saxpy>(&device, variant, &input, &y)?;
    println!("saxpy {params} ({variant}): {} end to end (a first call), matches the reference", show(end_to_end));

    // Data kept on the device: one upload, ten launches, one download.
    let shape = Shape2::new(1024, 1024);
    let input = Softmax::generate(&shape, 2)?;
    let variant = device.best_variant::<Softmax>(&shape);
    let compile = Instant::now();
    device.prepare::<Softmax>(variant)?;
    let compile = compile.elapsed();
    let start = Instant::now();
    let mut resident = device.upload::<Softmax>(&input)?;
    device.synchronize()?;
    let upload = start.elapsed();
    let start = Instant::now();
    for _ in 0..10 {
        device.launch(variant, &mut resident)?;
    }
    device.synchronize()?;
    let launches = start.elapsed();
    let start = Instant::now();
    let rows = device.download(&mut resident)?;
    let download = start.elapsed();
    check::<Softmax>(&device, variant, &input, &rows)?;
    println!(
        "softmax {shape} ({variant}), resident across 10 launches: compile {}, upload {}, 10 launches {} ({} each), \
         download {}, matches the reference",
        show(compile),
        show(upload),
        show(launches),
        show(launches / 10),
        show(download)
    );
    println!("both ran on {} ({}, {})", device.label(), device.device().name, device.kernel_clock());
    Ok(())
}

/// Checks `output` against the scalar reference at the variant's tolerance.
fn check<W: gpuworthy::DeviceWorkload>(
    device: &Device,
    variant: &str,
    input: &W::Input,
    output: &W::Output,
) -> Result<()> {
    let expected = W::reference(input)?;
    W::check(input, &expected, output, device.precision::<W>(variant))
        .map_err(|m| Error::invalid(format!("{} on {} does not match the reference: {m}", W::NAME, device.label())))
}

/// Says why each GPU backend was passed over.
fn explain_why_no_gpu() {
    let opened = Device::all_available();
    for gpu in opened.devices.iter().filter(|d| d.kind().is_gpu()) {
        println!("  not chosen: {gpu} is a CPU adapter, not a GPU");
    }
    for (spec, why) in &opened.unavailable {
        println!("  not chosen: {spec}: {why}");
    }
}

/// A duration in the unit that suits it.
fn show(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}
