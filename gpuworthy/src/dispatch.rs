//! Run-time choice of workload by name, for code that takes a workload from the command line or a config file.
//!
//! Workloads are types (their inputs and outputs differ), so choosing one at run time means instantiating the
//! generic code for each and branching on the name: [`with_workload!`](crate::with_workload) writes that branch.

use gpuworthy_core::{Error, WORKLOAD_NAMES};

/// The error for a workload name that is not one of the eight.
pub fn unknown_workload(name: &str) -> Error {
    Error::invalid(format!("unknown workload `{name}`: expected one of {}", WORKLOAD_NAMES.join(", ")))
}

/// Evaluates `$body` with the type alias `$W` bound to the workload named `$name` (a `&str`), or returns
/// `Err(unknown_workload(name).into())` from the enclosing function.
///
/// ```
/// use gpuworthy::core::Workload;
/// fn lesson(name: &str) -> Result<&'static str, gpuworthy::core::Error> {
///     Ok(gpuworthy::with_workload!(name, W => W::LESSON))
/// }
/// assert!(lesson("softmax").unwrap().contains("fusion"));
/// assert!(lesson("fft").is_err());
/// ```
#[macro_export]
macro_rules! with_workload {
    ($name:expr, $W:ident => $body:expr) => {{
        use $crate::core::workloads as __w;
        match $name {
            "square" => {
                type $W = __w::Square;
                $body
            }
            "saxpy" => {
                type $W = __w::Saxpy;
                $body
            }
            "sum" => {
                type $W = __w::Sum;
                $body
            }
            "softmax" => {
                type $W = __w::Softmax;
                $body
            }
            "matmul" => {
                type $W = __w::Matmul;
                $body
            }
            "mandelbrot" => {
                type $W = __w::Mandelbrot;
                $body
            }
            "histogram" => {
                type $W = __w::Histogram;
                $body
            }
            "stencil" => {
                type $W = __w::Stencil;
                $body
            }
            other => return Err($crate::dispatch::unknown_workload(other).into()),
        }
    }};
}
