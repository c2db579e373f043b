//! Shader modules and compute pipelines: compiled on first use (the first-call cost the harness reports on its own),
//! cached per file and per entry point for the life of the backend.

use std::sync::Arc;

use gpuworthy_core::{BackendKind, Error, Result};

use crate::{ShaderChecks, WgpuBackend, device_error, lock, shaders};

/// How a shader declares the workgroup size the backend sets ([`WgpuBackend::with_elementwise_workgroup_size`]).
const WORKGROUP_OVERRIDE: &str = "override WG: u32";

impl WgpuBackend {
    /// The compute pipeline for `entry` (an entry point in `shaders/`), created on first use and cached.
    pub(crate) fn pipeline(&self, entry: &'static str) -> Result<Arc<wgpu::ComputePipeline>> {
        if let Some(p) = lock(&self.pipelines).get(entry) {
            return Ok(Arc::clone(p));
        }
        let shader = shaders::shader_of(entry)
            .ok_or_else(|| device_error(format!("no shader defines the entry point `{entry}`")))?;
        let module = {
            let mut modules = lock(&self.modules);
            match modules.get(shader.file) {
                Some(m) => m.clone(),
                None => {
                    let m = self.compile(shader.file, shader.source, entry)?;
                    modules.insert(shader.file, m.clone());
                    m
                }
            }
        };
        // A shader whose workgroup size is an overridable constant (the elementwise ones) gets the backend's; naming
        // a constant a module does not declare is an error, so the others get none.
        let workgroup = [("WG", f64::from(self.elementwise_workgroup))];
        let constants: &[(&str, f64)] = if shader.source.contains(WORKGROUP_OVERRIDE) { &workgroup } else { &[] };
        let pipeline = self
            .scoped(&format!("creating the pipeline `{entry}`"), || {
                self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry),
                    layout: None,
                    module: &module,
                    entry_point: Some(entry),
                    compilation_options: wgpu::PipelineCompilationOptions { constants, ..Default::default() },
                    cache: None,
                })
            })
            .map_err(|e| Error::Compile {
                backend: BackendKind::Wgpu,
                kernel: entry.to_owned(),
                options: "automatic layout".into(),
                log: e.to_string(),
            })?;
        // Two threads may both have missed the cache and built a pipeline: the first one cached is the one every
        // caller gets. Pipelines with automatic layouts do not share bind group layouts, so a thread that bound its
        // buffers for one pipeline and dispatched another would fail validation.
        Ok(Arc::clone(lock(&self.pipelines).entry(entry).or_insert_with(|| Arc::new(pipeline))))
    }

    fn compile(&self, file: &'static str, source: &'static str, entry: &str) -> Result<wgpu::ShaderModule> {
        let descriptor =
            wgpu::ShaderModuleDescriptor { label: Some(file), source: wgpu::ShaderSource::Wgsl(source.into()) };
        let module = self.scoped(&format!("compiling {file}"), || {
            if self.shader_checks == ShaderChecks::ALL {
                self.device.create_shader_module(descriptor)
            } else {
                // SAFETY: wgpu requires the checks left out to be unneeded. Loop bounding guards against loops that
                // never end, and every loop in `shaders/` ends: each is a counted loop whose bound is a constant or
                // comes from the uniform parameters, with a counter that grows by a non-zero step (a constant, the
                // workgroup size or the grid's thread count) or halves down to zero, and the host's limits keep
                // every bound far below 2^32, so no counter wraps; mandelbrot's `loop` breaks once its counter
                // reaches `max_iter`. Index clamps and division guards are only left out when the user asks for it
                // (GPUWORTHY_WGPU_CHECKS or GPUWORTHY_WGPU_UNCHECKED=1): every shader tests each index it uses
                // against the lengths the host passes, divides only by non-zero constants and sizes, and the
                // conformance tests run them at odd sizes, empty ones and sizes beyond a binding.
                unsafe { self.device.create_shader_module_trusted(descriptor, self.shader_checks.runtime_checks()) }
            }
        });
        module.map_err(|e| Error::Compile {
            backend: BackendKind::Wgpu,
            kernel: format!("{entry} in {file}"),
            options: format!("{:?}", self.features),
            log: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::WgpuBackend;
    use std::sync::Arc;

    /// Threads that ask for a pipeline not built yet all get the same one: a bind group made for it by one thread is
    /// valid for the dispatch of another.
    #[test]
    fn threads_asking_for_a_new_pipeline_at_once_get_the_same_one() {
        let Some(backend) = gpuworthy_core::BackendKind::Wgpu.opened_or_skipped(WgpuBackend::new()) else {
            return;
        };
        for entry in ["square_naive", "saxpy_vec4", "stencil_rows", "matmul_wide"] {
            let pipelines: Vec<_> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..8).map(|_| scope.spawn(|| backend.pipeline(entry).unwrap())).collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(
                pipelines.iter().all(|p| Arc::ptr_eq(p, &pipelines[0])),
                "{entry}: threads got different pipelines"
            );
        }
    }
}
