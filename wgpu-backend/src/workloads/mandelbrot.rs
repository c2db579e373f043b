//! `mandelbrot`: one thread per pixel in 16×16 workgroups. Tall images are computed in bands of rows, each band's
//! counts in its own buffer within the binding limit. The arithmetic is the reference's, rounded the same way (the
//! shader explains how it keeps a compiler's multiply-add fusion from changing the rounding), so the counts match.

use gpuworthy_core::workloads::{Mandelbrot, MandelbrotParams};
use gpuworthy_core::{Error, Implements, Result, Variant, VariantTable, Workload};

use super::{BindGroups, loop_run, split};
use crate::WgpuBackend;
use super::shader;
use gpuworthy_core::KernelSource;

#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    width: u32,
    row_end: u32,
    max_iter: u32,
    row_start: u32,
    x_min: f32,
    y_min: f32,
    dx: f32,
    dy: f32,
    /// Always 1.0: multiplying products by a value the shader compiler cannot see keeps FMA fusion from changing
    /// the rounding (see the shader).
    one: f32,
    /// The image row the instance's row 0 is ([`gpuworthy_core::workloads::Band`]).
    first_row: u32,
    _pad: [u32; 2],
}

#[derive(Debug)]
struct Band {
    rows: usize,
    params: wgpu::Buffer,
    counts: wgpu::Buffer,
}

/// Resident data of `mandelbrot`: the counts buffers (there is no input data).
#[derive(Debug)]
pub struct MandelbrotResident {
    width: usize,
    max_iter: u32,
    bands: Vec<Band>,
    groups: BindGroups,
}

/// The WGSL this workload runs and the entry points it defines.
pub(crate) const SHADERS: &[KernelSource] = &[shader!("mandelbrot.wgsl", ["mandelbrot_naive"])];

/// The variants of `mandelbrot`.
pub(crate) static VARIANTS: VariantTable<()> =
    VariantTable { workload: "mandelbrot", variants: &[Variant::new("naive", &["mandelbrot_naive"], ())] };

impl Implements<Mandelbrot> for WgpuBackend {
    type Resident = MandelbrotResident;

    fn variants(&self) -> Vec<&'static str> {
        VARIANTS.names()
    }

    /// The only variant.
    fn best_variant(&self, _params: &<Mandelbrot as gpuworthy_core::Workload>::Params) -> &'static str {
        "naive"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_pipelines(VARIANTS.lookup::<Mandelbrot, _>(self, variant)?)
    }

    fn upload(&self, p: &MandelbrotParams) -> Result<MandelbrotResident> {
        Mandelbrot::validate(p)?;
        let (dx, dy) = p.steps();
        // The shader counts image rows in u32.
        let first_row = u32::try_from(p.image_height()).map(|_| p.first_row() as u32).map_err(|_| Error::TooLarge {
            what: format!("a mandelbrot image of {} rows", p.image_height()),
            limit: format!("{} rows (the shader counts rows in u32)", u32::MAX),
        })?;
        let row_bytes = 4 * p.width as u64;
        let bands = if p.width == 0 || p.height == 0 {
            Vec::new()
        } else {
            self.fits_one_binding("a row of counts", row_bytes)?;
            let rows_per_band = (self.max_binding_bytes() / row_bytes) as usize;
            split(p.height, rows_per_band, 1)
                .into_iter()
                .map(|rows| {
                    let params = Params {
                        width: p.width as u32,
                        row_end: rows.end as u32,
                        max_iter: p.max_iter,
                        row_start: rows.start as u32,
                        x_min: p.region.x_min,
                        y_min: p.region.y_min,
                        dx,
                        dy,
                        one: 1.0,
                        first_row,
                        _pad: [0; 2],
                    };
                    Ok(Band {
                        rows: rows.len(),
                        params: self.uniform("params", &params)?,
                        counts: self.storage_zeroed("counts", row_bytes * rows.len() as u64)?,
                    })
                })
                .collect::<Result<_>>()?
        };
        self.flush_uploads();
        Ok(MandelbrotResident { width: p.width, max_iter: p.max_iter, bands, groups: BindGroups::default() })
    }

    fn launch(&self, variant: &str, r: &mut MandelbrotResident) -> Result<()> {
        let entry = VARIANTS.lookup::<Mandelbrot, _>(self, variant)?.kernels[0];
        self.pipeline(entry)?;
        // The escape loop runs up to max_iter trips (one more check after the last).
        self.check_loop_trips(
            || format!("mandelbrot with max_iter = {}", r.max_iter),
            loop_run(u64::from(r.max_iter)),
        )?;
        let bands = &r.bands;
        let groups = r.groups.get_or_make(entry, || {
            bands.iter().map(|b| self.bind(entry, &[(0, &b.params), (1, &b.counts)])).collect()
        })?;
        let columns = (r.width as u64).div_ceil(16) as u32;
        let grids = bands.iter().map(|band| (columns, (band.rows as u64).div_ceil(16) as u32));
        self.dispatch_each(entry, groups, grids, None)
    }

    fn download(&self, r: &mut MandelbrotResident) -> Result<Vec<u32>> {
        let parts: Vec<_> = r.bands.iter().map(|b| (&b.counts, 4 * (b.rows * r.width) as u64)).collect();
        self.read_buffers::<u32>(&parts)
    }
}
