//! Raw kernels through WGSL ([`gpuworthy_core::raw`]): the kernel's own shader, made into a pipeline through the
//! backend's extension point ([`WgpuBackend::custom_pipeline`], naga-validated, cached by a hash of the source) and
//! dispatched inside the queue lock, with the module's binding convention.
//!
//! The dispatch is shaped from the shader's own `@workgroup_size` (read by naga), so the caller states it once. A line
//! longer than one dimension's workgroup limit folds into rows (`row` in the uniform says how many invocations one row
//! of the dispatch holds); a raw kernel's arrays cannot be split into chunks, since its indexing is the caller's, so
//! an array past one storage binding is refused with the adapter's limit named.

use gpuworthy_core::raw::{Raw, RawInput, RawParams, Shape, WgslBody};
use gpuworthy_core::{Backend, Error, Implements, Result, Workload};
use wgpu::util::DeviceExt;

use crate::WgpuBackend;

/// The one variant: the kernel's WGSL.
const KERNEL: &str = "kernel";

/// A raw kernel's buffers on the device, bound, with the dispatch that covers its shape.
pub struct RawOnDevice {
    params: RawParams,
    /// The pipeline, found once at upload so that a launch does not hash its source again.
    pipeline: crate::CustomPipeline,
    outputs: Vec<wgpu::Buffer>,
    /// The bind group, or nothing for empty arrays (a binding of zero bytes is not allowed, and nothing runs).
    group: Option<wgpu::BindGroup>,
    grid: (u32, u32, u32),
    n: usize,
}

/// The `@workgroup_size` of the compute entry point `entry` in `source`, once naga has validated it.
fn workgroup_size(source: &str, entry: &str) -> Result<[u32; 3]> {
    crate::validate_wgsl(source, entry)?;
    let module = naga::front::wgsl::parse_str(source).map_err(|e| Error::invalid(e.emit_to_string(source)))?;
    module
        .entry_points
        .iter()
        .find(|e| e.name == entry && e.stage == naga::ShaderStage::Compute)
        .map(|e| e.workgroup_size)
        .ok_or_else(|| Error::invalid(format!("no compute entry point `{entry}`")))
}

impl WgpuBackend {
    /// The workgroups that cover `shape` with workgroups of `size`, and the invocations along x of one row of them.
    fn raw_grid(&self, shape: Shape, size: [u32; 3]) -> Result<((u32, u32, u32), u32)> {
        let (wx, wy) = (u64::from(size[0].max(1)), u64::from(size[1].max(1)));
        let limit = u64::from(self.max_workgroups());
        let too_large = |what: String| Error::TooLarge {
            what,
            limit: format!("max_compute_workgroups_per_dimension = {limit} on this adapter"),
        };
        let (across, down) = match shape {
            Shape::Line(n) => {
                let groups = (n as u64).div_ceil(wx).max(1);
                let across = groups.min(limit);
                (across, groups.div_ceil(across))
            }
            Shape::Grid { width, height } => ((width as u64).div_ceil(wx).max(1), (height as u64).div_ceil(wy).max(1)),
        };
        if across > limit || down > limit {
            return Err(too_large(format!("a grid of {across} x {down} workgroups for {shape}")));
        }
        let row = u32::try_from(across * wx).map_err(|_| too_large(format!("{} invocations in a row", across * wx)))?;
        Ok(((across as u32, down as u32, 1), row))
    }

    /// The kernel's WGSL body, or [`Error::Unsupported`].
    fn raw_body<'a>(&self, params: &'a RawParams) -> Result<&'a WgslBody> {
        params.kernel.wgsl_body().ok_or_else(|| {
            Error::unsupported(self.kind(), format!("raw kernel `{}` (it has no WGSL)", params.kernel.name()))
        })
    }
}

impl Implements<Raw> for WgpuBackend {
    type Resident = RawOnDevice;

