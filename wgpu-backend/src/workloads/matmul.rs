//! `matmul`: `naive` (one thread per entry of C, reading A and B from global memory), `tiled` (16×16 tiles staged in
//! workgroup memory: each value loaded once per tile instead of once per product), `register` (each thread keeps
//! a 4×4 block of C in registers, reusing each loaded value four times) and `wide` (128×128 tiles, an 8×8 block per
//! thread: each loaded value reused eight times). Matrices larger than one binding are refused
//! with the limit named: splitting a matrix product is a different algorithm, not a chunking.

use gpuworthy_core::workloads::{Matmul, MatmulInput, MatmulParams};
use gpuworthy_core::{Error, Implements, Result, Variant, VariantTable, Workload};

use super::loop_run;
use crate::WgpuBackend;
use super::shader;
use gpuworthy_core::KernelSource;

#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    m: u32,
    k: u32,
    n: u32,
    _pad: u32,
}

/// Resident data of `matmul`.
#[derive(Debug)]
pub struct MatmulResident {
    m: usize,
    k: usize,
    n: usize,
    buffers: Option<Buffers>,
    groups: super::BindGroups,
}

#[derive(Debug)]
struct Buffers {
    params: wgpu::Buffer,
    a: wgpu::Buffer,
    b: wgpu::Buffer,
    c: wgpu::Buffer,
}

/// The entry point of a variant and the side of the square block of C one workgroup computes.
/// The loop trips one invocation of a variant runs for inner dimension `k` (see [`loop_run`]): naive's K loop;
/// tiled's loop over 16-wide tiles with 16 steps inside; register's loop over 16-deep slices with a 4-trip load loop
/// and 16 steps inside; wide's loop over 16-deep slices with 16 steps inside (counted without the exit tests, wide
/// gave a wrong product at K = 58 256, the last K it allowed). The tests run every variant at its largest K.
fn loop_trips(variant: &str, k: u64) -> u64 {
    let slices = k.div_ceil(16);
    match variant {
        "naive" => loop_run(k),
        "tiled" | "wide" => loop_run(slices) + slices * loop_run(16),
        _ => loop_run(slices) + slices * (loop_run(4) + loop_run(16)),
    }
}

/// The WGSL this workload runs and the entry points it defines.
pub(crate) const SHADERS: &[KernelSource] = &[shader!("matmul.wgsl", ["matmul_naive", "matmul_tiled", "matmul_register", "matmul_wide"])];

/// The variants of `matmul`, with the (rows, columns) of the block of C one workgroup computes.
pub(crate) static VARIANTS: VariantTable<(u64, u64)> = VariantTable {
    workload: "matmul",
    variants: &[
        Variant::new("naive", &["matmul_naive"], (16, 16)),
        Variant::new("tiled", &["matmul_tiled"], (16, 16)),
        Variant::new("register", &["matmul_register"], (64, 64)),
        Variant::new("wide", &["matmul_wide"], (128, 128)),
    ],
};

impl Implements<Matmul> for WgpuBackend {
    type Resident = MatmulResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// `wide` (128×128 tiles, 8×8 per thread) from 2048 × 2048 outputs (faster than `register` there on an H200;
    /// measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so), `register` below, where the larger
    /// tiles leave compute units
    /// idle.
    fn best_variant(&self, params: &<Matmul as gpuworthy_core::Workload>::Params) -> &'static str {
        if params.m.saturating_mul(params.n) >= 2048 * 2048 { "wide" } else { "register" }
    }

    fn check_size(&self, p: &MatmulParams) -> Result<()> {
        for (what, elements) in [("matrix A", p.m * p.k), ("matrix B", p.k * p.n), ("matrix C", p.m * p.n)] {
            self.fits_one_binding(what, 4 * elements as u64)?;
        }
        Ok(())
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_pipelines(VARIANTS.lookup::<Matmul, _>(self, variant)?)
    }

    fn upload(&self, input: &MatmulInput) -> Result<MatmulResident> {
        Matmul::validate(input)?;
        let MatmulInput { m, k, n, .. } = *input;
        let empty = MatmulResident { m, k, n, buffers: None, groups: Default::default() };
        if m == 0 || n == 0 {
            return Ok(empty);
        }
        Implements::<Matmul>::check_size(self, &Matmul::params(input))?;
        if [m, k, n].iter().any(|&d| d > u32::MAX as usize) {
            return Err(Error::TooLarge {
                what: format!("matmul {m}x{k}x{n}"),
                limit: "2^32 - 1 per dimension".into(),
            });
        }
        let params = Params { m: m as u32, k: k as u32, n: n as u32, _pad: 0 };
        let buffers = Buffers {
            params: self.uniform("params", &params)?,
            a: self.storage_with("A", bytemuck::cast_slice(&input.a))?,
            b: self.storage_with("B", bytemuck::cast_slice(&input.b))?,
            c: self.storage_zeroed("C", 4 * (m * n) as u64)?,
        };
        self.flush_uploads();
        Ok(MatmulResident { buffers: Some(buffers), ..empty })
    }

    fn launch(&self, variant: &str, r: &mut MatmulResident) -> Result<()> {
        let (entry, block) = VARIANTS.lookup::<Matmul, _>(self, variant).map(|v| (v.kernels[0], v.launch))?;
        let Some(b) = &r.buffers else { return Ok(()) };
        self.check_loop_trips(|| format!("matmul {variant} with K = {}", r.k), loop_trips(variant, r.k as u64))?;
        let (x, y) = ((r.n as u64).div_ceil(block.1), (r.m as u64).div_ceil(block.0));
        let limit = self.max_workgroups() as u64;
        if x > limit || y > limit {
            return Err(Error::TooLarge {
                what: format!("a {x} x {y} grid of workgroups for {}x{} outputs", r.m, r.n),
                limit: format!("{limit} workgroups per dimension"),
            });
        }
        let group = r
            .groups
            .get_or_make(entry, || Ok(vec![self.bind(entry, &[(0, &b.params), (1, &b.a), (2, &b.b), (3, &b.c)])?]))?;
        self.dispatch_each(entry, group, [(x as u32, y as u32)], None)
    }

    fn download(&self, r: &mut MatmulResident) -> Result<Vec<f32>> {
        match &r.buffers {
            None => Ok(vec![0.0; r.m * r.n]),
            Some(b) => self.read_buffers::<f32>(&[(&b.c, 4 * (r.m * r.n) as u64)]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::{backend_with_a_loop_trip_limit, right_at_the_limit_and_refused_past_it};

    /// On llvmpipe, every variant is right at the largest K its loop-trip count allows and refuses the next.
    #[test]
    fn every_variant_is_right_at_the_largest_k_the_driver_allows_and_refuses_the_next() {
        let Some((backend, limit)) = backend_with_a_loop_trip_limit() else { return };
        for variant in VARIANTS.names() {
            let largest = (1..=limit).rev().find(|&k| loop_trips(variant, k) <= limit).unwrap() as usize;
            // The largest K that fills its last step (tiles and slices are 16 deep): the most trips within the limit.
            let shape = |k| Matmul::generate(&MatmulParams { m: 4, k, n: 4 }, 3).unwrap();
            right_at_the_limit_and_refused_past_it::<Matmul>(
                &backend,
                variant,
                &shape(largest / 16 * 16),
                &shape(largest + 1),
            );
        }
    }
}
