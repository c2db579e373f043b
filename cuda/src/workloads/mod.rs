//! The workloads on CUDA: one module each, with the launch configurations the kernels in `cuda/kernels/` expect.
//!
//! Every launch is checked against the device's grid limits first, empty inputs launch nothing, and every argument
//! is passed with the C type its kernel declares (`unsigned long long` lengths, `int` shapes).

mod elementwise;
// One module per workload, named after it (`mod square; mod saxpy; …`), from the one list of workloads. Each declares
// its `VARIANTS` table, its CUDA C `SOURCE` (`cuda/kernels/<workload>.cu`) and the `LAUNCH_DEFINES` that source takes
// from the host; the lists below are made from them.
gpuworthy_core::for_each_workload!(gpuworthy_core::workload_modules);

/// A [`KernelSource`] for the CUDA C file `$file` of `cuda/kernels/` and the `extern "C"` kernels it defines: each
/// workload's module declares its own as `SOURCE`.
macro_rules! kernel_file {
    ($file:literal, [$($kernel:literal),* $(,)?]) => {
        gpuworthy_core::KernelSource {
            file: $file,
            source: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/", $file)),
            kernels: &[$($kernel),*],
        }
    };
}
pub(crate) use kernel_file;

pub(crate) use matmul::{ARCHITECTURE_SPECIFIC_FILES, Blas};
pub(crate) use sum::SumResident;

macro_rules! backend_tables {
    ([] $($name:ident: $workload:ty),* $(,)?) => {
        /// Every variant table of the backend, as `(workload, [(variant, kernel)])`: what the tests check against the
        /// CUDA C sources.
        pub fn variant_kernels() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
            vec![$(($name::VARIANTS.workload, $name::VARIANTS.kernels())),*]
        }

        /// Every CUDA C file of the backend (one per workload under `cuda/kernels/`, and matmul's tensor-core rungs
        /// and Hopper rungs in files of their own) and the `extern "C" __global__` kernels it defines.
        pub const KERNEL_FILES: &[gpuworthy_core::KernelSource] =
            &[$($name::SOURCE,)* matmul::TENSOR_CORE_SOURCE, matmul::WGMMA_SOURCE, matmul::TMA_SOURCE];

        /// Every constant the sources take from the host, by the name they use, workload by workload.
        pub(crate) const LAUNCH_DEFINES: &[&[(&str, u32)]] = &[$($name::LAUNCH_DEFINES),*];
    };
}

gpuworthy_core::for_each_workload!(backend_tables);

use cudarc::driver::{CudaSlice, DeviceRepr, LaunchConfig};
use gpuworthy_core::{Error, Implements, Result, Workload};

use crate::{CudaBackend, driver_error};

pub(crate) use launch_config as config;

/// A group member's band of `rows` (of `rows_in_all`, each `row_len` output values) written by `band` straight into
/// its place in the group's output, where `in_place` (the backend pipelines this run); otherwise cut, run and copied
/// in, as by default ([`gpuworthy_core::backend::run_part_by_cut`]). The input and the rows are checked first.
pub(crate) fn run_band<W: Workload>(
    backend: &CudaBackend,
    (variant, input): (&str, &W::Input),
    rows: std::ops::Range<usize>,
    place: &mut gpuworthy_core::PartOutput<'_>,
    (in_place, rows_in_all, row_len): (bool, usize, usize),
    band: impl FnOnce(&mut [f32]) -> Result<()>,
) -> Result<()>
where
    CudaBackend: Implements<W>,
{
    if !in_place {
        return gpuworthy_core::backend::run_part_by_cut::<W, _>(backend, variant, input, rows, place);
    }
    W::validate(input)?;
    if rows.start > rows.end || rows.end > rows_in_all {
        return Err(gpuworthy_core::Error::invalid(format!("rows {rows:?} of {} {rows_in_all}", W::NAME)));
    }
    band(place.single_f32(rows.len() * row_len)?)
}

/// Upload, one launch and download: the run of every host-memory mode but [`crate::HostMemory::Pipelined`] (the
/// trait's default `run`, which a workload that overrides `run` calls through this).
pub(crate) fn phased<W: Workload>(backend: &CudaBackend, variant: &str, input: &W::Input) -> Result<W::Output>
where
    CudaBackend: Implements<W>,
{
    let mut resident = backend.upload(input)?;
    backend.launch(variant, &mut resident)?;
    backend.download(&mut resident)
}

