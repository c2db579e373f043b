//! `square` and `saxpy`: one thread per element (`naive`), or per four elements with `vec4` loads and stores
//! (`vec4`). Buffers are padded to whole `vec4`s so the vector kernels need no scalar tail.

use gpuworthy_core::Result;

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
    pub(super) fn upload_elementwise(&self, a: f32, x: &[f32], y: Option<&[f32]>) -> Result<ElementwiseResident> {
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
    pub(super) fn launch_elementwise(&self, entry: &'static str, r: &mut ElementwiseResident) -> Result<()> {
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

    pub(super) fn download_elementwise(&self, r: &ElementwiseResident) -> Result<Vec<f32>> {
        let parts: Vec<_> = r.chunks.iter().map(|c| (&c.y, 4 * c.n as u64)).collect();
        self.read_buffers::<f32>(&parts)
    }
}
