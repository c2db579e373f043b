//! Measures softmax's wgpu kernels at 8192 x 8192 again and again in one process, in the orders `gpuworthy run` uses
//! and others (with and without the reference check, after idle time, with a resident held across measurements),
//! printing each kernel median: the probe behind `docs/results/nvidia-h200/softmax-probe.txt`, written to find out
//! when the fused kernel runs slow.
//!
//! ```text
//! cargo run --release -p gpuworthy --example softmax_probe
//! ```

use std::time::{Duration, Instant};

use gpuworthy::core::workloads::{Shape2, Softmax};
use gpuworthy::core::{Backend, Implements, Workload};
use gpuworthy::measure::{MeasureOptions, measure};
use gpuworthy::wgpu::WgpuBackend;

fn main() {
    let backend = match WgpuBackend::new() {
        Ok(backend) => backend,
        Err(e) => {
            eprintln!("softmax_probe: {e}");
            std::process::exit(1);
        }
    };
    let input = Softmax::generate(&Shape2::square(8192), 1).expect("a valid shape");
    let epoch = Instant::now();
    let mut quick = MeasureOptions::quick();
    let step = |label: &str, variant: &str, validate: bool, quick: &mut MeasureOptions| {
        quick.validate = validate;
        let m = measure::<Softmax, _>(&backend, variant, &input, quick).expect("the measurement runs");
        println!(
            "{:>7.2} s  {label:<48} {variant:<8} validate={validate:<5} spin_up={:>3} ms  kernel {:>7.1} µs (p25 {:.1}, p75 {:.1})",
            epoch.elapsed().as_secs_f64(),
            quick.spin_up.as_millis(),
            m.kernel.median.as_secs_f64() * 1e6,
            m.kernel.p25.as_secs_f64() * 1e6,
            m.kernel.p75.as_secs_f64() * 1e6,
        );
    };
    for round in 0..4 {
        for spin in [0u64, 300] {
            quick.spin_up = Duration::from_millis(spin);
            step(&format!("0 alternate spin-up, round {round}"), "fused", false, &mut quick);
            step(&format!("0 alternate spin-up, round {round}"), "unfused", false, &mut quick);
        }
    }
    quick.spin_up = MeasureOptions::quick().spin_up;
    step("1 fused alone", "fused", false, &mut quick);
    step("2 unfused", "unfused", true, &mut quick);
    step("2 then fused, no check", "fused", false, &mut quick);
    step("3 unfused", "unfused", true, &mut quick);
    step("3 then fused, check", "fused", true, &mut quick);
    step("3 then fused again, no check", "fused", false, &mut quick);
    std::thread::sleep(Duration::from_secs(3));
    step("4 after 3 s idle, fused no check", "fused", false, &mut quick);
    let t = Instant::now();
    let reference = Softmax::reference(&input).expect("the reference runs");
    println!("reference took {:.1} s", t.elapsed().as_secs_f64());
    drop(reference);
    step("5 after a reference on the host, fused no check", "fused", false, &mut quick);
    step("6 unfused no check", "unfused", false, &mut quick);
    step("6 then fused, check", "fused", true, &mut quick);
    step("7 fused check", "fused", true, &mut quick);
    step("7 fused check", "fused", true, &mut quick);
    // A resident held across measurements: time its launch directly.
    let mut resident = Implements::<Softmax>::upload(&backend, &input).expect("the upload runs");
    for round in 0..3 {
        let mut times = Vec::new();
        for _ in 0..20 {
            times.push(
                backend
                    .time_on_device(&mut || Implements::<Softmax>::launch(&backend, "fused", &mut resident))
                    .expect("the launch runs")
                    .as_secs_f64()
                    * 1e6,
            );
        }
        times.sort_by(f64::total_cmp);
        println!(
            "8 one resident, round {round}: fused median {:.1} µs (min {:.1}, max {:.1})",
            times[10], times[0], times[19]
        );
        step("8 unfused check in between", "unfused", true, &mut quick);
    }
    // Fresh allocations while that resident stays: each new input timed with both kernels, 20 launches each.
    let median_of = |resident: &mut _, variant: &str| {
        let mut times: Vec<f64> = (0..20)
            .map(|_| {
                backend
                    .time_on_device(&mut || Implements::<Softmax>::launch(&backend, variant, resident))
                    .expect("the launch runs")
                    .as_secs_f64()
                    * 1e6
            })
            .collect();
        times.sort_by(f64::total_cmp);
        times[10]
    };
    for allocation in 0..8 {
        let mut fresh = Implements::<Softmax>::upload(&backend, &input).expect("the upload runs");
        let unfused = median_of(&mut fresh, "unfused");
        let fused = median_of(&mut fresh, "fused");
        let held = median_of(&mut resident, "fused");
        println!(
            "9 fresh input {allocation}: unfused {unfused:.1} µs, fused {fused:.1} µs; the held input's fused {held:.1} µs"
        );
    }
}
