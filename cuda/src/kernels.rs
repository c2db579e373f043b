//! The CUDA C sources (one file per workload in `cuda/kernels/`, embedded at compile time), compiled by NVRTC once
//! per process for the device's own architecture and cached as loaded modules.
//!
//! Compiling a file costs tens to hundreds of milliseconds: it is the "first call" cost of a CUDA kernel, which
//! [`gpuworthy_core::Implements::prepare`] pays and the harness reports on its own, never inside a timed loop.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};
use gpuworthy_core::{BackendKind, Error, KernelSource, Result, Variant};

use crate::disk_cache::module_key;
use crate::launch::define_options;
use crate::{CudaBackend, driver_error, lock};

macro_rules! kernel_file {
    ($file:literal, [$($kernel:literal),* $(,)?]) => {
        KernelSource { file: $file, source: include_str!(concat!("../kernels/", $file)), kernels: &[$($kernel),*] }
    };
}

/// Every CUDA C file of the backend (under `cuda/kernels/`) and the `extern "C" __global__` kernels it defines.
pub const KERNEL_FILES: &[KernelSource] = &[
    kernel_file!("square.cu", ["square_naive", "square_vec4"]),
    kernel_file!("saxpy.cu", ["saxpy_naive", "saxpy_vec4"]),
    kernel_file!("sum.cu", ["sum_atomic", "sum_tree", "sum_warp"]),
    kernel_file!(
        "softmax.cu",
        [
            "softmax_unfused_max",
            "softmax_unfused_exp",
            "softmax_unfused_normalize",
            "softmax_fused",
            "softmax_split_stats",
            "softmax_split_normalize"
        ]
    ),
    kernel_file!(
        "matmul.cu",
        [
            "matmul_naive",
            "matmul_tiled",
            "matmul_register",
            "matmul_warptile",
            "matmul_prefetch",
            "matmul_prefetch_split",
            "matmul_sum_slices"
        ]
    ),
    kernel_file!("mandelbrot.cu", ["mandelbrot_naive"]),
    kernel_file!("histogram.cu", ["histogram_global", "histogram_private"]),
    kernel_file!("stencil.cu", ["stencil_naive", "stencil_tiled"]),
];

/// Where the kernels' sources live, from the project's root.
pub const SOURCE_FOLDER: &str = "cuda/kernels";

/// The NVRTC options for a device of compute capability `major.minor`: its own architecture (so the driver need not
/// JIT-compile PTX for it), line information for profilers, and nothing that changes the arithmetic.
pub fn compile_options(major: i32, minor: i32) -> Vec<String> {
    vec![format!("--gpu-architecture=compute_{major}{minor}"), "--std=c++17".into(), "-lineinfo".into()]
}

impl CudaBackend {
    /// Compiles and loads every kernel of `variant`.
    pub(crate) fn prepare_kernels<L>(&self, variant: &Variant<L>) -> Result<()> {
        variant.kernels.iter().try_for_each(|kernel| self.function(kernel).map(drop))
    }

    /// The kernel `name`, compiling and loading its file on first use.
    /// Cached per name: launches look their kernel up every time, and the lookup must cost nothing next to them.
    pub(crate) fn function(&self, name: &'static str) -> Result<CudaFunction> {
        if let Some(f) = lock(&self.functions).get(name) {
            return Ok(f.clone());
        }
        let file = KernelSource::defining(KERNEL_FILES, name).ok_or_else(|| Error::Device {
            backend: BackendKind::Cuda,
            message: format!("no file in cuda/kernels defines the kernel `{name}`"),
        })?;
        let module = self.module(file, name)?;
        let function =
            module.load_function(name).map_err(driver_error(format!("loading kernel `{name}` from {}", file.file)))?;
        lock(&self.functions).insert(name, function.clone());
        Ok(function)
    }

    fn module(&self, file: &KernelSource, kernel: &str) -> Result<Arc<CudaModule>> {
        // The program is named by its path from the project's root, so that NVRTC's errors and the line table that
        // `-lineinfo` writes (which `ncu --import-source yes` and compute-sanitizer read) name the file a reader can
        // open, when the program runs from the project's root.
        let path = format!("{SOURCE_FOLDER}/{}", file.file);
        self.compile_module(file.source, &path, &define_options(), kernel).map(|loaded| loaded.module)
    }

    /// `source` compiled by NVRTC for this device with its [`compile_options`] and `extra`, and loaded; `program` names
    /// it in NVRTC's messages and `kernel` in the error. Cached for the life of the backend, and on disk between
    /// processes ([`DiskCache`](crate::DiskCache)), by a hash of the source, every option (the architecture among them) and the
    /// toolchain, not by a name: two sources never share an entry, and the same source compiled twice is compiled
    /// once.
    pub(crate) fn compile_module(
        &self,
        source: &str,
        program: &str,
        extra: &[String],
        kernel: &str,
    ) -> Result<LoadedModule> {
        let mut options = compile_options(self.capability.0, self.capability.1);
        options.extend(extra.iter().cloned());
        let key = module_key(source, &options, &self.toolchain);
        if let Some(loaded) = lock(&self.modules).get(&key) {
            return Ok(loaded.clone());
        }
        // The lock is not held while NVRTC compiles (a tenth of a second or more), so that threads compiling
        // different sources do it at once; two compiling the same source both compile it, and the first module kept
        // is the one every thread gets.
        let keep = |loaded: LoadedModule| lock(&self.modules).entry(key.clone()).or_insert(loaded).clone();
        // A kernel a previous process compiled: loaded unless the driver refuses it, then compiled afresh.
        if let Some(ptx) = self.disk_cache.load(&key) {
            let entries = entry_points(&ptx);
            match self.context.load_module(Ptx::from_src(ptx)) {
                Ok(module) => return Ok(keep(LoadedModule { module, entries })),
                Err(_) => self.disk_cache.forget(&key),
            }
        }
        let compile = CompileOptions { options: options.clone(), name: Some(program.to_owned()), ..Default::default() };
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(source, compile).map_err(|e| {
            let log = match &e {
                CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
                other => other.to_string(),
            };
            Error::Compile {
                backend: BackendKind::Cuda,
                kernel: format!("{kernel} in {program}"),
                options: options.join(" "),
                log,
            }
        })?;
        let text = ptx.to_src();
        let entries = entry_points(&text);
        let module = self.context.load_module(ptx).map_err(driver_error(format!("loading the module of {program}")))?;
        self.disk_cache.store(&key, &text);
        Ok(keep(LoadedModule { module, entries }))
    }
}

/// A module loaded on the device, and the kernels it defines.
#[derive(Debug, Clone)]
pub(crate) struct LoadedModule {
    /// The module.
    pub(crate) module: Arc<CudaModule>,
    /// The names of its kernels (the PTX's `.entry` points), so that asking for one it lacks is answered without a
    /// failing driver call.
    pub(crate) entries: Vec<String>,
}

/// The kernels a PTX listing defines: the names after `.entry`.
fn entry_points(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|line| line.split_once(".entry ").map(|(_, rest)| rest))
        .map(|rest| rest.split(|c: char| c == '(' || c.is_whitespace()).next().unwrap_or_default().to_owned())
        .filter(|name| !name.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_points_of_a_ptx_listing_are_its_kernels() {
        let ptx = ".visible .entry add_one(\n\t.param .u64 x\n)\n.func helper()\n.visible .entry scale (\n";
        assert_eq!(entry_points(ptx), ["add_one", "scale"]);
    }
}
