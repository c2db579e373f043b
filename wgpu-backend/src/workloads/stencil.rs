//! `stencil`: the 3×3 box blur. `naive` (16×16 workgroups) reads its nine neighbours from global memory; `tiled`
//! loads a 34×34 tile (a 32×32 block and its one-pixel halo) into workgroup memory once and each thread computes four
//! outputs of a column from six horizontal sums; `rows` keeps no tile at all: each thread walks eight rows down a
//! column, reusing each row's horizontal sum in registers for three outputs. Tall images are computed in bands of rows, each band's input buffer carrying the rows above and below it
//! that its edge pixels need.

use gpuworthy_core::workloads::{Stencil, StencilInput};
use gpuworthy_core::{Implements, Result, Variant, VariantTable, Workload};

use super::{BindGroups, split};
use crate::WgpuBackend;
use super::shader;
use gpuworthy_core::KernelSource;

#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    height: u32,
    width: u32,
    row_start: u32,
    rows: u32,
    in_row_start: u32,
    _pad: [u32; 3],
}

#[derive(Debug)]
struct Band {
    rows: usize,
    params: wgpu::Buffer,
    src: wgpu::Buffer,
    dst: wgpu::Buffer,
}

/// Resident data of `stencil`.
#[derive(Debug)]
pub struct StencilResident {
    width: usize,
    bands: Vec<Band>,
    groups: BindGroups,
}

/// The WGSL this workload runs and the entry points it defines.
pub(crate) const SHADERS: &[KernelSource] = &[shader!("stencil.wgsl", ["stencil_naive", "stencil_tiled", "stencil_rows"])];

/// The variants of `stencil`, with the (columns, rows) of output one workgroup covers.
pub(crate) static VARIANTS: VariantTable<(u64, u64)> = VariantTable {
    workload: "stencil",
    variants: &[
        Variant::new("naive", &["stencil_naive"], (16, 16)),
        Variant::new("tiled", &["stencil_tiled"], (32, 32)),
        Variant::new("rows", &["stencil_rows"], (64, 8)),
    ],
};

impl Implements<Stencil> for WgpuBackend {
    type Resident = StencilResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// `rows`: the fastest at 8192² on an H200 through Vulkan (measured:
    /// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
    fn best_variant(&self, _params: &<Stencil as gpuworthy_core::Workload>::Params) -> &'static str {
        "rows"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_pipelines(VARIANTS.lookup::<Stencil, _>(self, variant)?)
    }

    fn upload(&self, input: &StencilInput) -> Result<StencilResident> {
        Stencil::validate(input)?;
        let (h, w) = (input.height, input.width);
        let mut bands = Vec::new();
        if h > 0 && w > 0 {
            let row_bytes = 4 * w as u64;
            self.fits_one_binding("three rows of the image", 3 * row_bytes)?;
            // Each band's input holds its rows plus one halo row above and below.
            let rows_per_band = (self.max_binding_bytes() / row_bytes) as usize - 2;
            for rows in split(h, rows_per_band, 1) {
                let (first_in, end_in) = (rows.start.saturating_sub(1), (rows.end + 1).min(h));
                let params = Params {
                    height: h as u32,
                    width: w as u32,
                    row_start: rows.start as u32,
                    rows: rows.len() as u32,
                    in_row_start: first_in as u32,
                    _pad: [0; 3],
                };
                bands.push(Band {
                    rows: rows.len(),
                    params: self.uniform("params", &params)?,
                    src: self.storage_with("image", bytemuck::cast_slice(&input.data[first_in * w..end_in * w]))?,
                    dst: self.storage_zeroed("blurred", row_bytes * rows.len() as u64)?,
                });
            }
        }
        self.flush_uploads();
        Ok(StencilResident { width: w, bands, groups: BindGroups::default() })
    }

    fn launch(&self, variant: &str, r: &mut StencilResident) -> Result<()> {
        let variant = VARIANTS.lookup::<Stencil, _>(self, variant)?;
        let (entry, (tile_columns, tile_rows)) = (variant.kernels[0], variant.launch);
        let bands = &r.bands;
        let groups = r.groups.get_or_make(entry, || {
            bands.iter().map(|b| self.bind(entry, &[(0, &b.params), (1, &b.src), (2, &b.dst)])).collect()
        })?;
        let columns = (r.width as u64).div_ceil(tile_columns) as u32;
        let grids = bands.iter().map(|band| (columns, (band.rows as u64).div_ceil(tile_rows) as u32));
        self.dispatch_each(entry, groups, grids, None)
    }

    fn download(&self, r: &mut StencilResident) -> Result<Vec<f32>> {
        let parts: Vec<_> = r.bands.iter().map(|b| (&b.dst, 4 * (b.rows * r.width) as u64)).collect();
        self.read_buffers::<f32>(&parts)
    }
}
