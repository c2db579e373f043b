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
/// `Err(unknown_workload(name).into())` from the enclosing function. Its arms are generated from the one list of
/// workloads ([`gpuworthy_core::for_each_workload!`]).
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
    ($name:expr, $W:ident => $body:expr) => {
        $crate::core::for_each_workload!($crate::__with_workload_arms; $name, $W => $body)
    };
}

/// The `match` of [`with_workload!`], one arm per workload of the list.
#[doc(hidden)]
#[macro_export]
macro_rules! __with_workload_arms {
    ([$name:expr, $W:ident => $body:expr] $($workload:ident: $type:ty),* $(,)?) => {
        match $name {
            $(stringify!($workload) => {
                type $W = $type;
                $body
            })*
            other => return Err($crate::dispatch::unknown_workload(other).into()),
        }
    };
}
