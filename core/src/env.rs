//! The `GPUWORTHY_*` environment variables: one list of them, and one rule for reading them.
//!
//! The rule: a variable that is unset or empty (or only spaces) means its default; a value is read without regard to
//! case; a value that is not one of the valid ones is an [`Error::InvalidInput`] that names the variable and the
//! valid values, never a panic and never silently ignored. Every crate reads its variables through [`read`], so the
//! rule holds everywhere, and [`VARIABLES`] lists them all, so that `gpuworthy devices` can show each one in effect
//! and point out a `GPUWORTHY_` name that none of them is (a misspelling would otherwise be ignored).

use crate::error::{Error, Result};

/// One environment variable gpuworthy reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variable {
    /// Its name, `GPUWORTHY_…`.
    pub name: &'static str,
    /// The values it accepts, in words.
    pub values: &'static str,
    /// What it does, and its default.
    pub purpose: &'static str,
}

/// Every variable gpuworthy reads.
pub const VARIABLES: &[Variable] = &[
    Variable {
        name: "GPUWORTHY_BACKEND",
        values: "auto, cpu, cuda, cuda:<ordinal>, wgpu or wgpu:<adapter>",
        purpose: "the device `Device::from_env` opens (default and auto: the best available: a GPU if usable, else the CPU)",
    },
    Variable {
        name: "GPUWORTHY_CALIBRATION",
        values: "a file path",
        purpose: "where `gpuworthy calibrate` stores the cost model and `auto` reads it (default: the user's cache directory)",
    },
    Variable {
        name: "GPUWORTHY_REQUIRE",
        values: "a comma-separated list of cpu, cuda, wgpu",
        purpose: "backends the tests must run on: a skipped one fails (default: none)",
    },
    Variable {
        name: "GPUWORTHY_KERNEL_CACHE",
        values: "a directory, or off",
        purpose: "where compiled CUDA kernels are kept between runs (default: gpuworthy/cuda in the user's cache directory)",
    },
    Variable {
        name: "GPUWORTHY_NVRTC_MINIMAL",
        values: "1, true, yes, on, 0, false, no or off",
        purpose: "whether generated CUDA kernels (expressions) compile with NVRTC's -minimal, which leaves out the \
                  runtime API's headers (default: on where NVRTC is 12.4 or later)",
    },
    Variable {
        name: "GPUWORTHY_CPU_SIMD",
        values: "avx512, avx2, neon or portable (one this CPU supports)",
        purpose: "the CPU's SIMD level (default: the best the CPU supports)",
    },
    Variable {
        name: "GPUWORTHY_WGPU_ADAPTER",
        values: "an adapter index from `gpuworthy devices`, vulkan, metal, dx12, gl, or part of an adapter's name",
        purpose: "the wgpu adapter (default: the best: discrete GPU, integrated, virtual, CPU)",
    },
    Variable {
        name: "GPUWORTHY_WGPU_CHECKS",
        values: "all, none, or a comma-separated list of bounds, loops, division",
        purpose: "wgpu's run-time shader checks (default: bounds,division)",
    },
    Variable {
        name: "GPUWORTHY_WGPU_UNCHECKED",
        values: "1, true, yes, on, 0, false, no or off",
        purpose: "a true value means GPUWORTHY_WGPU_CHECKS=none (default: off)",
    },
    Variable {
        name: "GPUWORTHY_WGPU_MAX_BINDING",
        values: "a size of at least 1M, such as 64M or 2^26",
        purpose: "the largest chunk a wgpu kernel binds (default: the adapter's limit)",
    },
    Variable {
        name: "GPUWORTHY_WGPU_SUM_ORDER",
        values: "fixed or any",
        purpose: "the order in which a wgpu expression's plain sum adds its workgroups' totals: any lets each add with \
                  a float atomic where the adapter has them, faster but not the same bits on every run (default: fixed)",
    },
    Variable {
        name: "GPUWORTHY_WAIT_LIMIT",
        values: "a number of seconds above 0 and at most 86400, such as 0.5 or 600",
        purpose: "how long a GPU backend waits for its device before it gives up with an error: a kernel that never \
                  ends (default: 600)",
    },
    Variable {
        name: "GPUWORTHY_RANK",
        values: "0 to the world size - 1",
        purpose: "this process's rank in a world of processes that run one computation together (default: not a rank)",
    },
    Variable {
        name: "GPUWORTHY_WORLD_SIZE",
        values: "a number of processes from 1 to 4096",
        purpose: "how many processes the world has (set with GPUWORTHY_RANK and GPUWORTHY_RENDEZVOUS)",
    },
    Variable {
        name: "GPUWORTHY_RENDEZVOUS",
        values: "a directory every rank can reach",
        purpose: "where the ranks of a world meet (set with GPUWORTHY_RANK and GPUWORTHY_WORLD_SIZE)",
    },
    Variable {
        name: "GPUWORTHY_RENDEZVOUS_TIMEOUT",
        values: "a number of seconds above 0 and at most a day",
        purpose: "how long a rank waits for the others at the rendezvous (default: 120)",
    },
    Variable {
        name: "GPUWORTHY_BENCH_FULL",
        values: "1, true, yes, on, 0, false, no or off",
        purpose: "the long criterion run: every ladder size, criterion's default times (default: off, the short run)",
    },
    Variable {
        name: "GPUWORTHY_BENCH_BACKENDS",
        values: "a comma-separated list of cpu, cuda, wgpu",
        purpose: "the backends criterion measures (default: every available one)",
    },
];

