//! `softmax`: `unfused` is three kernels (row maximum; exponentials and their sum; normalisation), `fused` one kernel
//! with an online maximum and sum, reading the row twice and writing it once, both one block per row; `split` cuts
//! each row into chunks ([`cuda_split_columns`]), one block per chunk, with the fused kernel's two sweeps as two kernels
//! (each chunk's maximum and sum, then the normalisation once the row's are combined), so that a few long rows still
//! fill the GPU.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, PushKernelArg};
use gpuworthy_core::workloads::{Softmax, SoftmaxInput, split_columns, split_columns_of_at_least};
use gpuworthy_core::{BackendKind, Error, Implements, Result, Variant, VariantTable, Workload};

use super::{config, int, phased, run_into_fresh};
use crate::pipeline::{Chunk, OutputFrom, Pipeline, split, units_per_chunk};
use crate::{CudaBackend, HostMemory, driver_error};
use super::kernel_file;
use gpuworthy_core::KernelSource;

/// Threads per block of the softmax kernels, one block per row (`softmax.cu`).
pub(crate) const SOFTMAX_BLOCK: u32 = 256;

/// The CUDA C source of this workload and the kernels it defines.
pub(crate) const SOURCE: KernelSource = kernel_file!("softmax.cu", ["softmax_unfused_max", "softmax_unfused_exp", "softmax_unfused_normalize", "softmax_fused", "softmax_split_stats", "softmax_split_normalize"]);

/// The launch constants this workload's source takes from the host ([`crate::launch`]).
pub(crate) const LAUNCH_DEFINES: &[(&str, u32)] = &[("SOFTMAX_BLOCK", SOFTMAX_BLOCK)];

/// The device buffers of one softmax launch over `rows` rows of `cols` columns: views of the whole resident data,
/// or of one chunk of rows in a pipelined run. `row_max` and `row_sum` hold one value per row, or per (row, chunk)
/// for `split`, whose rows are cut into chunks of `chunk_cols` columns.
struct SoftmaxViews<'a, 'b> {
    rows: usize,
    cols: usize,
    chunk_cols: usize,
    x: CudaView<'a, f32>,
    y: &'b mut CudaViewMut<'a, f32>,
    row_max: CudaViewMut<'a, f32>,
    row_sum: CudaViewMut<'a, f32>,
}

/// Resident data of `softmax`. The statistics buffers hold a value per (row, chunk) of [`cuda_split_columns`]: enough
/// for every variant.
#[derive(Debug)]
pub struct SoftmaxResident {
    rows: usize,
    cols: usize,
    x: CudaSlice<f32>,
    y: CudaSlice<f32>,
    row_max: CudaSlice<f32>,
    row_sum: CudaSlice<f32>,
}

const BLOCK: u32 = SOFTMAX_BLOCK;

/// Rows from which CUDA's softmax is split only into chunks of at least [`LONG_CHUNK`] columns, four or more: its
/// `fused` kernel runs 256 threads a row, half of WGSL's, so it leaves an H100 underfilled up to more rows, and there
/// a split pays only with long chunks (measured on the H100:
/// docs/results/nvidia-h100/README.md#why-the-code-is-shaped-so).
const LONG_CHUNK_FROM_ROWS: usize = 128;

/// The shortest chunk of a split from [`LONG_CHUNK_FROM_ROWS`] rows.
const LONG_CHUNK: usize = 8192;

/// Rows from which CUDA's softmax is not split at all.
const SPLIT_BELOW_ROWS: usize = 320;

/// How CUDA's `split` cuts the rows: [`split_columns`] below [`LONG_CHUNK_FROM_ROWS`] rows, then up to
/// [`SPLIT_BELOW_ROWS`] rows four or more chunks of at least [`LONG_CHUNK`] columns, or none.
fn cuda_split_columns(rows: usize, cols: usize) -> (usize, usize) {
    if rows < LONG_CHUNK_FROM_ROWS {
        split_columns(rows, cols)
    } else if rows < SPLIT_BELOW_ROWS && cols >= 4 * LONG_CHUNK {
        split_columns_of_at_least(rows, cols, LONG_CHUNK)
    } else {
        (cols.max(1), 1)
    }
}

/// How a softmax variant passes over the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Passes {
    /// Three kernels: the row maxima, the exponentials and their sums, the normalisation.
    Three,
    /// One kernel with an online maximum and sum.
    Fused,
    /// Two kernels over chunks of the rows: each chunk's online maximum and sum, then the normalisation.
    Split,
}

/// The variants of `softmax`, each kernel named in the order one launch runs them.
pub(crate) static VARIANTS: VariantTable<Passes> = VariantTable {
    workload: "softmax",
    variants: &[
        Variant::new(
            "unfused",
            &["softmax_unfused_max", "softmax_unfused_exp", "softmax_unfused_normalize"],
            Passes::Three,
        ),
        Variant::new("fused", &["softmax_fused"], Passes::Fused),
        Variant::new("split", &["softmax_split_stats", "softmax_split_normalize"], Passes::Split),
    ],
};

