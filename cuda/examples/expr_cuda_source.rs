//! Prints the CUDA C the CUDA backend generates for an expression (NVRTC compiles it at run time), so that a kernel
//! shape can be tried in a lab starting from what the backend runs today, and so that a reader can see what their
//! expression became. Needs no GPU: nothing is compiled or run.
//!
//! ```text
//! cargo run -p gpuworthy-cuda --example expr_cuda_source -- 's = sum(x*x)' - [f32|f16|bf16]
//! ```
//!
//! The second argument names the scalars (`-` for none). An elementwise expression prints the kernel its launches
//! take once compiled (`expr_map`), a reduction its one kernel (`expr_reduce`).

use gpuworthy_core::Dtype;
use gpuworthy_core::expr::Expr;
use gpuworthy_cuda::expr::{elementwise_source, reduction_source};

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(source), Some(scalars)) = (args.first(), args.get(1)) else {
        eprintln!("usage: expr_cuda_source EXPRESSION SCALARS|- [f32|f16|bf16]");
        return std::process::ExitCode::FAILURE;
    };
    let scalars: Vec<&str> = if scalars == "-" { Vec::new() } else { scalars.split(',').collect() };
    let dtype = match args.get(2).map(String::as_str) {
        None | Some("f32") => Dtype::F32,
        Some("f16") => Dtype::F16,
        Some("bf16") => Dtype::Bf16,
        Some(other) => {
            eprintln!("expr_cuda_source: `{other}` is not f32, f16 or bf16");
            return std::process::ExitCode::FAILURE;
        }
    };
    let program = match Expr::parse(source).and_then(|expr| expr.bind(&scalars)) {
        Ok(program) => program,
        Err(e) => {
            eprintln!("expr_cuda_source: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if program.reduction.is_some() {
        print!("{}", reduction_source(&program, dtype));
    } else {
        print!("{}", elementwise_source(&program, dtype));
    }
    std::process::ExitCode::SUCCESS
}
