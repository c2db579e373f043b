//! The first kernel: square a million floats on every backend this machine has (the CPU, a CUDA GPU, a wgpu
//! adapter), with every variant each backend offers, and check each result against the scalar reference.
//!
//! ```text
//! cargo run --release -p gpuworthy --example 01_first_kernel
//! ```
//!
//! What to notice: the same call (`device.run::<Square>(variant, &input)`) runs a Rust loop, CUDA C compiled at run
//! time by NVRTC, or a WGSL shader; a backend this machine lacks is named with the reason, not a crash.

use gpuworthy::Device;
use gpuworthy::core::workloads::{Len, Square};
use gpuworthy::core::{Result, Workload};

fn main() -> Result<()> {
    let size = Len(1 << 20);
    let input = Square::generate(&size, 1)?;
    let expected = Square::reference(&input)?;
    let opened = Device::all_available();
    for device in &opened.devices {
        println!("{device}");
        for variant in device.variants::<Square>() {
            let output = device.run::<Square>(variant, &input)?;
            let check = match Square::check(&input, &expected, &output, device.precision::<Square>(variant)) {
                Ok(()) => "matches the reference".to_owned(),
                Err(mismatch) => format!("WRONG: {mismatch}"),
            };
            println!("  square {size} with {variant:<8} first values {:?}: {check}", &output[..3]);
        }
    }
    for (spec, why) in &opened.unavailable {
        println!("{spec}: not here ({why})");
    }
    Ok(())
}
