//! The CUDA C sources (one file per workload in `cuda/kernels/`, embedded at compile time), compiled by NVRTC once
//! per process for the device's own architecture and cached as loaded modules.
//!
//! NVRTC compiles for the device's real architecture (`sm_90` on an H100) where it knows it, and the driver loads the
//! binary (CUBIN) as it is; for an architecture newer than NVRTC it makes PTX, which the driver compiles when it loads
//! it. Loading PTX costs that compilation again in every process that misses the driver's own cache (measured on an
//! H100: docs/results/nvidia-h100/README.md#why-the-code-is-shaped-so), so the disk cache keeps binaries.
//!
//! Compiling a file costs tens to hundreds of milliseconds: it is the "first call" cost of a CUDA kernel, which
//! [`gpuworthy_core::Implements::prepare`] pays and the harness reports on its own, never inside a timed loop.

use std::collections::HashMap;
use std::ffi::{CString, c_char};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::{Ptx, result as nvrtc, sys as nvrtc_sys};
use gpuworthy_core::{BackendKind, Error, KernelSource, Result, Variant};

use crate::disk_cache::{CachedModule, DiskCache, ModuleImage, module_key};
use crate::launch::define_options;
use crate::{CudaBackend, driver_error, lock};

pub use crate::workloads::KERNEL_FILES;

/// Where the kernels' sources live, from the project's root.
pub const SOURCE_FOLDER: &str = "cuda/kernels";

/// The NVRTC options for a device of compute capability `major.minor`: its own real architecture where NVRTC knows it
/// (`sm_XY`: NVRTC makes a binary the driver loads as it is), else its virtual one (`compute_XY`: PTX, which the
/// driver compiles on load), line information for profilers, and nothing that changes the arithmetic.
pub fn compile_options(major: i32, minor: i32) -> Vec<String> {
    let kind = if nvrtc_knows_architecture(major * 10 + minor) { "sm" } else { "compute" };
    vec![format!("--gpu-architecture={kind}_{major}{minor}"), "--std=c++17".into(), "-lineinfo".into()]
}

/// Which code a file is compiled into: for the device's architecture family (`sm_90`, what every file but a few
/// needs), or for its exact architecture (`sm_90a`: instructions such as Hopper's `wgmma`, which the family target
/// does not have; the code loads on that architecture only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// `sm_XY` (or `compute_XY`).
    Family,
    /// `sm_XYa` (or `compute_XYa`).
    ArchitectureSpecific,
}

/// [`compile_options`] for `target`.
fn target_options(major: i32, minor: i32, target: Target) -> Vec<String> {
    let mut options = compile_options(major, minor);
    if target == Target::ArchitectureSpecific {
        options[0].push('a');
    }
    options
}

/// The prefix of the option that asks NVRTC for a binary of a real architecture.
const REAL_ARCHITECTURE: &str = "--gpu-architecture=sm_";

/// Whether NVRTC lists `architecture` (90 for compute capability 9.0) among those it compiles binaries for: NVRTC 11.2
/// and later say; an older one, or none, is taken to know none.
fn nvrtc_knows_architecture(architecture: i32) -> bool {
    static KNOWN: OnceLock<Vec<i32>> = OnceLock::new();
    KNOWN
        .get_or_init(|| {
            // SAFETY: the probe only tries to open the shared library by name; it calls no NVRTC function.
            if !unsafe { nvrtc_sys::is_culib_present() } || crate::nvrtc_version() < (11, 2) {
                return Vec::new();
            }
            let mut count = 0;
            // SAFETY: writes one int through a valid pointer; NVRTC 11.2 and later define the function.
            if unsafe { nvrtc_sys::nvrtcGetNumSupportedArchs(&mut count) }.result().is_err() || count <= 0 {
                return Vec::new();
            }
            let mut known = vec![0; count as usize];
            // SAFETY: `known` holds `count` ints, as many as NVRTC writes.
            match unsafe { nvrtc_sys::nvrtcGetSupportedArchs(known.as_mut_ptr()) }.result() {
                Ok(()) => known,
                Err(_) => Vec::new(),
            }
        })
        .contains(&architecture)
}

/// An NVRTC program, destroyed when dropped.
struct Program(nvrtc_sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was made by `nvrtc::create_program` and is destroyed once, here.
        let _ = unsafe { nvrtc::destroy_program(self.0) };
    }
}

