//! Timing honestly, and dishonestly: one kernel timed by a host clock without synchronising (wrong on purpose: a GPU
//! launch returns as soon as the kernel is queued), by a host clock after synchronising, and by the device's own
//! timer; then the first call (compilation) against a warm one.
//!
//! ```text
//! cargo run --release -p gpuworthy --example 02_timing
//! GPUWORTHY_BACKEND=cuda cargo run --release -p gpuworthy --example 02_timing
//! ```
//!
//! `gpuworthy run square --size 2^24 --backend cuda --no-sync` prints the same comparison for any workload.

use std::time::Instant;

use gpuworthy::Device;
use gpuworthy::core::workloads::{Len, Square};
use gpuworthy::core::{Backend, Result, Workload};
use gpuworthy::measure::{MeasureOptions, compare_clocks, duration};

fn main() -> Result<()> {
    let device = Device::from_env()?;
    let size = Len(1 << 24);
    let input = Square::generate(&size, 1)?;
    let variant = device.best_variant::<Square>(&size);
    println!("square {size} ({variant}) on {device}");

    // The first call pays for compiling the kernel (NVRTC, or a wgpu pipeline) and for the first transfers.
    let start = Instant::now();
    device.run::<Square>(variant, &input)?;
    println!("  first call, end to end:      {}", duration(start.elapsed()));
    let start = Instant::now();
    device.run::<Square>(variant, &input)?;
    println!("  second call, end to end:     {}", duration(start.elapsed()));

    let clocks = compare_clocks::<Square, _>(&device, variant, &input, &MeasureOptions::quick())?;
    println!("  one launch, host clock, no synchronise (wrong): {}", duration(clocks.launch_unsynchronised.median));
    println!("  one launch, host clock, synchronised:           {}", duration(clocks.launch_synchronised.median));
    println!(
        "  one launch, device timer ({}):{}{}",
        device.kernel_clock(),
        " ".repeat(20usize.saturating_sub(device.kernel_clock().to_string().len())),
        duration(clocks.device_timer.median)
    );
    Ok(())
}
