//! The crossover of one workload: sweep sum over sizes on every device here, and print each device's best time per
//! size (kernel with the data resident; end to end with it on the host) and the size from which a GPU wins.
//!
//! ```text
//! cargo run --release -p gpuworthy --example 05_crossover
//! ```
//!
//! `gpuworthy sweep sum` does the same with a table, plots and exports.

use gpuworthy::Device;
use gpuworthy::core::Workload;
use gpuworthy::core::workloads::Sum;
use gpuworthy::measure::duration;
use gpuworthy::model::rows::{best, labels, sizes};
use gpuworthy::model::sweep::{SweepOptions, sweep_workload};
use std::time::Duration;

fn main() {
    let opened = Device::all_available();
    let sweep = sweep_workload::<Sum>(&opened.devices, &Sum::quick_ladder(), &SweepOptions::default(), &());
    let t = |s: f64| duration(Duration::from_secs_f64(s));
    for size in sizes(&sweep.rows) {
        print!("sum {size:>6}:");
        for label in labels(&sweep.rows, |_| true) {
            let resident = best(&sweep.rows, &size, &label, |r| r.kernel_s);
            let host = best(&sweep.rows, &size, &label, |r| r.host_time());
            if let (Some(resident), Some(host)) = (resident, host) {
                print!("  {label} {} resident, {} from the host", t(resident.kernel_s), t(host.host_time()));
            }
        }
        println!();
    }
    match &sweep.crossover {
        Some(c) => {
            let show = gpuworthy::model::crossover::describe;
            println!("crossover, data resident: {}; data on the host: {}", show(&c.resident), show(&c.host));
            println!("{}", c.verdict);
        }
        None => println!("no GPU here: nothing to cross over to (the CPU is the only device)"),
    }
}