/// NVRTC's characters up to the first NUL, as text.
fn text_of(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `source` compiled by NVRTC with `options` (named `name` in its messages): a CUBIN where the options name a real
/// architecture, else PTX, and the kernels it defines (read from the PTX, which NVRTC gives in both cases); `Err`
/// with NVRTC's log, or what else went wrong. A NUL in the source, the name or an option is an error here, not a
/// panic in the bindings.
fn nvrtc_compile(source: &str, name: &str, options: &[String]) -> std::result::Result<CachedModule, String> {
    let nul = |what: &str| format!("{what} holds a NUL character");
    let source = CString::new(source).map_err(|_| nul("the source"))?;
    let name = CString::new(name).map_err(|_| nul("the program's name"))?;
    if let Some(option) = options.iter().find(|o| o.contains('\0')) {
        return Err(nul(&format!("the option {option:?}")));
    }
    let program =
        Program(nvrtc::create_program(&source, Some(&name)).map_err(|e| format!("creating the program: {e}"))?);
    // No option holds a NUL (checked above), so the bindings' conversion of them cannot fail.
    // SAFETY: `program` was made by `create_program` and is destroyed only when it drops, after every call here.
    if let Err(e) = unsafe { nvrtc::compile_program(program.0, options) } {
        // SAFETY: as above.
        let log = unsafe { nvrtc::get_program_log(program.0) }.map(|log| text_of(&log)).unwrap_or_default();
        return Err(if log.trim().is_empty() { e.to_string() } else { log });
    }
    // SAFETY: as above.
    let ptx = unsafe { nvrtc::get_ptx(program.0) }.map_err(|e| format!("reading the PTX: {e}"))?;
    let ptx = text_of(&ptx);
    let entries = entry_points(&ptx);
    if !options.iter().any(|o| o.starts_with(REAL_ARCHITECTURE)) {
        return Ok(CachedModule { image: ModuleImage::Ptx(ptx), entries });
    }
    let mut size = 0usize;
    // SAFETY: as above; writes one size through a valid pointer.
    unsafe { nvrtc_sys::nvrtcGetCUBINSize(program.0, &mut size) }
        .result()
        .map_err(|e| format!("sizing the CUBIN: {e}"))?;
    let mut cubin = vec![0u8; size];
    // SAFETY: as above; `cubin` holds the `size` bytes NVRTC writes.
    unsafe { nvrtc_sys::nvrtcGetCUBIN(program.0, cubin.as_mut_ptr().cast()) }
        .result()
        .map_err(|e| format!("reading the CUBIN: {e}"))?;
    Ok(CachedModule { image: ModuleImage::Cubin(cubin), entries })
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
        let target = if crate::workloads::ARCHITECTURE_SPECIFIC_FILES.contains(&file.file) {
            Target::ArchitectureSpecific
        } else {
            Target::Family
        };
        self.module_compiler()
            .compile_for(target, file.source, &path, &define_options(), kernel)
            .map(|loaded| loaded.module)
    }

    /// What compiling and loading a module for this backend needs, apart from the backend, for a thread of its own.
    pub(crate) fn module_compiler(&self) -> ModuleCompiler {
        ModuleCompiler {
            context: Arc::clone(&self.context),
            modules: Arc::clone(&self.modules),
            disk_cache: self.disk_cache.clone(),
            toolchain: self.toolchain.clone(),
            capability: self.capability,
        }
    }
}

/// Everything compiling and loading a module needs: the device's context, the backend's loaded modules, its disk
/// cache and what keys an entry. A clone shares the loaded modules, so that a kernel compiled on another thread (a
/// faster shape of an expression's kernel, [`crate::expr`]) is found by the backend's next lookup.
#[derive(Clone)]
pub(crate) struct ModuleCompiler {
    context: Arc<CudaContext>,
    modules: Arc<Mutex<HashMap<String, LoadedModule>>>,
    disk_cache: DiskCache,
    toolchain: String,
    capability: (i32, i32),
}

impl ModuleCompiler {
    /// The options `source` compiles with for `target` ([`compile_options`] and `extra`), and its key in the caches.
    fn options_and_key(&self, source: &str, extra: &[String], target: Target) -> (Vec<String>, String) {
        let mut options = target_options(self.capability.0, self.capability.1, target);
        options.extend(extra.iter().cloned());
        let key = module_key(source, &options, &self.toolchain);
        (options, key)
    }

