//! The extension points for shaders written outside gpuworthy: a compute pipeline from WGSL source (validated by naga
//! first, so that an error names the line), storage and uniform buffers, dispatches submitted inside the backend's
//! queue lock (and timed when a timing window is open), and read-back.
//!
//! wgpu itself would report a bad shader through an error scope or a panic in its default error handler; naga's own
//! parser and validator run first here, and their messages, with the line and column and the offending text, become
//! [`Error::Compile`]. Pipelines are cached by a hash of the source and the entry point, so that a user's kernel is
//! compiled once per backend, as the built-in ones are, and its first-call cost is measured apart.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use gpuworthy_core::{BackendKind, Error, Result};

use crate::{ShaderChecks, WgpuBackend, lock};

/// A compute pipeline made from WGSL that a caller supplied, on one backend's device.
#[derive(Debug, Clone)]
pub struct CustomPipeline {
    pipeline: Arc<wgpu::ComputePipeline>,
    entry: String,
}

impl CustomPipeline {
    /// The pipeline, for code that records its own passes.
    pub fn pipeline(&self) -> &wgpu::ComputePipeline {
        &self.pipeline
    }

    /// The entry point it runs.
    pub fn entry(&self) -> &str {
        &self.entry
    }
}

/// Parses and validates `source` with naga and checks that it has the compute entry point `entry`; an error carries
/// naga's message, which names the line and column.
pub fn validate_wgsl(source: &str, entry: &str) -> Result<()> {
    let compile_error = |log: String| Error::Compile {
        backend: BackendKind::Wgpu,
        kernel: entry.to_owned(),
        options: "naga validation".into(),
        log,
    };
    let module = naga::front::wgsl::parse_str(source).map_err(|e| compile_error(e.emit_to_string(source)))?;
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .map_err(|e| compile_error(e.emit_to_string(source)))?;
    let computes: Vec<&str> =
        module.entry_points.iter().filter(|e| e.stage == naga::ShaderStage::Compute).map(|e| e.name.as_str()).collect();
    if !computes.contains(&entry) {
        return Err(compile_error(format!(
            "the shader has no compute entry point `{entry}`; it has: {}",
            if computes.is_empty() { "none".to_owned() } else { computes.join(", ") }
        )));
    }
    Ok(())
}

/// The cache key of a custom pipeline: its source, entry point and the run-time checks compiled into it.
fn pipeline_key(source: &str, entry: &str, checks: ShaderChecks) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    source.hash(&mut hasher);
    entry.hash(&mut hasher);
    (checks.bounds, checks.loops, checks.division).hash(&mut hasher);
    hasher.finish()
}

impl WgpuBackend {
    /// The compute pipeline for `entry` in the WGSL `source`, validated by naga first ([`validate_wgsl`]), with an
    /// automatic layout (bind group 0 holds the buffers the shader declares). Cached by a hash of source and entry
    /// point: asking again costs a lookup.
    ///
    /// ```
    /// use gpuworthy_wgpu::WgpuBackend;
    ///
    /// const SHADER: &str = "
    /// @group(0) @binding(0) var<storage, read> x: array<f32>;
    /// @group(0) @binding(1) var<storage, read_write> y: array<f32>;
    /// @compute @workgroup_size(64)
    /// fn add_one(@builtin(global_invocation_id) id: vec3<u32>) {
    ///     if (id.x < arrayLength(&x)) { y[id.x] = x[id.x] + 1.0; }
    /// }";
    ///
    /// let Ok(wgpu) = WgpuBackend::new() else { return Ok(()) }; // no adapter here
    /// let pipeline = wgpu.custom_pipeline(SHADER, "add_one")?;
    /// let x = wgpu.storage_buffer("x", &[1.0f32, 2.0, 3.0])?;
    /// let y = wgpu.zeroed_storage_buffer("y", 12)?;
    /// let group = wgpu.bind_buffers(&pipeline, &[(0, &x), (1, &y)])?;
    /// wgpu.dispatch(&pipeline, &group, (1, 1, 1))?;
    /// assert_eq!(wgpu.read_buffer::<f32>(&y, 3)?, [2.0, 3.0, 4.0]);
    /// assert!(wgpu.custom_pipeline("fn broken(", "broken").unwrap_err().to_string().contains(":1:"));
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn custom_pipeline(&self, source: &str, entry: &str) -> Result<CustomPipeline> {
        self.pipeline_from_wgsl(source, entry, ShaderChecks::ALL)
    }

