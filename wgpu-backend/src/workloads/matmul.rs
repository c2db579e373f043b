//! `matmul`: `naive` (one thread per entry of C, reading A and B from global memory), `tiled` (16×16 tiles staged in
//! workgroup memory: each value loaded once per tile instead of once per product), `register` (each thread keeps
//! a 4×4 block of C in registers, reusing each loaded value four times) and `wide` (128×128 tiles, an 8×8 block per
//! thread: each loaded value reused eight times). Matrices larger than one binding are refused
//! with the limit named: splitting a matrix product is a different algorithm, not a chunking.
//!
//! `tiled-f16` and `coop-f16` are the precision rungs: A and B rounded to f16 (by the first launch on a resident
//! input, kept for the next, as the CUDA 16-bit rungs do) into copies padded to whole tiles, multiplied with f32
//! products and sums, checked at fp16's bound. `tiled-f16` is `tiled` on the f16 copies, offered wherever the adapter
//! has `shader-f16` (lavapipe included): half the bytes, the same arithmetic. `coop-f16` multiplies through
//! cooperative matrices (tensor cores) and is offered only where [`WgpuBackend::cooperative_f16`] holds: wgpu 30 exposes
//! cooperative matrices as an experimental feature, on Vulkan through `VK_KHR_cooperative_matrix` and on Metal, in
//! square 8 x 8 or 16 x 16 shapes, f16 or f32 but not bf16.

use gpuworthy_core::workloads::{Matmul, MatmulInput, MatmulParams};
use gpuworthy_core::{Error, Implements, Precision, Result, Variant, VariantTable, Workload};

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

/// The padded f16 copy the rounding kernel writes: its rows and columns, and the matrix's.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Rounding {
    rows: u32,
    cols: u32,
    padded_cols: u32,
    units: u32,
}

/// The shape the 16-bit rungs' kernels read: C's, and the row lengths of the padded A and B.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct PaddedShape {
    m: u32,
    n: u32,
    padded_k: u32,
    padded_n: u32,
}

/// The block of C one workgroup of the cooperative-matrix kernel computes, and the depth of one staged slice of K:
/// the f16 copies both 16-bit rungs read are padded to whole blocks and slices (`tiled-f16`'s 16 x 16 tiles fit).
const PADDED_TILE: usize = 128;
const PADDED_SLICE: usize = 32;

/// Resident data of `matmul`.
#[derive(Debug)]
pub struct MatmulResident {
    m: usize,
    k: usize,
    n: usize,
    buffers: Option<Buffers>,
    /// A and B rounded to f16 and padded, made by the first launch of a 16-bit rung on this input, kept for both.
    halves: Option<Halves>,
    groups: super::BindGroups,
}

/// The f16 copies of A and B (padded to whole tiles) and the shape the product reads.
#[derive(Debug)]
struct Halves {
    shape: wgpu::Buffer,
    a: wgpu::Buffer,
    b: wgpu::Buffer,
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
        // 16-deep tiles over K padded to 32.
        "tiled-f16" => loop_run(2 * k.div_ceil(32)) + 2 * k.div_ceil(32) * loop_run(16),
        // Slices of 32, each with four loads of eight halves staged and two 16-deep steps, and eight stores of eight
        // elements past C's edge.
        "coop-f16" => loop_run(k.div_ceil(32)) + k.div_ceil(32) * (4 * loop_run(8) + loop_run(2)) + 8 * loop_run(8),
        _ => loop_run(slices) + slices * (loop_run(4) + loop_run(16)),
    }
}

/// The WGSL this workload runs and the entry points it defines.
pub(crate) const SHADERS: &[KernelSource] = &[
    shader!("matmul.wgsl", ["matmul_naive", "matmul_tiled", "matmul_register", "matmul_wide"]),
    shader!("matmul_f16.wgsl", ["matmul_round_to_f16", "matmul_tiled_f16"]),
    shader!("matmul_coop.wgsl", ["matmul_coop_f16"]),
];

/// The variants of `matmul`, with the (rows, columns) of the block of C one workgroup computes.
pub(crate) static VARIANTS: VariantTable<(u64, u64)> = VariantTable {
    workload: "matmul",
    variants: &[
        Variant::new("naive", &["matmul_naive"], (16, 16)),
        Variant::new("tiled", &["matmul_tiled"], (16, 16)),
        Variant::new("register", &["matmul_register"], (64, 64)),
        Variant::new("wide", &["matmul_wide"], (128, 128)),
        Variant::new("tiled-f16", &["matmul_round_to_f16", "matmul_tiled_f16"], (16, 16)).in_precision(Precision::Fp16),
        Variant::new("coop-f16", &["matmul_round_to_f16", "matmul_coop_f16"], (PADDED_TILE as u64, PADDED_TILE as u64))
            .in_precision(Precision::Fp16),
    ],
};

