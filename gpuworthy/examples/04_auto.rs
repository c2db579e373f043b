//! Letting the cost model choose: `gpuworthy::choose::auto::run` places each call where the calibrated model predicts it
//! fastest (run `gpuworthy calibrate` once first; without a calibration it keeps to the CPU unless the data is
//! resident and large), and says why.
//!
//! ```text
//! gpuworthy calibrate
//! cargo run --release -p gpuworthy --example 04_auto
//! ```

use gpuworthy::core::workloads::{Len, Matmul, MatmulParams, Square};
use gpuworthy::core::{Result, Workload};
use gpuworthy::model::Placement;

fn main() -> Result<()> {
    // Data on the host, result wanted there: a GPU pays both transfers.
    for n in [1 << 12, 1 << 20, 1 << 24] {
        let input = Square::generate(&Len(n), 1)?;
        let (output, choice) = gpuworthy::choose::auto::run::<Square>(&input)?;
        println!(
            "square {}: {} {} ({}); {} values",
            Len(n),
            choice.device.label(),
            choice.variant,
            choice.reason,
            output.len()
        );
    }
    let params = MatmulParams::square(1024);
    let input = Matmul::generate(&params, 1)?;
    let (_, choice) = gpuworthy::choose::auto::run::<Matmul>(&input)?;
    println!("matmul {params}: {} {} ({})", choice.device.label(), choice.variant, choice.reason);

    // Data that will stay on the device across launches: only the kernels compete.
    let (mut resident, choice) = gpuworthy::choose::auto::upload::<Square>(&Square::generate(&Len(1 << 24), 2)?)?;
    for _ in 0..10 {
        choice.device.launch(choice.variant, &mut resident)?;
    }
    let squared = choice.device.download(&mut resident)?;
    println!(
        "square 2^24, resident for 10 launches: {} {} ({}); {} values",
        choice.device.label(),
        choice.variant,
        choice.reason,
        squared.len()
    );

    // The same decision without running anything: each device's predicted phases.
    let auto = gpuworthy::choose::auto::global()?;
    let choice = auto.choose::<Square>(&Len(1 << 26), Placement::Host)?;
    for p in &choice.predictions {
        println!(
            "  predicted for square 2^26 on {:<9} {:<7} upload {:.3} ms, kernel {:.3} ms, download {:.3} ms",
            p.device,
            p.variant,
            p.upload_s * 1e3,
            p.kernel_s * 1e3,
            p.download_s * 1e3
        );
    }
    Ok(())
}