/// The value of variable `name`, trimmed; `None` when it is unset or empty. A value that is not Unicode is an error.
///
/// ```
/// // SAFETY: no other thread of this example reads the environment.
/// unsafe { std::env::set_var("GPUWORTHY_EXAMPLE", "  ") };
/// assert_eq!(gpuworthy_core::env::read("GPUWORTHY_EXAMPLE").unwrap(), None);
/// ```
pub fn read(name: &str) -> Result<Option<String>> {
    match std::env::var(name) {
        Ok(value) if value.trim().is_empty() => Ok(None),
        Ok(value) => Ok(Some(value.trim().to_owned())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(raw)) => {
            Err(Error::invalid(format!("{name}={}: not valid Unicode", raw.to_string_lossy())))
        }
    }
}

/// The error for a value of `name` that is not one of the valid ones.
pub fn invalid_value(name: &str, value: &str, valid: &str) -> Error {
    Error::invalid(format!("{name}={value} is not valid: expected {valid}"))
}

/// A yes/no variable: `1`, `true`, `yes` or `on`, and `0`, `false`, `no` or `off`, in any case; `None` when unset.
///
/// ```
/// assert_eq!(gpuworthy_core::env::read_flag("GPUWORTHY_SURELY_UNSET").unwrap(), None);
/// ```
pub fn read_flag(name: &str) -> Result<Option<bool>> {
    let Some(value) = read(name)? else { return Ok(None) };
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(Some(true)),
        "0" | "false" | "no" | "off" => Ok(Some(false)),
        _ => Err(invalid_value(name, &value, "1, true, yes, on, 0, false, no or off")),
    }
}

/// Every known variable with its value in this process (`None` where it is unset or empty).
pub fn in_effect() -> Vec<(&'static Variable, Option<String>)> {
    VARIABLES.iter().map(|v| (v, std::env::var(v.name).ok().filter(|s| !s.trim().is_empty()))).collect()
}

/// The names of set variables that start with `GPUWORTHY_` but are not ones gpuworthy reads: most likely misspelt.
pub fn unknown_names() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| name.starts_with("GPUWORTHY_") && !VARIABLES.iter().any(|v| v.name == name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_read_in_any_case_and_bad_values_name_the_variable() {
        // Names no other test uses, so that setting them cannot disturb a test running beside this one.
        let cases = [("yes", Some(true)), ("OFF", Some(false)), ("True", Some(true)), ("0", Some(false)), ("", None)];
        for (value, expected) in cases {
            // SAFETY: this variable is read by this test only.
            unsafe { std::env::set_var("GPUWORTHY_TEST_FLAG", value) };
            assert_eq!(read_flag("GPUWORTHY_TEST_FLAG").unwrap(), expected, "{value:?}");
        }
        // SAFETY: as above.
        unsafe { std::env::set_var("GPUWORTHY_TEST_FLAG", "maybe") };
        let err = read_flag("GPUWORTHY_TEST_FLAG").unwrap_err().to_string();
        assert!(err.contains("GPUWORTHY_TEST_FLAG=maybe") && err.contains("yes"), "{err}");
        assert!(unknown_names().contains(&"GPUWORTHY_TEST_FLAG".to_owned()));
    }

    #[test]
    fn every_variable_is_documented() {
        for v in VARIABLES {
            assert!(v.name.starts_with("GPUWORTHY_") && !v.values.is_empty() && !v.purpose.is_empty(), "{v:?}");
        }
    }
}