    fn variants(&self) -> Vec<&'static str> {
        vec![KERNEL]
    }

    /// A kernel without WGSL is [`Error::Unsupported`]; an array past one storage binding, or a shape past `u32` or
    /// the workgroup limits, is [`Error::TooLarge`] naming the limit.
    fn check_size(&self, params: &RawParams) -> Result<()> {
        self.raw_body(params)?;
        let n = params.shape.elements()?;
        let bytes = 4 * n as u64;
        if bytes > self.max_binding_bytes() {
            return Err(Error::TooLarge {
                what: format!("arrays of {n} elements ({bytes} bytes) for `{}`", params.kernel.name()),
                limit: format!(
                    "one storage binding of {} bytes on this adapter (a raw kernel's arrays cannot be split into chunks)",
                    self.max_binding_bytes()
                ),
            });
        }
        let (width, height) = params.shape.extent();
        if u32::try_from(width).is_err() || u32::try_from(height).is_err() {
            return Err(Error::TooLarge {
                what: format!("a shape of {}", params.shape),
                limit: "2^32 - 1 per side (u32)".into(),
            });
        }
        Ok(())
    }

    fn best_variant(&self, _: &RawParams) -> &'static str {
        KERNEL
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        if variant == KERNEL { Ok(()) } else { Err(Implements::<Raw>::unknown_variant(self, variant)) }
    }

    /// Validates the kernel's WGSL and makes its pipeline (or finds it in the cache): its own phase.
    fn prepare_for(&self, variant: &str, params: &RawParams) -> Result<()> {
        Implements::<Raw>::prepare(self, variant)?;
        let body = self.raw_body(params)?;
        self.custom_pipeline(&body.source, &body.entry).map(drop)
    }

    fn upload(&self, input: &RawInput) -> Result<RawOnDevice> {
        Raw::validate(input)?;
        Implements::<Raw>::check_size(self, &input.params)?;
        let params = input.params.clone();
        let body = self.raw_body(&params)?;
        let pipeline = self.custom_pipeline(&body.source, &body.entry)?;
        let size = workgroup_size(&body.source, &body.entry)?;
        let (grid, row) = self.raw_grid(params.shape, size)?;
        let n = params.shape.elements()?;
        if n == 0 {
            return Ok(RawOnDevice { params, pipeline, outputs: Vec::new(), group: None, grid, n });
        }
        // The uniform: width, height, row, then the scalars, padded to 16 bytes.
        let (width, height) = params.shape.extent();
        let mut words: Vec<u32> = vec![width as u32, height as u32, row];
        words.extend(params.scalars.iter().map(|s| s.to_bits()));
        words.resize(words.len().next_multiple_of(4), 0);
        let uniform = self.scoped("allocating a raw kernel's uniform", || {
            self.device_handle().create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("raw kernel uniform"),
                contents: bytemuck::cast_slice(&words),
                usage: wgpu::BufferUsages::UNIFORM,
            })
        })?;
        let inputs =
            input.arrays.iter().map(|a| self.storage_buffer("raw kernel input", a)).collect::<Result<Vec<_>>>()?;
        let outputs = (0..params.kernel.outputs().len())
            .map(|_| self.zeroed_storage_buffer("raw kernel output", 4 * n as u64))
            .collect::<Result<Vec<_>>>()?;
        let bindings: Vec<(u32, &wgpu::Buffer)> = std::iter::once(&uniform)
            .chain(&inputs)
            .chain(&outputs)
            .enumerate()
            .map(|(binding, buffer)| (binding as u32, buffer))
            .collect();
        let group = self.bind_buffers(&pipeline, &bindings)?;
        Ok(RawOnDevice { params, pipeline, outputs, group: Some(group), grid, n })
    }

    fn launch(&self, variant: &str, data: &mut RawOnDevice) -> Result<()> {
        Implements::<Raw>::prepare(self, variant)?;
        match &data.group {
            Some(group) => self.dispatch(&data.pipeline, group, data.grid),
            None => Ok(()),
        }
    }

    fn download(&self, data: &mut RawOnDevice) -> Result<Vec<Vec<f32>>> {
        if data.n == 0 {
            return Ok(vec![Vec::new(); data.params.kernel.outputs().len()]);
        }
        let bytes = 4 * data.n as u64;
        let parts: Vec<(&wgpu::Buffer, u64)> = data.outputs.iter().map(|b| (b, bytes)).collect();
        let all: Vec<f32> = self.read_buffers(&parts)?;
        Ok(all.chunks(data.n).map(<[f32]>::to_vec).collect())
    }
}