impl Implements<Softmax> for CudaBackend {
    type Resident = SoftmaxResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// `split` where [`cuda_split_columns`] cuts the rows (a few long ones), else `fused`: one pass over each row instead
    /// of three.
    fn best_variant(&self, params: &<Softmax as gpuworthy_core::Workload>::Params) -> &'static str {
        if cuda_split_columns(params.rows, params.cols).1 > 1 { "split" } else { "fused" }
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_kernels(VARIANTS.lookup::<Softmax, _>(self, variant)?)
    }

    fn upload(&self, input: &SoftmaxInput) -> Result<SoftmaxResident> {
        Softmax::validate(input)?;
        int("softmax rows", input.rows)?;
        int("softmax columns", input.cols)?;
        Ok(SoftmaxResident {
            rows: input.rows,
            cols: input.cols,
            x: self.to_device(&input.data)?,
            y: self.zeros(input.data.len())?,
            row_max: self.zeros(input.rows * cuda_split_columns(input.rows, input.cols).1)?,
            row_sum: self.zeros(input.rows * cuda_split_columns(input.rows, input.cols).1)?,
        })
    }

    fn launch(&self, variant: &str, r: &mut SoftmaxResident) -> Result<()> {
        let _queue = self.hold_queue()?;
        let variant = VARIANTS.lookup::<Softmax, _>(self, variant)?;
        let views = SoftmaxViews {
            rows: r.rows,
            cols: r.cols,
            chunk_cols: cuda_split_columns(r.rows, r.cols).0,
            x: r.x.slice(..),
            y: &mut r.y.slice_mut(..),
            row_max: r.row_max.slice_mut(..),
            row_sum: r.row_sum.slice_mut(..),
        };
        self.launch_softmax(&self.stream, variant, views)
    }

    fn run(&self, variant: &str, input: &SoftmaxInput) -> Result<Vec<f32>> {
        run_into_fresh::<Softmax>(self, variant, input)
    }

    /// Pipelined by rows (see [`HostMemory::Pipelined`]): each chunk is as many whole rows as fit in a pipeline
    /// chunk (at least one).
    fn run_into(&self, variant: &str, input: &SoftmaxInput, output: &mut Vec<f32>) -> Result<()> {
        if self.host_memory() != HostMemory::Pipelined {
            *output = phased::<Softmax>(self, variant, input)?;
            return Ok(());
        }
        Softmax::validate(input)?;
        int("softmax rows", input.rows)?;
        int("softmax columns", input.cols)?;
        let variant = VARIANTS.lookup::<Softmax, _>(self, variant)?;
        self.prepare_kernels(variant)?;
        let (rows, cols) = (input.rows, input.cols);
        crate::memory::host_output(output, rows * cols);
        if rows * cols == 0 {
            return Ok(());
        }
        let row_ranges: Vec<_> = split(rows, units_per_chunk(4 * cols, rows, 1)).collect();
        let elements = |r: &std::ops::Range<usize>| r.start * cols..r.end * cols;
        let mut devices = vec![self.uninit::<f32>(rows * cols)?];
        let mut y = self.uninit::<f32>(rows * cols)?;
        // Statistics per row, or per (row, chunk) for `split`: each chunk of rows uses its own part.
        let (chunk_cols, chunks) = cuda_split_columns(rows, cols);
        let per_row = if variant.launch == Passes::Split { chunks } else { 1 };
        let (mut row_max, mut row_sum) = (self.uninit::<f32>(rows * per_row)?, self.uninit::<f32>(rows * per_row)?);
        let chunks = row_ranges
            .iter()
            .map(|r| Chunk { uploads: vec![elements(r)], reads_neighbours: false, download: elements(r) })
            .collect();
        let job = Pipeline {
            inputs: vec![&input.data],
            chunks,
            output_from: vec![OutputFrom::Buffer(&mut y)],
            launch_on_backend_stream: false,
            outputs: vec![output.as_mut_slice()],
            output_offset: 0,
        };
        self.pipelined(job, &mut devices, &mut |stream, c, devices, output_from| {
            let [OutputFrom::Buffer(y)] = output_from else { unreachable!("softmax streams its own output buffer") };
            let r = row_ranges[c].clone();
            let stats = r.start * per_row..r.end * per_row;
            let views = SoftmaxViews {
                rows: r.len(),
                cols,
                chunk_cols,
                x: devices[0].slice(elements(&r)),
                y: &mut y.slice_mut(elements(&r)),
                row_max: row_max.slice_mut(stats.clone()),
                row_sum: row_sum.slice_mut(stats),
            };
            self.launch_softmax(stream, variant, views)
        })?;
        Ok(())
    }

    fn download(&self, r: &mut SoftmaxResident) -> Result<Vec<f32>> {
        self.to_host(&r.y, r.rows * r.cols)
    }
}