/// [`Implements::run_into`] into a fresh, empty output: the `run` of a workload whose pipelined path writes into the
/// caller's output, so that `run` and `run_into` are one path.
pub(crate) fn run_into_fresh<W: Workload>(backend: &CudaBackend, variant: &str, input: &W::Input) -> Result<W::Output>
where
    CudaBackend: Implements<W>,
    W::Output: Default,
{
    let mut output = W::Output::default();
    backend.run_into(variant, input, &mut output)?;
    Ok(output)
}

impl CudaBackend {
    /// A device buffer of `len` elements (at least one), not initialised: for buffers that a copy or a kernel fills
    /// completely before anything reads them.
    pub(crate) fn uninit<T: DeviceRepr>(&self, len: usize) -> Result<CudaSlice<T>> {
        let _queue = self.hold_queue()?;
        // SAFETY: the callers (the pipelined runs) write every element, by an upload or a kernel ordered before any
        // read of it, before the buffer is read; the memory is never read as a value of `T` before that.
        unsafe { self.stream.alloc::<T>(len.max(1)) }
            .map_err(driver_error(format!("allocating {} bytes on the device", len * size_of::<T>())))
    }
}

/// The most blocks in a grid's x dimension, and in y.
const MAX_GRID_X: u64 = (1 << 31) - 1;
const MAX_GRID_Y: u64 = 65535;

/// A launch of `grid` blocks of `block` threads with `shared` bytes of dynamic shared memory, after checking the
/// grid against the device's limits ([`Error::TooLarge`] naming them); an empty grid becomes one block.
pub fn launch_config(grid: (u64, u64), block: (u32, u32), shared: u32) -> Result<LaunchConfig> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KERNEL_FILES;

    /// The names of the `extern "C"` kernels a CUDA C source defines: the identifier after `extern "C" __global__
    /// void` and an optional `__launch_bounds__(...)`.
    fn extern_c_kernels(source: &str) -> Vec<String> {
        source
            .split("extern \"C\"")
            .skip(1)
            .map(|rest| {
                let mut rest = rest.trim_start().trim_start_matches("__global__").trim_start();
                rest = rest.trim_start_matches("void").trim_start();
                if let Some(bounds) = rest.strip_prefix("__launch_bounds__") {
                    let close = bounds.find(')').expect("__launch_bounds__ closes");
                    rest = bounds[close + 1..].trim_start();
                }
                rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
            })
            .collect()
    }

    #[test]
    fn every_kernel_a_table_names_is_defined_extern_c_by_its_file() {
        for (workload, kernels) in variant_kernels() {
            for (variant, kernel) in kernels {
                let file = gpuworthy_core::KernelSource::defining(KERNEL_FILES, kernel)
                    .unwrap_or_else(|| panic!("{workload} {variant}: no file of KERNEL_FILES lists `{kernel}`"));
                let defined = extern_c_kernels(file.source);
                assert!(
                    defined.iter().any(|d| d == kernel),
                    "{workload} {variant}: {} defines no extern \"C\" `{kernel}` (it defines {defined:?})",
                    file.file
                );
            }
        }
    }

    #[test]
    fn every_listed_kernel_is_extern_c_and_run_by_a_variant() {
        let used: Vec<&str> = variant_kernels().into_iter().flat_map(|(_, k)| k).map(|(_, kernel)| kernel).collect();
        for file in KERNEL_FILES {
            let defined = extern_c_kernels(file.source);
            for kernel in file.kernels {
                assert!(defined.iter().any(|d| d == kernel), "{} lists `{kernel}` but defines {defined:?}", file.file);
                assert!(used.contains(kernel), "no variant runs `{kernel}` of {}", file.file);
            }
            for kernel in &defined {
                assert!(
                    file.kernels.contains(&kernel.as_str()),
                    "{} defines `{kernel}` but does not list it",
                    file.file
                );
            }
        }
    }

    #[test]
    fn every_workload_has_a_table() {
        let tables: Vec<&str> = variant_kernels().into_iter().map(|(workload, _)| workload).collect();
        assert_eq!(tables, gpuworthy_core::WORKLOAD_NAMES);
    }
}
