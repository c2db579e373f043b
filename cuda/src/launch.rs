//! The launch shapes the host and the CUDA C sources must agree on, defined once, here.
//!
//! A kernel written for blocks of 256 threads that is launched with 128 computes a wrong answer without any error, so
//! a block size cannot live both in a Rust constant and in a `#define`. The sources name these constants without
//! defining them (`#ifndef SUM_BLOCK` / `#error`), and every compilation passes them to NVRTC as `-D` options from
//! [`LAUNCH_DEFINES`]; a test checks, without a GPU, that no source defines one itself.

/// Threads per block of the sum kernels (`sum.cu`).
pub const SUM_BLOCK: u32 = 256;
/// Threads per block of the softmax kernels, one block per row (`softmax.cu`).
pub const SOFTMAX_BLOCK: u32 = 256;
/// Threads per block of the histogram kernels (`histogram.cu`).
pub const HISTOGRAM_BLOCK: u32 = 256;
/// The most bins the shared-memory histogram keeps per block (`histogram.cu`): 48 KiB of counters.
pub const HISTOGRAM_SHARED_BINS: u32 = 12288;
/// The mandelbrot block: 16 x 16 pixels (`mandelbrot.cu`).
pub const MANDELBROT_BLOCK: (u32, u32) = (16, 16);
/// The stencil block: 32 columns x 8 rows of threads (`stencil.cu`).
pub const STENCIL_BLOCK: (u32, u32) = (32, 8);
/// The output tile of the tiled stencil: 32 x 32 pixels per block, staged with its halo in shared memory
/// (`stencil.cu`).
pub const STENCIL_TILE: u32 = 32;
/// The naive matmul block: 16 x 16 threads, one element of C each (`matmul.cu`).
pub const MATMUL_NAIVE_BLOCK: u32 = 16;
/// The tiled matmul block and its shared-memory tile: 32 x 32 threads and elements (`matmul.cu`).
pub const MATMUL_TILE: u32 = 32;
/// Threads per block of the register-blocked matmul kernels (`register`, `warptile`, `prefetch`, `splitk`).
pub const MATMUL_BLOCKED_THREADS: u32 = 256;
/// The block of C a register-blocked kernel computes: rows, columns (`register`, `prefetch`, `splitk`).
pub const MATMUL_BLOCKED_TILE: (u32, u32) = (128, 128);
/// The columns of C a `warptile` block computes (its rows are [`MATMUL_BLOCKED_TILE`]'s).
pub const MATMUL_WARPTILE_COLUMNS: u32 = 256;

/// Every constant the sources take from the host, by the name they use.
pub const LAUNCH_DEFINES: &[(&str, u32)] = &[
    ("SUM_BLOCK", SUM_BLOCK),
    ("SOFTMAX_BLOCK", SOFTMAX_BLOCK),
    ("HISTOGRAM_BLOCK", HISTOGRAM_BLOCK),
    ("HISTOGRAM_SHARED_BINS", HISTOGRAM_SHARED_BINS),
    ("MANDELBROT_BLOCK_X", MANDELBROT_BLOCK.0),
    ("MANDELBROT_BLOCK_Y", MANDELBROT_BLOCK.1),
    ("STENCIL_BLOCK_X", STENCIL_BLOCK.0),
    ("STENCIL_BLOCK_Y", STENCIL_BLOCK.1),
    ("STENCIL_TILE", STENCIL_TILE),
    ("MATMUL_NAIVE_BLOCK", MATMUL_NAIVE_BLOCK),
    ("MATMUL_TILE", MATMUL_TILE),
    ("RB_THREADS", MATMUL_BLOCKED_THREADS),
    ("RB_BM", MATMUL_BLOCKED_TILE.0),
    ("RB_BN", MATMUL_BLOCKED_TILE.1),
    ("MATMUL_WARPTILE_BN", MATMUL_WARPTILE_COLUMNS),
];

/// The NVRTC options that define [`LAUNCH_DEFINES`].
pub fn define_options() -> Vec<String> {
    LAUNCH_DEFINES.iter().map(|(name, value)| format!("-D{name}={value}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KERNEL_FILES;

    /// Each constant is named by a source that expects it from the host and defined by none: a `#define` in a source
    /// would be a second value that could drift from the host's.
    #[test]
    fn every_launch_constant_comes_from_the_host_alone() {
        for (name, _) in LAUNCH_DEFINES {
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
