//! `histogram`: `global` makes one atomic increment in global memory per value, so values of the same bin contend
//! for one counter (the skewed distribution makes 90% of them do so); `private` counts into a histogram in
//! workgroup memory first and merges it into the global one once per workgroup (privatisation), reading the values
//! as `vec4`s. Bins beyond what workgroup memory holds (4096) are counted in ranges, one range per sweep over the
//! values.

use gpuworthy_core::workloads::{Histogram, HistogramInput};
use gpuworthy_core::{Implements, Result, Variant, VariantTable, Workload};

use super::{BindGroups, WORKGROUP, grid_1d, loop_run, split};
use crate::WgpuBackend;
use super::shader;
use gpuworthy_core::KernelSource;

#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    bins: u32,
    _pad: [u32; 2],
}

#[derive(Debug)]
struct Chunk {
    n: usize,
    params: wgpu::Buffer,
    x: wgpu::Buffer,
}

/// Resident data of `histogram`.
#[derive(Debug)]
pub struct HistogramResident {
    bins: usize,
    chunks: Vec<Chunk>,
    counts: wgpu::Buffer,
    groups: BindGroups,
}

/// Where a histogram kernel counts, and the most workgroups it uses per chunk (its loops stride over the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counters {
    /// Atomics straight into the counts buffer.
    Global {
        /// Workgroups per chunk.
        max_groups: u64,
    },
    /// A private histogram per workgroup in workgroup memory, merged once.
    PerWorkgroup {
        /// Workgroups per chunk.
        max_groups: u64,
    },
}

/// The WGSL this workload runs and the entry points it defines.
pub(crate) const SHADERS: &[KernelSource] = &[shader!("histogram.wgsl", ["histogram_global", "histogram_private"])];

/// The variants of `histogram`.
pub(crate) static VARIANTS: VariantTable<Counters> = VariantTable {
    workload: "histogram",
    variants: &[
        Variant::new("global", &["histogram_global"], Counters::Global { max_groups: 1 << 16 }),
        Variant::new("private", &["histogram_private"], Counters::PerWorkgroup { max_groups: 2048 }),
    ],
};

impl Implements<Histogram> for WgpuBackend {
    type Resident = HistogramResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// `private`: per-workgroup histograms in workgroup memory, the fastest from 2^14.
    fn best_variant(&self, _params: &<Histogram as gpuworthy_core::Workload>::Params) -> &'static str {
        "private"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_pipelines(VARIANTS.lookup::<Histogram, _>(self, variant)?)
    }

    fn upload(&self, input: &HistogramInput) -> Result<HistogramResident> {
        Histogram::validate(input)?;
        let bins = input.bins;
        let max_len = (self.max_binding_bytes() / 4) as usize;
        let chunks = split(input.x.len(), max_len, 4)
            .into_iter()
            .map(|range| {
                let n = range.len();
                Ok(Chunk {
                    n,
                    params: self.uniform("params", &Params { n: n as u32, bins: bins as u32, _pad: [0; 2] })?,
                    x: self.storage_with("x", bytemuck::cast_slice(&input.x[range]))?,
                })
            })
            .collect::<Result<_>>()?;
        let counts = self.storage_zeroed("counts", 4 * bins as u64)?;
        self.flush_uploads();
        Ok(HistogramResident { bins, chunks, counts, groups: BindGroups::default() })
    }

    fn launch(&self, variant: &str, r: &mut HistogramResident) -> Result<()> {
        let variant = VARIANTS.lookup::<Histogram, _>(self, variant)?;
        let (entry, counters) = (variant.kernels[0], variant.launch);
        let (Counters::Global { max_groups } | Counters::PerWorkgroup { max_groups }) = counters;
        let (chunks, counts) = (&r.chunks, &r.counts);
        let groups = r.groups.get_or_make(entry, || {
            chunks
                .iter()
                .map(|c| {
                    if matches!(counters, Counters::PerWorkgroup { .. }) {
                        // The same values as scalars (for the tail) and as vec4s.
                        self.bind(entry, &[(0, &c.params), (1, &c.x), (2, counts), (3, &c.x)])
                    } else {
                        self.bind(entry, &[(0, &c.params), (1, &c.x), (2, counts)])
                    }
                })
                .collect()
        })?;
        // Loop trips of one invocation over the largest chunk (see `loop_run`): `global` strides one value per trip;
        // `private` runs, per range of 4096 bins, a clear, a stride of four vec4s per trip and a merge.
        let largest = chunks.iter().map(|c| c.n as u64).max().unwrap_or(0);
        let threads = largest.div_ceil(WORKGROUP).clamp(1, max_groups) * WORKGROUP;
        let trips = match counters {
            Counters::Global { .. } => loop_run(largest.div_ceil(threads)),
            Counters::PerWorkgroup { .. } => {
                let ranges = (r.bins as u64).div_ceil(4096);
                let clear_or_merge = loop_run(4096 / WORKGROUP);
                loop_run(ranges) + ranges * (2 * clear_or_merge + loop_run(largest.div_ceil(16 * threads)))
            }
        };
        self.check_loop_trips(|| format!("histogram {} of {largest} values", variant.name), trips)?;
        let grids: Vec<_> = chunks
            .iter()
            .map(|c| grid_1d((c.n as u64).div_ceil(WORKGROUP).min(max_groups), self.max_workgroups()))
            .collect::<Result<_>>()?;
        self.dispatch_each(entry, groups, grids, Some(counts))
    }

    fn download(&self, r: &mut HistogramResident) -> Result<Vec<u32>> {
        self.read_buffers::<u32>(&[(&r.counts, 4 * r.bins as u64)])
    }
}