impl CudaBackend {
    /// Launches `variant` on `stream` over the rows of `v`.
    fn launch_softmax(
        &self,
        stream: &Arc<CudaStream>,
        variant: &Variant<Passes>,
        v: SoftmaxViews<'_, '_>,
    ) -> Result<()> {
        self.prepare_kernels(variant)?;
        let SoftmaxViews { rows, cols, chunk_cols, x, y, mut row_max, mut row_sum } = v;
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        let cfg = config((rows as u64, 1), (BLOCK, 1), 0)?;
        let split_grid = (rows as u64, cols.div_ceil(chunk_cols.max(1)) as u64);
        let (rows, cols) = (int("softmax rows", rows)?, int("softmax columns", cols)?);
        let failed = |k: &str| driver_error(format!("launching {k}"));
        match (variant.launch, variant.kernels) {
            (Passes::Fused, &[fused]) => {
                let f = self.function(fused)?;
                let mut launch = stream.launch_builder(&f);
                launch.arg(&x).arg(y).arg(&rows).arg(&cols);
                // SAFETY: softmax_fused(const float* x, float* y, int rows, int cols); x and y hold rows·cols floats
                // and the grid has one block per row.
                unsafe { launch.launch(cfg) }.map_err(failed(fused))?;
            }
            (Passes::Three, &[max, exp, normalize]) => {
                let f = self.function(max)?;
                let mut launch = stream.launch_builder(&f);
                launch.arg(&x).arg(&mut row_max).arg(&rows).arg(&cols);
                // SAFETY: softmax_unfused_max(const float* x, float* row_max, int rows, int cols); row_max holds
                // rows floats.
                unsafe { launch.launch(cfg) }.map_err(failed(max))?;
                let f = self.function(exp)?;
                let mut launch = stream.launch_builder(&f);
                launch.arg(&x).arg(&mut row_max).arg(&mut *y).arg(&mut row_sum).arg(&rows).arg(&cols);
                // SAFETY: softmax_unfused_exp(const float* x, const float* row_max, float* y, float* row_sum,
                // int rows, int cols); the buffers hold rows·cols, rows, rows·cols and rows floats.
                unsafe { launch.launch(cfg) }.map_err(failed(exp))?;
                let f = self.function(normalize)?;
                let mut launch = stream.launch_builder(&f);
                launch.arg(y).arg(&mut row_sum).arg(&rows).arg(&cols);
                // SAFETY: softmax_unfused_normalize(float* y, const float* row_sum, int rows, int cols), as above.
                unsafe { launch.launch(cfg) }.map_err(failed(normalize))?;
            }
            (Passes::Split, &[stats, normalize]) => {
                let split_cfg = config(split_grid, (BLOCK, 1), 0)?;
                let chunk_cols = int("softmax chunk columns", chunk_cols)?;
                let f = self.function(stats)?;
                let mut launch = stream.launch_builder(&f);
                launch.arg(&x).arg(&mut row_max).arg(&mut row_sum).arg(&rows).arg(&cols).arg(&chunk_cols);
                // SAFETY: softmax_split_stats(const float* x, float* part_m, float* part_s, int rows, int cols,
                // int chunk_cols); the grid is (rows, chunks) with chunks = ceil(cols / chunk_cols), and part_m and
                // part_s hold rows·chunks floats (the views were cut so).
                unsafe { launch.launch(split_cfg) }.map_err(failed(stats))?;
                let f = self.function(normalize)?;
                let mut launch = stream.launch_builder(&f);
                launch.arg(&x).arg(y).arg(&mut row_max).arg(&mut row_sum).arg(&rows).arg(&cols).arg(&chunk_cols);
                // SAFETY: softmax_split_normalize(const float* x, float* y, const float* part_m, const float* part_s,
                // int rows, int cols, int chunk_cols), the same grid; x and y hold rows·cols floats.
                unsafe { launch.launch(split_cfg) }.map_err(failed(normalize))?;
            }
            (passes, kernels) => {
                return Err(Error::Device {
                    backend: BackendKind::Cuda,
                    message: format!(
                        "softmax variant `{}` lists {} kernels for {passes:?} passes",
                        variant.name,
                        kernels.len()
                    ),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_splits_few_rows_like_wgsl_and_up_to_320_rows_only_into_four_or_more_long_chunks() {
        assert_eq!(cuda_split_columns(64, 131072), split_columns(64, 131072));
        assert_eq!(cuda_split_columns(128, 65536), (8192, 8));
        assert_eq!(cuda_split_columns(256, 65536), (16384, 4));
        assert_eq!(cuda_split_columns(319, 32768), (8192, 4));
        // Chunks that would be shorter, or rows that already fill the GPU: not split.
        assert_eq!(cuda_split_columns(256, 16384), (16384, 1));
        assert_eq!(cuda_split_columns(320, 262144), (262144, 1));
        assert_eq!(cuda_split_columns(4096, 4096), (4096, 1));
    }
}
