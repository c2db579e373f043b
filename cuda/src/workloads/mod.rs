//! The workloads on CUDA: one module each, with the launch configurations the kernels in `cuda/kernels/` expect.
//!
//! Every launch is checked against the device's grid limits first, empty inputs launch nothing, and every argument
//! is passed with the C type its kernel declares (`unsigned long long` lengths, `int` shapes).

mod elementwise;
mod histogram;
mod mandelbrot;
mod matmul;
mod softmax;
mod stencil;
mod sum;

pub(crate) use matmul::Blas;

use cudarc::driver::LaunchConfig;
use gpuworthy_core::{Error, Result};

/// The most blocks in a grid's x dimension, and in y.
const MAX_GRID_X: u64 = (1 << 31) - 1;
const MAX_GRID_Y: u64 = 65535;

/// A launch of `grid` blocks of `block` threads with `shared` bytes of dynamic shared memory, after checking the
/// grid against the device's limits.
pub(crate) fn config(grid: (u64, u64), block: (u32, u32), shared: u32) -> Result<LaunchConfig> {
    if grid.0 > MAX_GRID_X || grid.1 > MAX_GRID_Y {
        return Err(Error::TooLarge {
            what: format!("a grid of {} x {} blocks", grid.0, grid.1),
            limit: format!("{MAX_GRID_X} x {MAX_GRID_Y} blocks"),
        });
    }
    Ok(LaunchConfig {
        grid_dim: (grid.0.max(1) as u32, grid.1.max(1) as u32, 1),
        block_dim: (block.0, block.1, 1),
        shared_mem_bytes: shared,
    })
}

/// `value` as a C `int`, or [`Error::TooLarge`] naming `what`.
pub(crate) fn int(what: &str, value: usize) -> Result<i32> {
    i32::try_from(value)
        .map_err(|_| Error::TooLarge { what: format!("{what} of {value}"), limit: "2^31 - 1 (a C int)".into() })
}