    /// The module of `source` and `extra` where it is loaded already or a previous process left it on disk; `None`
    /// where it would have to be compiled.
    pub(crate) fn find(&self, source: &str, extra: &[String]) -> Option<LoadedModule> {
        let (_, key) = self.options_and_key(source, extra, Target::Family);
        self.find_by_key(&key)
    }

    fn find_by_key(&self, key: &str) -> Option<LoadedModule> {
        if let Some(loaded) = lock(&self.modules).get(key) {
            return Some(loaded.clone());
        }
        // A kernel a previous process compiled: loaded unless the driver refuses it, then forgotten.
        let cached = self.disk_cache.load(key)?;
        match self.load_image(&cached.image) {
            Ok(module) => Some(self.keep(key, LoadedModule { module, entries: cached.entries })),
            Err(_) => {
                self.disk_cache.forget(key);
                None
            }
        }
    }

    /// `loaded` kept under `key`, or the module another thread kept there first: every thread gets the same one.
    fn keep(&self, key: &str, loaded: LoadedModule) -> LoadedModule {
        lock(&self.modules).entry(key.to_owned()).or_insert(loaded).clone()
    }

    /// `source` compiled by NVRTC with [`compile_options`] and `extra`, and loaded; `program` names it in NVRTC's
    /// messages and `kernel` in the error. Cached for the life of the backend, and on disk between processes
    /// ([`DiskCache`]), by a hash of the source, every option (the architecture among them) and the toolchain, not by
    /// a name: two sources never share an entry, and the same source compiled twice is compiled once.
    pub(crate) fn compile(&self, source: &str, program: &str, extra: &[String], kernel: &str) -> Result<LoadedModule> {
        self.compile_for(Target::Family, source, program, extra, kernel)
    }

    /// [`ModuleCompiler::compile`] into `target`'s code.
    pub(crate) fn compile_for(
        &self,
        target: Target,
        source: &str,
        program: &str,
        extra: &[String],
        kernel: &str,
    ) -> Result<LoadedModule> {
        let (options, key) = self.options_and_key(source, extra, target);
        if let Some(loaded) = self.find_by_key(&key) {
            return Ok(loaded);
        }
        // The lock is not held while NVRTC compiles (a tenth of a second or more), so that threads compiling
        // different sources do it at once; two compiling the same source both compile it, and the first module kept
        // is the one every thread gets.
        let compiled = nvrtc_compile(source, program, &options).map_err(|log| Error::Compile {
            backend: BackendKind::Cuda,
            kernel: format!("{kernel} in {program}"),
            options: options.join(" "),
            log,
        })?;
        let module =
            self.load_image(&compiled.image).map_err(driver_error(format!("loading the module of {program}")))?;
        self.disk_cache.store(&key, &compiled);
        Ok(self.keep(&key, LoadedModule { module, entries: compiled.entries }))
    }

    /// Loads a compiled image on the device.
    fn load_image(&self, image: &ModuleImage) -> std::result::Result<Arc<CudaModule>, cudarc::driver::DriverError> {
        self.context.load_module(match image {
            ModuleImage::Cubin(bytes) => Ptx::from_binary(bytes.clone()),
            ModuleImage::Ptx(text) => Ptx::from_src(text.clone()),
        })
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

    /// A NUL in the source, the name or an option would make the bindings panic; it is an error before NVRTC is
    /// asked anything (so this runs without NVRTC too).
    #[test]
    fn a_nul_anywhere_is_an_error_not_a_panic() {
        let options = |o: &str| vec!["--std=c++17".to_owned(), o.to_owned()];
        let error = |source: &str, name: &str, options: &[String]| nvrtc_compile(source, name, options).unwrap_err();
        assert!(error("kernel\0", "k.cu", &options("-lineinfo")).contains("the source holds a NUL"));
        assert!(error("kernel", "k\0.cu", &options("-lineinfo")).contains("the program's name holds a NUL"));
        assert!(error("kernel", "k.cu", &options("-D\0X")).contains("the option \"-D\\0X\" holds a NUL"));
    }

    #[test]
    fn the_entry_points_of_a_ptx_listing_are_its_kernels() {
        let ptx = ".visible .entry add_one(\n\t.param .u64 x\n)\n.func helper()\n.visible .entry scale (\n";
        assert_eq!(entry_points(ptx), ["add_one", "scale"]);
    }
}
