//! Your own computation as one line of arithmetic: an expression, run on every device this machine has, checked
//! against its `f64` reference, timed phase by phase, then placed by `auto`, which says why.
//!
//! ```text
//! cargo run --release -p gpuworthy --example 07_your_expression
//! ```
//!
//! The same expression, in the forms its readers know:
//!
//! ```text
//! CuPy:    cp.ElementwiseKernel("float32 x", "float32 y", "y = expf(-x * x) * sinf(3 * x)", "damped")(x)
//! numexpr: ne.evaluate("exp(-x * x) * sin(3 * x)")
//! Numba:   @vectorize(["float32(float32)"], target="cuda") def damped(x): return math.exp(-x * x) * math.sin(3 * x)
//! ```
//!
//! gpuworthy generates the CPU's evaluation, CUDA C and WGSL from the parsed expression (never from its text), so the
//! question "is it worth the GPU?" is answered for it as for the built-in workloads.

use std::process::ExitCode;

use gpuworthy::Device;
use gpuworthy::core::expr::{Expr, Expression};
use gpuworthy::core::{Result, Workload};
use gpuworthy::measure::{MeasureOptions, duration};
use gpuworthy::user_code::expression::{expression_input, run_expr_auto};

const SOURCE: &str = "y = exp(-x * x) * sin(a * x)";

fn run() -> Result<()> {
    // Step 1: parse. A mistake is an error with a caret under the part that is wrong.
    let broken = "y = exp(-x * x) * sinc(3 * x)";
    if let Err(e) = Expr::parse(broken) {
        println!("a mistake, as the user sees it:\n{}\n", e.render(broken));
    }
    let expr = Expr::parse(SOURCE).map_err(|e| e.into_error(SOURCE))?;

    // Step 2: run it by name, with arrays and scalars by name, on every device here.
    let x: Vec<f32> = (0..1 << 20).map(|i| (i as f32 / (1 << 19) as f32) - 1.0).collect();
    let opened = Device::all_available();
    for device in &opened.devices {
        let out = device.run_expr(&expr, &[("x", &x)], &[("a", 3.0)])?;
        let y = out.array("y").unwrap_or_default();
        println!("{}: y[0] = {:.6}, y[n/2 + 1] = {:.6}", device.label(), y[0], y[y.len() / 2 + 1]);
    }

    // Step 3: measure it like a workload: every phase, checked against the bounded f64 reference.
    let input = expression_input(&expr, &[("x", &x)], &[("a", 3.0)])?;
    for device in &opened.devices {
        let variant = device.best_variant::<Expression>(&input.params);
        let m = device.measure::<Expression>(variant, &input, &MeasureOptions::quick())?;
        let check = match &m.check {
            Some(Ok(())) => "matches the reference".to_owned(),
            Some(Err(e)) => format!("FAILS its check: {e}"),
            None => "not checked".to_owned(),
        };
        println!(
            "{} ({variant}): compile {}, kernel {} ({:.1} GB/s), end to end {}; {check}",
            device.label(),
            duration(m.compile),
            duration(m.kernel.median),
            m.gb_per_s(m.kernel.median),
            duration(m.end_to_end.median),
        );
    }
    let per_element = input.params.program.cost_per_element();
    let cost = Expression::cost(&input.params);
    println!(
        "its cost: {} bytes moved, {} arithmetic operations and {} special functions per element",
        cost.bytes, per_element.flops, per_element.special
    );

    // Step 4: let auto place it, and say why.
    let (out, choice) = run_expr_auto(&expr, &[("x", &x)], &[("a", 3.0)])?;
    println!("auto ran it on {} ({}): {}", choice.device.label(), choice.variant, choice.reason);
    println!("y has {} values", out.array("y").map_or(0, <[f32]>::len));
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("07_your_expression: {e}");
            ExitCode::FAILURE
        }
    }
}
