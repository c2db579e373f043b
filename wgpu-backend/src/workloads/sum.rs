//! `sum` in two passes within one compute pass: every chunk is reduced by up to [`MAX_GROUPS`] workgroups into
//! partial sums (a grid-stride loop per thread over `vec4`s, four loads in flight, then a workgroup-memory tree or
//! subgroup reduction), and one workgroup then reduces all the partials. Threads accumulate with Kahan compensation, so the `f32` result passes
//! the 1e-5 relative check at 2^28 elements.

use gpuworthy_core::workloads::Sum;
use gpuworthy_core::{Implements, Result, Variant, VariantTable};

use super::{BindGroups, WORKGROUP, grid_1d, loop_run, split, unknown};
use crate::WgpuBackend;
use super::shader;
use gpuworthy_core::KernelSource;

/// Workgroups per chunk in the first pass, and so partial sums per chunk. 1024 × 4 bytes is a multiple of the
/// storage-offset alignment (256), so each chunk's partials can be bound at their own offset.
const MAX_GROUPS: u64 = 1024;

#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    _pad: [u32; 3],
}

#[derive(Debug)]
struct Chunk {
    n: usize,
    params: wgpu::Buffer,
    x: wgpu::Buffer,
}

/// Resident data of `sum`.
#[derive(Debug)]
pub struct SumResident {
    chunks: Vec<Chunk>,
    /// `MAX_GROUPS` partial sums per chunk, cleared before every launch.
    partials: Option<wgpu::Buffer>,
    final_params: Option<wgpu::Buffer>,
    result: Option<wgpu::Buffer>,
    groups: BindGroups,
}

/// The WGSL this workload runs and the entry points it defines.
pub(crate) const SHADERS: &[KernelSource] = &[shader!("sum.wgsl", ["sum_workgroup"]), KernelSource { file: "sum_subgroup.wgsl", source: gpuworthy_shaders::SUM_WITH_SUBGROUPS, kernels: &["sum_subgroup"] }];

/// The variants of `sum`, each marked with whether it needs subgroup operations.
pub(crate) static VARIANTS: VariantTable<bool> = VariantTable {
    workload: "sum",
    variants: &[
        Variant::new("workgroup", &["sum_workgroup"], false),
        Variant::new("subgroup", &["sum_subgroup"], true),
    ],
};

impl WgpuBackend {
    /// The sum variant `name`, if this adapter can run it (`subgroup` needs subgroup operations).
    fn sum_variant(&self, name: &str) -> Result<&'static Variant<bool>> {
        match VARIANTS.lookup::<Sum, _>(self, name)? {
            variant if variant.launch && !self.has_subgroups() => Err(unknown::<Sum>(self, name)),
            variant => Ok(variant),
        }
    }
}

impl Implements<Sum> for WgpuBackend {
    type Resident = SumResident;

    /// `subgroup` only where the adapter has subgroup operations.
    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.variants.iter().filter(|v| self.has_subgroups() || !v.launch).map(|v| v.name).collect()
    }

    /// `subgroup` where the adapter has subgroup operations, else `workgroup`.
    fn best_variant(&self, _params: &<Sum as gpuworthy_core::Workload>::Params) -> &'static str {
        if self.has_subgroups() { "subgroup" } else { "workgroup" }
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_pipelines(self.sum_variant(variant)?)
    }

    fn upload(&self, x: &Vec<f32>) -> Result<SumResident> {
        let max_len = (self.max_binding_bytes() / 4) as usize;
        let chunks: Vec<Chunk> = split(x.len(), max_len, 4)
            .into_iter()
            .map(|range| {
                let n = range.len();
                let params = self.uniform("params", &Params { n: n as u32, _pad: [0; 3] })?;
                Ok(Chunk { n, params, x: self.storage_with("x", bytemuck::cast_slice(&x[range]))? })
            })
            .collect::<Result<_>>()?;
        let (partials, final_params, result) = if chunks.is_empty() {
            (None, None, None)
        } else {
            let partial_count = MAX_GROUPS * chunks.len() as u64;
            self.fits_one_binding("the partial sums", 4 * partial_count)?;
            let final_params = Params { n: partial_count as u32, _pad: [0; 3] };
            (
                Some(self.storage_zeroed("partial sums", 4 * partial_count)?),
                Some(self.uniform("final params", &final_params)?),
                Some(self.storage_zeroed("sum", 4)?),
            )
        };
        self.flush_uploads();
        Ok(SumResident { chunks, partials, final_params, result, groups: BindGroups::default() })
    }

    fn launch(&self, variant: &str, r: &mut SumResident) -> Result<()> {
        let entry = self.sum_variant(variant)?.kernels[0];
        let pipeline = self.pipeline(entry)?;
        let (Some(partials), Some(final_params), Some(result)) = (&r.partials, &r.final_params, &r.result) else {
            return Ok(()); // empty input: the sum is the zero the result starts as
        };
        let chunks = &r.chunks;
        let groups = r.groups.get_or_make(entry, || {
            let slot_bytes = 4 * MAX_GROUPS;
            let mut groups: Vec<_> = chunks
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    self.bind_ranges(
                        entry,
                        &[
                            (0, &c.params, 0, None),
                            (3, &c.x, 0, None),
                            (2, partials, i as u64 * slot_bytes, Some(slot_bytes)),
                        ],
                    )
                })
                .collect::<Result<_>>()?;
            groups.push(self.bind(entry, &[(0, final_params), (3, partials), (2, result)])?);
            Ok(groups)
        })?;
        // Loop trips of one invocation (see `loop_run`): the grid-stride loop (four vec4s per trip) and the 256-wide
        // tree, in the first pass over the largest chunk and in the final pass over every chunk's partial sums.
        let trips = |n: u64, groups: u64| loop_run(n.div_ceil(16 * groups * WORKGROUP)) + loop_run(8);
        let largest = chunks.iter().map(|c| c.n as u64).max().unwrap_or(0);
        let first = trips(largest, largest.div_ceil(4 * WORKGROUP).clamp(1, MAX_GROUPS));
        self.check_loop_trips(
            || format!("sum of {largest} values"),
            first.max(trips(MAX_GROUPS * chunks.len() as u64, 1)),
        )?;
        let grids: Vec<_> = chunks
            .iter()
            .map(|c| grid_1d((c.n as u64).div_ceil(4 * WORKGROUP).min(MAX_GROUPS), self.max_workgroups()))
            .collect::<Result<_>>()?;
        self.submit_pass(
            entry,
            |encoder| encoder.clear_buffer(partials, 0, None),
            |pass| {
                pass.set_pipeline(&pipeline);
                for (group, (x, y)) in groups.iter().zip(grids) {
                    pass.set_bind_group(0, group, &[]);
                    pass.dispatch_workgroups(x, y, 1);
                }
                pass.set_bind_group(0, groups.last().expect("the final reduction's group"), &[]);
                pass.dispatch_workgroups(1, 1, 1);
            },
        )
    }

    fn download(&self, r: &mut SumResident) -> Result<f64> {
        match &r.result {
            None => Ok(0.0),
            Some(result) => Ok(self.read_buffers::<f32>(&[(result, 4)])?[0] as f64),
        }
    }
}
