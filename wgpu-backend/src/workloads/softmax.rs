//! `softmax`. `unfused` is three kernels (row maximum, exponentials and their sum, normalisation), each reading and
//! writing global memory; `fused` is one kernel computing the maximum and the sum in a single online pass, then
//! writing the output (with `vec4` loads and stores when the column count allows): the lesson on kernel fusion. Both
//! run one workgroup per row; `split` cuts each row into chunks ([`split_columns`]), one workgroup per chunk, with
//! the fused kernel's two sweeps as two kernels, so that a few long rows still fill the GPU. Tall matrices are split
//! into bands of rows that fit one binding; a single row larger than a binding is refused, naming the limit.

use gpuworthy_core::workloads::{Softmax, SoftmaxInput, split_columns};
use gpuworthy_core::{Error, Implements, Result, Variant, VariantTable, Workload};

use super::{BindGroups, grid_1d, loop_run, split};
use crate::WgpuBackend;
use super::shader;
use gpuworthy_core::KernelSource;

#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    cols: u32,
    /// The split kernels' chunks of each row ([`split_columns`]).
    chunk_cols: u32,
    chunks: u32,
}

#[derive(Debug)]
struct Band {
    rows: usize,
    params: wgpu::Buffer,
    x: wgpu::Buffer,
    y: wgpu::Buffer,
    /// Per row, the maximum and the sum of exponentials (`unfused`), or per (row, chunk) (`split`).
    stats: wgpu::Buffer,
}

/// Resident data of `softmax`.
#[derive(Debug)]
pub struct SoftmaxResident {
    cols: usize,
    /// The chunks of each row for `split` ([`split_columns`] of the whole matrix).
    chunks: usize,
    bands: Vec<Band>,
    groups: BindGroups,
}

/// The loop trips one invocation of a variant runs for `rows` rows of `cols` columns (see [`loop_run`]): each
/// `unfused` kernel strides over the row with 256 threads, then halves a 256-wide tree; `fused` strides over the row
/// twice with 512 threads (or runs two 4-trip loops over a cached row), then halves a 512-wide tree; `split`'s first
/// kernel strides over a chunk and halves the tree, its second combines the row's chunks and strides over a chunk.
/// The tests run every variant on its longest row.
fn loop_trips(variant: &str, rows: usize, cols: usize) -> u64 {
    let (chunk_cols, chunks) = split_columns(rows, cols);
    let (cols, chunk_cols, chunks) = (cols as u64, chunk_cols as u64, chunks as u64);
    match variant {
        "unfused" => loop_run(cols.div_ceil(256)) + loop_run(8),
        "split" => {
            let sweep = loop_run(chunk_cols.div_ceil(512));
            (sweep + loop_run(9)).max(loop_run(chunks) + sweep)
        }
        _ => 2 * loop_run(cols.div_ceil(512).max(4)) + loop_run(9),
    }
}

/// The WGSL this workload runs and the entry points it defines.
pub(crate) const SHADERS: &[KernelSource] = &[shader!("softmax.wgsl", ["softmax_unfused_max", "softmax_unfused_exp", "softmax_unfused_normalize", "softmax_fused", "softmax_split_stats", "softmax_split_normalize"])];

/// The variants of `softmax`: the kernels in launch order, with the bindings each one uses.
pub(crate) static VARIANTS: VariantTable<&'static [&'static [u32]]> = VariantTable {
    workload: "softmax",
    variants: &[
        Variant::new(
            "unfused",
            &["softmax_unfused_max", "softmax_unfused_exp", "softmax_unfused_normalize"],
            &[&[0, 1, 3], &[0, 1, 2, 3], &[0, 2, 3]],
        ),
        Variant::new("fused", &["softmax_fused"], &[&[0, 1, 2, 4, 5]]),
        Variant::new(
            "split",
            &["softmax_split_stats", "softmax_split_normalize"],
            &[&[0, 1, 3, 4], &[0, 1, 2, 3, 4, 5]],
        ),
    ],
};

