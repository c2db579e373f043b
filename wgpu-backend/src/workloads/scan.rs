//! `scan` on wgpu: reduce-then-scan in one compute pass (`shaders/scan.wgsl`, whose header says why WGSL has no
//! single-pass look-back). Each chunk of the input (at most one storage binding) is reduced tile by tile, level
//! after level until one tile holds a level's sums, then scanned from the top level down, each tile starting from
//! its carry; a chunk after the first adds the previous chunk's last output. The whole plan of dispatches is made at
//! upload and its bind groups on the first launch, so a launch only records dispatches.

use gpuworthy_core::workloads::Scan;
use gpuworthy_core::{Implements, KernelSource, Result, Variant, VariantTable};

use super::{grid_1d, split};
use crate::WgpuBackend;
use super::shader;

/// Elements per tile: 256 threads of 4 elements (`TILE` in `scan.wgsl`).
const TILE: usize = 1024;

/// The WGSL this workload runs and the entry points it defines.
pub(crate) const SHADERS: &[KernelSource] = &[shader!("scan.wgsl", ["scan_tile_sums", "scan_tile"])];

/// The variants of `scan`.
pub(crate) static VARIANTS: VariantTable<()> = VariantTable {
    workload: "scan",
    variants: &[Variant::new("reduce_then_scan", &["scan_tile_sums", "scan_tile"], ())],
};

/// The uniform block of `scan.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    use_carries: u32,
    has_prev: u32,
    prev_last: u32,
}

/// One dispatch of the plan: its entry point, its bindings (binding number, index into the resident's buffers) and
/// its workgroups.
#[derive(Debug)]
struct Dispatch {
    entry: &'static str,
    bindings: Vec<(u32, usize)>,
    workgroups: u64,
}

/// Resident data of `scan`: every buffer of the plan, the plan, and its bind groups once made.
#[derive(Debug)]
pub struct ScanResident {
    buffers: Vec<wgpu::Buffer>,
    /// Each chunk's output buffer and length, in order.
    outputs: Vec<(usize, usize)>,
    plan: Vec<Dispatch>,
    groups: Option<Vec<wgpu::BindGroup>>,
}

/// The number of tiles of `n` elements.
fn tiles(n: usize) -> usize {
    n.div_ceil(TILE)
}

impl WgpuBackend {
    /// Adds the dispatches that scan buffer `x` (`n` elements) into buffer `y`, the reduce levels' buffers made on
    /// the way, with `prev` (a buffer and the index of its last output) added to every element when set.
    fn plan_scan(
        &self,
        buffers: &mut Vec<wgpu::Buffer>,
        plan: &mut Vec<Dispatch>,
        (x, y, n): (usize, usize, usize),
        prev: Option<(usize, usize)>,
        no_carry: usize,
    ) -> Result<()> {
        let count = tiles(n);
        let mut push = |buffer: wgpu::Buffer| {
            buffers.push(buffer);
            buffers.len() - 1
        };
        let carries = if count > 1 {
            let sums = push(self.storage_zeroed("scan tile sums", 4 * count as u64)?);
            let scanned = push(self.storage_zeroed("scanned tile sums", 4 * count as u64)?);
            let params = push(self.uniform("scan params", &Params { n: n as u32, use_carries: 0, has_prev: 0, prev_last: 0 })?);
            plan.push(Dispatch {
                entry: "scan_tile_sums",
                bindings: vec![(0, params), (1, x), (2, sums)],
                workgroups: count as u64,
            });
            self.plan_scan(buffers, plan, (sums, scanned, count), None, no_carry)?;
            Some(scanned)
        } else {
            None
        };
        let params = Params {
            n: n as u32,
            use_carries: carries.is_some() as u32,
            has_prev: prev.is_some() as u32,
            prev_last: prev.map_or(0, |(_, last)| last as u32),
        };
        let params = {
            buffers.push(self.uniform("scan params", &params)?);
            buffers.len() - 1
        };
        plan.push(Dispatch {
            entry: "scan_tile",
            bindings: vec![(0, params), (1, x), (3, y), (4, carries.unwrap_or(no_carry)), (5, prev.map_or(no_carry, |(b, _)| b))],
            workgroups: count as u64,
        });
        Ok(())
    }
}

impl Implements<Scan> for WgpuBackend {
    type Resident = ScanResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// The only variant.
    fn best_variant(&self, _params: &<Scan as gpuworthy_core::Workload>::Params) -> &'static str {
        "reduce_then_scan"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_pipelines(VARIANTS.lookup::<Scan, _>(self, variant)?)
    }

    fn upload(&self, x: &Vec<f32>) -> Result<ScanResident> {
        let max_len = (self.max_binding_bytes() / 4) as usize;
        let mut buffers = vec![self.storage_zeroed("no carry", 4)?];
        let no_carry = 0;
        let (mut outputs, mut plan) = (Vec::new(), Vec::new());
        let mut prev = None;
        for range in split(x.len(), max_len, TILE) {
            let n = range.len();
            buffers.push(self.storage_with("x", bytemuck::cast_slice(&x[range]))?);
            buffers.push(self.storage_zeroed("y", 4 * n as u64)?);
            let (input, output) = (buffers.len() - 2, buffers.len() - 1);
            self.plan_scan(&mut buffers, &mut plan, (input, output, n), prev, no_carry)?;
            outputs.push((output, n));
            prev = Some((output, n - 1));
        }
        self.flush_uploads();
        Ok(ScanResident { buffers, outputs, plan, groups: None })
    }

    fn launch(&self, variant: &str, r: &mut ScanResident) -> Result<()> {
        let variant = VARIANTS.lookup::<Scan, _>(self, variant)?;
        if r.plan.is_empty() {
            return Ok(());
        }
        let pipelines = [self.pipeline(variant.kernels[0])?, self.pipeline(variant.kernels[1])?];
        let pipeline_of = |entry: &str| &pipelines[usize::from(entry == variant.kernels[1])];
        if r.groups.is_none() {
            let groups = r
                .plan
                .iter()
                .map(|d| {
                    let bound: Vec<(u32, &wgpu::Buffer)> = d.bindings.iter().map(|&(b, i)| (b, &r.buffers[i])).collect();
                    self.bind(d.entry, &bound)
                })
                .collect::<Result<Vec<_>>>()?;
            r.groups = Some(groups);
        }
        let groups = r.groups.as_ref().expect("made above");
        let grids: Vec<(u32, u32)> =
            r.plan.iter().map(|d| grid_1d(d.workgroups, self.max_workgroups())).collect::<Result<_>>()?;
        self.submit_pass(
            "scan",
            |_| {},
            |pass| {
                for ((dispatch, group), (x, y)) in r.plan.iter().zip(groups).zip(grids) {
                    pass.set_pipeline(pipeline_of(dispatch.entry));
                    pass.set_bind_group(0, group, &[]);
                    pass.dispatch_workgroups(x, y, 1);
                }
            },
        )
    }

    fn download(&self, r: &mut ScanResident) -> Result<Vec<f32>> {
        let parts: Vec<(&wgpu::Buffer, u64)> = r.outputs.iter().map(|&(b, n)| (&r.buffers[b], 4 * n as u64)).collect();
        if parts.is_empty() {
            return Ok(Vec::new());
        }
        self.read_buffers::<f32>(&parts)
    }
}
