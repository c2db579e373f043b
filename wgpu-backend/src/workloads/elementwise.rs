//! `square` and `saxpy`: one thread per element (`naive`), or per four elements with `vec4` loads and stores
//! (`vec4`). Buffers are padded to whole `vec4`s so the vector kernels need no scalar tail.

use gpuworthy_core::workloads::{Saxpy, SaxpyInput, Square};
use gpuworthy_core::{Implements, Result, Variant, VariantTable, Workload};

use super::{BindGroups, grid_1d, split};
use crate::WgpuBackend;

/// The uniform block of both shaders: the chunk's length and, for saxpy, `a`.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    a: f32,
    _pad: [u32; 2],
}

/// One chunk of an element-wise input on the device.
#[derive(Debug)]
struct Chunk {
    n: usize,
    params: wgpu::Buffer,
    x: wgpu::Buffer,
    y: wgpu::Buffer,
}

/// Resident data of `square` and `saxpy`.
#[derive(Debug)]
pub struct ElementwiseResident {
    chunks: Vec<Chunk>,
    groups: BindGroups,
}

impl WgpuBackend {
    /// Uploads `x` and the initial `y` in chunks that fit one binding.
    fn upload_elementwise(&self, a: f32, x: &[f32], y: Option<&[f32]>) -> Result<ElementwiseResident> {
        let max_len = (self.max_binding_bytes() / 4) as usize;
        let chunks = split(x.len(), max_len, 4)
            .into_iter()
            .map(|range| {
                let n = range.len();
                let params = self.uniform("params", &Params { n: n as u32, a, _pad: [0; 2] })?;
                let x = self.storage_with("x", bytemuck::cast_slice(&x[range.clone()]))?;
                let y = match y {
                    Some(y) => self.storage_with("y", bytemuck::cast_slice(&y[range]))?,
                    None => self.storage_zeroed("y", 4 * n as u64)?,
                };
                Ok(Chunk { n, params, x, y })
            })
            .collect::<Result<_>>()?;
        self.flush_uploads();
        Ok(ElementwiseResident { chunks, groups: BindGroups::default() })
    }

    /// Dispatches `entry` over every chunk: `naive` entries take one element per thread, `vec4` ones four.
    fn launch_elementwise(&self, entry: &'static str, r: &mut ElementwiseResident) -> Result<()> {
        if r.chunks.is_empty() {
            return Ok(());
        }
        self.pipeline(entry)?;
        let per_thread = if entry.ends_with("vec4") { 4 } else { 1 };
        let (x_binding, y_binding) = if per_thread == 4 { (3, 4) } else { (1, 2) };
        let chunks = &r.chunks;
        let groups = r.groups.get_or_make(entry, || {
            chunks.iter().map(|c| self.bind(entry, &[(0, &c.params), (x_binding, &c.x), (y_binding, &c.y)])).collect()
        })?;
        let grids: Vec<_> = chunks
            .iter()
            .map(|c| {
                let threads = (c.n as u64).div_ceil(per_thread);
                grid_1d(threads.div_ceil(u64::from(self.elementwise_workgroup_size())), self.max_workgroups())
            })
            .collect::<Result<_>>()?;
        self.dispatch_each(entry, groups, grids, None)
    }

    fn download_elementwise(&self, r: &ElementwiseResident) -> Result<Vec<f32>> {
        let parts: Vec<_> = r.chunks.iter().map(|c| (&c.y, 4 * c.n as u64)).collect();
        self.read_buffers::<f32>(&parts)
    }
}

/// The variants of `square`.
pub(crate) static SQUARE: VariantTable<()> = VariantTable {
    workload: "square",
    variants: &[Variant::new("naive", &["square_naive"], ()), Variant::new("vec4", &["square_vec4"], ())],
};

/// The variants of `saxpy`.
pub(crate) static SAXPY: VariantTable<()> = VariantTable {
    workload: "saxpy",
    variants: &[Variant::new("naive", &["saxpy_naive"], ()), Variant::new("vec4", &["saxpy_vec4"], ())],
};

impl Implements<Square> for WgpuBackend {
    type Resident = ElementwiseResident;

    fn variants(&self) -> Vec<&'static str> {
        SQUARE.names()
    }

    /// `vec4`: `vec4<f32>` accesses, the fastest from 2^18.
    fn best_variant(&self, _params: &<Square as gpuworthy_core::Workload>::Params) -> &'static str {
        "vec4"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_pipelines(SQUARE.lookup::<Square, _>(self, variant)?)
    }

    fn upload(&self, input: &Vec<f32>) -> Result<Self::Resident> {
        self.upload_elementwise(0.0, input, None)
    }

    fn launch(&self, variant: &str, r: &mut Self::Resident) -> Result<()> {
        self.launch_elementwise(SQUARE.lookup::<Square, _>(self, variant)?.kernels[0], r)
    }

    fn download(&self, r: &mut Self::Resident) -> Result<Vec<f32>> {
        self.download_elementwise(r)
    }
}

impl Implements<Saxpy> for WgpuBackend {
    type Resident = ElementwiseResident;

    fn variants(&self) -> Vec<&'static str> {
        SAXPY.names()
    }

    /// `vec4`: `vec4<f32>` accesses, the fastest from 2^18.
    fn best_variant(&self, _params: &<Saxpy as gpuworthy_core::Workload>::Params) -> &'static str {
        "vec4"
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        self.prepare_pipelines(SAXPY.lookup::<Saxpy, _>(self, variant)?)
    }

    fn upload(&self, input: &SaxpyInput) -> Result<Self::Resident> {
        Saxpy::validate(input)?;
        self.upload_elementwise(input.a, &input.x, Some(&input.y))
    }

    fn launch(&self, variant: &str, r: &mut Self::Resident) -> Result<()> {
        self.launch_elementwise(SAXPY.lookup::<Saxpy, _>(self, variant)?.kernels[0], r)
    }

    fn download(&self, r: &mut Self::Resident) -> Result<Vec<f32>> {
        self.download_elementwise(r)
    }
}