impl WgpuBackend {
    /// The variant called `name` if this adapter runs it: the 16-bit rungs only where the adapter has
    /// `shader-f16`, and `coop-f16` only where cooperative matrices run too.
    fn matmul_variant(&self, name: &str) -> Result<&'static Variant<(u64, u64)>> {
        let variant = VARIANTS.lookup::<Matmul, _>(self, name)?;
        let missing = match name {
            "coop-f16" => self.cooperative_f16().err().map(|why| format!("cooperative matrices with f16 inputs ({why})")),
            _ if variant.precision == Precision::Fp16 && !self.has_shader_f16() => Some("shader-f16".to_owned()),
            _ => None,
        };
        match missing {
            Some(what) => Err(Error::Unavailable {
                backend: gpuworthy_core::BackendKind::Wgpu,
                reason: format!("matmul {name} needs {what} on this adapter"),
            }),
            None => Ok(variant),
        }
    }

    /// Rounds the resident A and B to f16 into copies padded to whole tiles ([`Halves`]), once per input.
    fn round_to_halves(&self, r: &mut MatmulResident) -> Result<()> {
        let (Some(b), None) = (&r.buffers, &r.halves) else { return Ok(()) };
        let (m, k, n) = (r.m, r.k, r.n);
        let (padded_m, padded_k, padded_n) =
            (m.next_multiple_of(PADDED_TILE), k.next_multiple_of(PADDED_SLICE), n.next_multiple_of(PADDED_TILE));
        let copies = [("A", &b.a, m, k, padded_m, padded_k), ("B", &b.b, k, n, padded_k, padded_n)];
        for (what, _, _, _, rows, cols) in copies {
            self.fits_one_binding(&format!("matrix {what} in f16, padded to {rows} x {cols}"), 2 * (rows * cols) as u64)?;
        }
        let entry = "matmul_round_to_f16";
        let mut narrow = Vec::new();
        let mut groups = Vec::new();
        let mut grids = Vec::new();
        for (what, wide, rows, cols, padded_rows, padded_cols) in copies {
            let units = padded_rows * padded_cols / 8;
            let params = Rounding { rows: rows as u32, cols: cols as u32, padded_cols: padded_cols as u32, units: units as u32 };
            let target = self.storage_zeroed(&format!("{what} in f16"), 2 * (padded_rows * padded_cols) as u64)?;
            let uniform = self.uniform("rounding", &params)?;
            groups.push(self.bind(entry, &[(4, &uniform), (5, wide), (6, &target)])?);
            grids.push(super::grid_1d((units as u64).div_ceil(super::WORKGROUP), self.max_workgroups())?);
            narrow.push(target);
        }
        self.dispatch_each(entry, &groups, grids, None)?;
        let shape = PaddedShape { m: m as u32, n: n as u32, padded_k: padded_k as u32, padded_n: padded_n as u32 };
        let [a, b] = <[wgpu::Buffer; 2]>::try_from(narrow).expect("two copies made above");
        r.halves = Some(Halves { shape: self.uniform("padded shape", &shape)?, a, b });
        Ok(())
    }
}

impl Implements<Matmul> for WgpuBackend {
    type Resident = MatmulResident;

    /// The f32 ladder, then `coop-f16` where the adapter has cooperative matrices ([`WgpuBackend::cooperative_f16`]).
    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names().into_iter().filter(|name| self.matmul_variant(name).is_ok()).collect()
    }

    fn precision(&self, variant: &str) -> Precision {
        VARIANTS.precision(variant)
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
        self.prepare_pipelines(self.matmul_variant(variant)?)
    }

    fn upload(&self, input: &MatmulInput) -> Result<MatmulResident> {
        Matmul::validate(input)?;
        let MatmulInput { m, k, n, .. } = *input;
        let empty = MatmulResident { m, k, n, buffers: None, halves: None, groups: Default::default() };
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
        let matmul = self.matmul_variant(variant)?;
        let (entry, block) = (*matmul.kernels.last().expect("a variant names its kernels"), matmul.launch);
        if r.buffers.is_none() || (matmul.precision == Precision::Fp16 && r.k == 0) {
            // No outputs, or no products: C stays zero.
            return Ok(());
        }
        self.check_loop_trips(|| format!("matmul {variant} with K = {}", r.k), loop_trips(variant, r.k as u64))?;
        let (x, y) = ((r.n as u64).div_ceil(block.1), (r.m as u64).div_ceil(block.0));
        let limit = self.max_workgroups() as u64;
        if x > limit || y > limit {
            return Err(Error::TooLarge {
                what: format!("a {x} x {y} grid of workgroups for {}x{} outputs", r.m, r.n),
                limit: format!("{limit} workgroups per dimension"),
            });
        }
        if matmul.precision == Precision::Fp16 {
            self.round_to_halves(r)?;
        }
        let (Some(b), halves) = (&r.buffers, &r.halves) else { unreachable!("checked above") };
        let bindings = match halves {
            Some(h) if matmul.precision == Precision::Fp16 => [(0, &h.shape), (1, &h.a), (2, &h.b), (3, &b.c)],
            _ => [(0, &b.params), (1, &b.a), (2, &b.b), (3, &b.c)],
        };
        let group = r.groups.get_or_make(entry, || Ok(vec![self.bind(entry, &bindings)?]))?;
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
        for variant in Implements::<Matmul>::variants(&backend) {
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
