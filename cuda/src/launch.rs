//! The launch shapes the host and the CUDA C sources must agree on, defined once, here.
//!
//! A kernel written for blocks of 256 threads that is launched with 128 computes a wrong answer without any error, so
//! a block size cannot live both in a Rust constant and in a `#define`. The sources name these constants without
//! defining them (`#ifndef SUM_BLOCK` / `#error`), and every compilation passes them to NVRTC as `-D` options from
//! [`launch_defines`], which each workload's module declares beside its variant table; a test checks, without a GPU, that no source defines one itself.

/// Every constant the sources take from the host, by the name they use: each workload's module lists its own.
pub fn launch_defines() -> impl Iterator<Item = (&'static str, u32)> {
    crate::workloads::LAUNCH_DEFINES.iter().flat_map(|defines| defines.iter().copied())
}

/// The NVRTC options that define [`launch_defines`].
pub fn define_options() -> Vec<String> {
    launch_defines().map(|(name, value)| format!("-D{name}={value}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KERNEL_FILES;

    /// Each constant is named by a source that expects it from the host and defined by none: a `#define` in a source
    /// would be a second value that could drift from the host's.
    #[test]
    fn every_launch_constant_comes_from_the_host_alone() {
        for (name, _) in launch_defines() {
            let expecting: Vec<&str> = KERNEL_FILES
                .iter()
                .filter(|f| f.source.contains(&format!("#ifndef {name}\n#error")))
                .map(|f| f.file)
                .collect();
            assert!(!expecting.is_empty(), "no source expects {name} from the host");
            for file in KERNEL_FILES {
                assert!(!file.source.contains(&format!("#define {name} ")), "{} defines {name} itself", file.file);
            }
        }
    }

    #[test]
    fn the_defines_are_nvrtc_options() {
        assert!(define_options().contains(&"-DSOFTMAX_BLOCK=256".to_owned()));
    }
}