impl Implements<Softmax> for WgpuBackend {
    type Resident = SoftmaxResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// `split` where [`split_columns`] cuts the rows (a few long ones), else `fused`: one pass over each row instead
    /// of three.
    fn best_variant(&self, params: &<Softmax as gpuworthy_core::Workload>::Params) -> &'static str {
        if split_columns(params.rows, params.cols).1 > 1 { "split" } else { "fused" }
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_pipelines(VARIANTS.lookup::<Softmax, _>(self, variant)?)
    }

    fn upload(&self, input: &SoftmaxInput) -> Result<SoftmaxResident> {
        Softmax::validate(input)?;
        let (rows, cols) = (input.rows, input.cols);
        if rows == 0 || cols == 0 {
            return Ok(SoftmaxResident { cols, chunks: 1, bands: Vec::new(), groups: BindGroups::default() });
        }
        let row_bytes = 4 * cols as u64;
        if row_bytes > self.max_binding_bytes() {
            return Err(Error::TooLarge {
                what: format!("a softmax row of {cols} columns"),
                limit: format!("max_storage_buffer_binding_size = {} MiB", self.max_binding_bytes() >> 20),
            });
        }
        let rows_per_band = (self.max_binding_bytes() / row_bytes) as usize;
        let (chunk_cols, chunks) = split_columns(rows, cols);
        let bands = split(rows, rows_per_band, 1)
            .into_iter()
            .map(|band| {
                let data = &input.data[band.start * cols..band.end * cols];
                let params = Params {
                    rows: band.len() as u32,
                    cols: cols as u32,
                    chunk_cols: chunk_cols as u32,
                    chunks: chunks as u32,
                };
                Ok(Band {
                    rows: band.len(),
                    params: self.uniform("params", &params)?,
                    x: self.storage_with("x", bytemuck::cast_slice(data))?,
                    y: self.storage_zeroed("y", 4 * data.len() as u64)?,
                    stats: self.storage_zeroed("row statistics", 8 * (band.len() * chunks) as u64)?,
                })
            })
            .collect::<Result<_>>()?;
        self.flush_uploads();
        Ok(SoftmaxResident { cols, chunks, bands, groups: BindGroups::default() })
    }

    fn launch(&self, variant: &str, r: &mut SoftmaxResident) -> Result<()> {
        let variant = VARIANTS.lookup::<Softmax, _>(self, variant)?;
        let kernels = variant.kernels.iter().copied().zip(variant.launch.iter().copied());
        let variant = variant.name;
        if r.bands.is_empty() {
            return Ok(());
        }
        let rows = r.bands.iter().map(|b| b.rows).sum();
        self.check_loop_trips(
            || format!("softmax {variant} with rows of {} columns", r.cols),
            loop_trips(variant, rows, r.cols),
        )?;
        // One workgroup per row, or per (row, chunk) for `split`.
        let per_row = if variant == "split" { r.chunks as u64 } else { 1 };
        let mut steps = Vec::new();
        for (entry, bindings) in kernels {
            let pipeline = self.pipeline(entry)?;
            let bands = &r.bands;
            let groups = r.groups.get_or_make(entry, || {
                bands
                    .iter()
                    .map(|b| {
                        // 4 and 5 are x and y again, viewed as vec4s.
                        let all = [(0, &b.params), (1, &b.x), (2, &b.y), (3, &b.stats), (4, &b.x), (5, &b.y)];
                        let used: Vec<_> = all.into_iter().filter(|(i, _)| bindings.contains(i)).collect();
                        self.bind(entry, &used)
                    })
                    .collect()
            })?;
            let grids: Vec<_> = r
                .bands
                .iter()
                .map(|b| grid_1d(b.rows as u64 * per_row, self.max_workgroups()))
                .collect::<Result<_>>()?;
            steps.push((pipeline, groups.to_vec(), grids));
        }
        self.submit_pass(
            variant,
            |_| {},
            |pass| {
                // Band by band, each kernel of the variant in order: a dispatch sees the previous one's writes.
                for band in 0..r.bands.len() {
                    for (pipeline, groups, grids) in &steps {
                        pass.set_pipeline(pipeline);
                        pass.set_bind_group(0, &groups[band], &[]);
                        pass.dispatch_workgroups(grids[band].0, grids[band].1, 1);
                    }
                }
            },
        )
    }

    fn download(&self, r: &mut SoftmaxResident) -> Result<Vec<f32>> {
        let parts: Vec<_> = r.bands.iter().map(|b| (&b.y, 4 * (b.rows * r.cols) as u64)).collect();
        self.read_buffers::<f32>(&parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::{backend_with_a_loop_trip_limit, right_at_the_limit_and_refused_past_it};
    use gpuworthy_core::workloads::Shape2;

    /// The cost model counts a second read of every softmax row longer than the fused kernel holds in registers
    /// ([`gpuworthy_core::traffic::FUSED_ROW_READ_ONCE`]): the shader's constants must hold that many floats.
    #[test]
    fn the_fused_kernel_holds_the_row_the_cost_model_counts_as_read_once() {
        let constant = |name: &str| -> usize {
            let line =
                gpuworthy_shaders::source("softmax.wgsl").lines().find(|l| l.starts_with(&format!("const {name}: u32 = "))).unwrap();
            line.split('=').nth(1).unwrap().trim().trim_end_matches(';').trim_end_matches('u').parse().unwrap()
        };
        let floats = constant("FUSED_WG") * constant("ROW_CACHE") * 4;
        assert_eq!(floats, gpuworthy_core::traffic::FUSED_ROW_READ_ONCE);
    }

    /// On llvmpipe, every variant is right on a row as long as its loop-trip count allows and refuses a longer one.
    #[test]
    fn every_variant_is_right_at_the_longest_row_the_driver_allows_and_refuses_the_next() {
        let Some((backend, limit)) = backend_with_a_loop_trip_limit() else { return };
        for variant in VARIANTS.names() {
            if variant == "split" {
                // Its chunks bound its loops: no row that fits a binding reaches the limit.
                let longest_row = (backend.max_binding_bytes() / 4) as usize;
                assert!(loop_trips(variant, 1, longest_row) <= limit, "split on a row of {longest_row} columns");
                continue;
            }
            // Trips grow by one per 256 or 512 columns: search down from the first count past the limit.
            let longest = (1..=limit as usize * 512).rev().find(|&cols| loop_trips(variant, 1, cols) <= limit).unwrap();
            let row = |cols| Softmax::generate(&Shape2::new(1, cols), 3).unwrap();
            right_at_the_limit_and_refused_past_it::<Softmax>(&backend, variant, &row(longest), &row(longest + 1));
        }
    }
}
