//! Prints the WGSL the wgpu backend generates for an expression, so that a kernel shape can be tried in the lab
//! (`wgsl_lab`) starting from what the backend runs today, and so that a reader can see what their expression became.
//!
//! ```text
//! cargo run -p gpuworthy-wgpu --example expr_wgsl_source -- 'y = a*x + b' a,b [f32|f16|bf16] [subgroups] [two-pass]
//! ```
//!
//! The second argument names the scalars (`-` for none). A reduction is printed in its one-pass form (Vulkan's), or
//! with `two-pass` in the form with a second dispatch (Metal's, DX12's and GL's; `ReductionFinish`). f16 is printed
//! with the rounding in integer arithmetic; an adapter whose `pack2x16float` rounds to nearest even gets the
//! one-instruction form instead (`F16Narrowing`).

use gpuworthy_core::Dtype;
use gpuworthy_core::expr::Expr;
use gpuworthy_wgpu::expr::{F16Narrowing, ReductionFinish, elementwise_source, reduction_source};

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(source), Some(scalars)) = (args.first(), args.get(1)) else {
        eprintln!("usage: expr_wgsl_source EXPRESSION SCALARS|- [f32|f16|bf16] [subgroups] [two-pass]");
        return std::process::ExitCode::FAILURE;
    };
    let scalars: Vec<&str> = if scalars == "-" { Vec::new() } else { scalars.split(',').collect() };
    let dtype = match args.get(2).map(String::as_str) {
        None | Some("f32") => Dtype::F32,
        Some("f16") => Dtype::F16,
        Some("bf16") => Dtype::Bf16,
        Some(other) => {
            eprintln!("expr_wgsl_source: `{other}` is not f32, f16 or bf16");
            return std::process::ExitCode::FAILURE;
        }
    };
    let options = args.get(3..).unwrap_or_default();
    if let Some(other) = options.iter().find(|word| !matches!(word.as_str(), "subgroups" | "two-pass")) {
        eprintln!("expr_wgsl_source: `{other}` is not `subgroups` or `two-pass`");
        return std::process::ExitCode::FAILURE;
    }
    let subgroups = options.iter().any(|word| word == "subgroups");
    let finish = if options.iter().any(|word| word == "two-pass") {
        ReductionFinish::SecondPass
    } else {
        ReductionFinish::LastWorkgroup
    };
    let program = match Expr::parse(source).and_then(|expr| expr.bind(&scalars)) {
        Ok(program) => program,
        Err(e) => {
            eprintln!("expr_wgsl_source: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if program.reduction.is_some() {
        print!("{}", reduction_source(&program, subgroups, dtype, finish));
    } else {
        print!("{}", elementwise_source(&program, dtype, F16Narrowing::Integer));
    }
    std::process::ExitCode::SUCCESS
}