    /// The compute pipeline of a shader that gpuworthy generated (an expression's), with the backend's run-time
    /// checks ([`ShaderChecks`]) as for the built-in shaders rather than every check as for a caller's WGSL.
    ///
    /// Only for sources whose every loop ends by construction: loop bounding is what the backend's default leaves
    /// out, and it kept the driver from unrolling the reductions' counted loops.
    pub(crate) fn generated_pipeline(&self, source: &str, entry: &str) -> Result<CustomPipeline> {
        self.pipeline_from_wgsl(source, entry, self.shader_checks)
    }

    fn pipeline_from_wgsl(&self, source: &str, entry: &str, checks: ShaderChecks) -> Result<CustomPipeline> {
        let key = pipeline_key(source, entry, checks);
        if let Some(pipeline) = lock(&self.custom_pipelines).get(&key) {
            return Ok(CustomPipeline { pipeline: Arc::clone(pipeline), entry: entry.to_owned() });
        }
        validate_wgsl(source, entry)?;
        let compile_error = |e: Error| Error::Compile {
            backend: BackendKind::Wgpu,
            kernel: entry.to_owned(),
            options: "automatic layout".into(),
            log: e.to_string(),
        };
        let module = self
            .scoped(&format!("compiling the shader of `{entry}`"), || {
                let descriptor = wgpu::ShaderModuleDescriptor {
                    label: Some(entry),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                };
                if checks == ShaderChecks::ALL {
                    self.device_handle().create_shader_module(descriptor)
                } else {
                    // SAFETY: only `generated_pipeline` asks for fewer checks, for the expression shaders of
                    // `expr.rs`, whose loops all end: the reduction's grid-stride loop steps by the grid's thread
                    // count (at least one workgroup) up to a length below 2^31, the partials' loop by the workgroup
                    // size, and the tree halves its stride down to zero; the elementwise shader has no loop. Index
                    // clamps and division guards stay unless the user turned them off (GPUWORTHY_WGPU_CHECKS), and
                    // those shaders test every index against the chunk's length as the built-in ones do.
                    unsafe { self.device_handle().create_shader_module_trusted(descriptor, checks.runtime_checks()) }
                }
            })
            .map_err(compile_error)?;
        let pipeline = self
            .scoped(&format!("creating the pipeline `{entry}`"), || {
                self.device_handle().create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry),
                    layout: None,
                    module: &module,
                    entry_point: Some(entry),
                    compilation_options: wgpu::PipelineCompilationOptions::default(),
                    cache: None,
                })
            })
            .map_err(compile_error)?;
        // As for the built-in pipelines: the first one cached is the one every thread gets, so that a bind group made
        // for it by one thread is valid for another's dispatch.
        let pipeline = Arc::clone(lock(&self.custom_pipelines).entry(key).or_insert_with(|| Arc::new(pipeline)));
        Ok(CustomPipeline { pipeline, entry: entry.to_owned() })
    }

    /// A storage buffer holding `data`, padded with zeros to whole `vec4`s, usable as a copy source and target.
    pub fn storage_buffer<T: bytemuck::Pod>(&self, label: &str, data: &[T]) -> Result<wgpu::Buffer> {
        let buffer = self.storage_with(label, bytemuck::cast_slice(data))?;
        self.flush_uploads();
        Ok(buffer)
    }

    /// A zero-filled storage buffer of at least `bytes` bytes.
    pub fn zeroed_storage_buffer(&self, label: &str, bytes: u64) -> Result<wgpu::Buffer> {
        self.storage_zeroed(label, bytes)
    }

    /// A uniform buffer holding `value` (a `#[repr(C)]` struct laid out as WGSL's uniform rules ask).
    pub fn uniform_buffer<T: bytemuck::Pod>(&self, label: &str, value: &T) -> Result<wgpu::Buffer> {
        self.uniform(label, value)
    }

    /// A bind group for group 0 of `pipeline`, with each buffer bound whole at its binding number.
    pub fn bind_buffers(&self, pipeline: &CustomPipeline, buffers: &[(u32, &wgpu::Buffer)]) -> Result<wgpu::BindGroup> {
        let ranges: Vec<_> = buffers.iter().map(|&(binding, buffer)| (binding, buffer, 0, None)).collect();
        self.bind_ranges_to(&pipeline.pipeline, &pipeline.entry, &ranges)
    }

    /// Submits one compute pass running `pipeline` over `workgroups` with `group` bound, inside the queue lock (timed
    /// when a timing window is open), without waiting for it. A grid past the adapter's limit per dimension is
    /// [`Error::TooLarge`] naming it.
    pub fn dispatch(
        &self,
        pipeline: &CustomPipeline,
        group: &wgpu::BindGroup,
        workgroups: (u32, u32, u32),
    ) -> Result<()> {
        self.check_grid(workgroups)?;
        self.submit_pass(
            &pipeline.entry,
            |_| {},
            |pass| {
                pass.set_pipeline(&pipeline.pipeline);
                pass.set_bind_group(0, group, &[]);
                pass.dispatch_workgroups(workgroups.0, workgroups.1, workgroups.2);
            },
        )
    }

    /// Refuses a grid past the adapter's limit of workgroups per dimension, naming the limit.
    pub(crate) fn check_grid(&self, workgroups: (u32, u32, u32)) -> Result<()> {
        let limit = self.max_workgroups();
        if workgroups.0 > limit || workgroups.1 > limit || workgroups.2 > limit {
            return Err(Error::TooLarge {
                what: format!("a grid of {} x {} x {} workgroups", workgroups.0, workgroups.1, workgroups.2),
                limit: format!("max_compute_workgroups_per_dimension = {limit} on this adapter"),
            });
        }
        Ok(())
    }

    /// The first `len` values of `buffer`, copied back to the host once the work submitted before has finished.
    pub fn read_buffer<T: bytemuck::Pod + Send + Sync>(&self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<T>> {
        let bytes = (len * size_of::<T>()) as u64;
        if bytes > buffer.size() {
            return Err(Error::invalid(format!("cannot read {bytes} bytes of a buffer of {}", buffer.size())));
        }
        if len == 0 {
            return Ok(Vec::new());
        }
        self.read_buffers(&[(buffer, bytes)])
    }

    /// The most workgroups a dispatch may have in each dimension on this adapter.
    pub fn max_workgroups_per_dimension(&self) -> u32 {
        self.max_workgroups()
    }

    /// The largest buffer one storage binding may cover here, in bytes: a kernel given more must be dispatched in
    /// chunks, or refused with this limit named.
    pub fn max_storage_binding_bytes(&self) -> u64 {
        self.max_binding_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naga_names_the_line_of_a_bad_shader_and_the_entry_points_there_are() {
        let bad = "@compute @workgroup_size(1)\nfn main() {\n    let x: f32 = undefined_name;\n}\n";
        let err = validate_wgsl(bad, "main").unwrap_err().to_string();
        assert!(err.contains(":3:") && err.contains("undefined_name"), "{err}");
        let good = "@compute @workgroup_size(1)\nfn main() {}\n";
        validate_wgsl(good, "main").unwrap();
        let err = validate_wgsl(good, "other").unwrap_err().to_string();
        assert!(err.contains("no compute entry point `other`") && err.contains("main"), "{err}");
    }

    #[test]
    fn a_custom_pipeline_runs_and_is_cached() {
        let Some(backend) = gpuworthy_core::BackendKind::Wgpu.opened_or_skipped(WgpuBackend::new()) else {
            return;
        };
        let source = "@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n\
                      @compute @workgroup_size(64) fn twice(@builtin(global_invocation_id) id: vec3<u32>) {\n\
                      if (id.x < arrayLength(&y)) { y[id.x] = 2.0 * y[id.x]; } }";
        let pipeline = backend.custom_pipeline(source, "twice").unwrap();
        let again = backend.custom_pipeline(source, "twice").unwrap();
        assert!(Arc::ptr_eq(&pipeline.pipeline, &again.pipeline));
        let data: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let y = backend.storage_buffer("y", &data).unwrap();
        let group = backend.bind_buffers(&pipeline, &[(0, &y)]).unwrap();
        backend.dispatch(&pipeline, &group, (2, 1, 1)).unwrap();
        let out: Vec<f32> = backend.read_buffer(&y, 100).unwrap();
        assert_eq!(out, data.iter().map(|v| 2.0 * v).collect::<Vec<_>>());
        assert!(backend.dispatch(&pipeline, &group, (u32::MAX, 1, 1)).is_err());
    }
}
