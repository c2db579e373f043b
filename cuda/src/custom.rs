//! The extension points for kernels written outside gpuworthy: CUDA C compiled through the backend's NVRTC cache,
//! device buffers, and launches on the backend's stream inside its queue lock.
//!
//! A program could compile and launch through cudarc alone, but then another thread's timing window on the same
//! backend would time its launches too. Going through [`CudaBackend::with_stream`] keeps the guarantee every built-in
//! workload has: work enqueued while a window is open belongs to that window's thread. The built-in kernels are
//! compiled through the same cache ([`CudaBackend::custom_kernel`] and the built-in files share one map, keyed by a
//! hash of source and options, the architecture among them), so a user's kernel is compiled once per process and its
//! first-call cost is measured like theirs.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream};
use gpuworthy_core::{BackendKind, Error, Result};

use crate::CudaBackend;
use crate::kernels::{LoadedModule, ModuleCompiler};
use crate::launch::define_options;

/// A kernel compiled from CUDA C that a caller supplied, loaded on one backend's device.
#[derive(Debug, Clone)]
pub struct CustomKernel {
    function: CudaFunction,
    entry: String,
}

impl CustomKernel {
    /// The loaded kernel, for cudarc's `launch_builder`.
    pub fn function(&self) -> &CudaFunction {
        &self.function
    }

    /// The kernel's name (its `extern "C" __global__` entry point).
    pub fn entry(&self) -> &str {
        &self.entry
    }
}

/// Whether `name` can be a C identifier, and so an entry point.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl CudaBackend {
    /// Compiles `source` with NVRTC for this device (its architecture, the options every built-in kernel gets, and
    /// `options`, such as `-DTILE=16`) and loads the kernel `entry`, which the source must declare
    /// `extern "C" __global__`. Compiled once per process: the same source and options come from the cache. A compile
    /// error is [`Error::Compile`] with NVRTC's log and the kernel's name.
    ///
    /// ```no_run
    /// use cudarc::driver::PushKernelArg;
    /// use gpuworthy_cuda::{CudaBackend, launch_config};
    ///
    /// const SOURCE: &str = r#"
    /// extern "C" __global__ void add_one(const float* x, float* y, int n) {
    ///     int i = blockIdx.x * blockDim.x + threadIdx.x;
    ///     if (i < n) y[i] = x[i] + 1.0f;
    /// }"#;
    ///
    /// let cuda = CudaBackend::new(0)?;
    /// let kernel = cuda.custom_kernel(SOURCE, "add_one", &[])?;
    /// let x = cuda.buffer_from(&[1.0, 2.0, 3.0])?;
    /// let mut y = cuda.buffer_zeroed(3)?;
    /// let n = 3i32;
    /// let config = launch_config((1, 1), (256, 1), 0)?;
    /// cuda.with_stream(|stream| {
    ///     let mut launch = stream.launch_builder(kernel.function());
    ///     launch.arg(&x).arg(&mut y).arg(&n);
    ///     // SAFETY: add_one takes (const float*, float*, int) and reads and writes n elements of buffers that hold n.
    ///     unsafe { launch.launch(config) }.map(drop).map_err(|e| gpuworthy_core::Error::invalid(e.to_string()))
    /// })?;
    /// assert_eq!(cuda.read_buffer(&y, 3)?, [2.0, 3.0, 4.0]);
    /// # Ok::<(), gpuworthy_core::Error>(())
    /// ```
    pub fn custom_kernel(&self, source: &str, entry: &str, options: &[&str]) -> Result<CustomKernel> {
        custom_kernel_through(&self.module_compiler(), source, entry, options)
    }

    /// This backend with compiled kernels kept in `cache` between processes instead of where
    /// `GPUWORTHY_KERNEL_CACHE` says ([`DiskCache::from_env`](crate::DiskCache::from_env)); [`DiskCache::off`](crate::DiskCache::off)
    /// compiles every kernel in every process.
    pub fn with_kernel_cache(mut self, cache: crate::DiskCache) -> Self {
        self.disk_cache = cache;
        self
    }

    /// Runs `enqueue` with the stream every phase of this backend runs on, holding its queue lock: launches and copies
    /// made inside are ordered with the backend's own work, and a timing window another thread holds on this backend
    /// waits for them instead of timing them. Enqueueing does not wait for the work: [`gpuworthy_core::Backend::synchronize`]
    /// does.
    pub fn with_stream<T>(&self, enqueue: impl FnOnce(&Arc<CudaStream>) -> Result<T>) -> Result<T> {
        let _queue = self.hold_queue()?;
        enqueue(&self.stream)
    }

    /// A device buffer holding a copy of `data` (at least one element: the driver refuses empty allocations), through
    /// the backend's host memory mode.
    pub fn buffer_from(&self, data: &[f32]) -> Result<CudaSlice<f32>> {
        self.to_device(data)
    }

    /// A device buffer of `len` zeros (at least one element).
    pub fn buffer_zeroed(&self, len: usize) -> Result<CudaSlice<f32>> {
        self.zeros(len)
    }

    /// The first `len` elements of `buffer`, copied to the host once the work enqueued before has finished.
    pub fn read_buffer(&self, buffer: &CudaSlice<f32>, len: usize) -> Result<Vec<f32>> {
        if len > buffer.len() {
            return Err(Error::invalid(format!("cannot read {len} elements of a buffer of {}", buffer.len())));
        }
        self.to_host(buffer, len)
    }
}

/// The error of a custom kernel `entry` compiled with `options`: NVRTC's `log`, or what else went wrong.
fn compile_error(entry: &str, options: &[&str], log: String) -> Error {
    Error::Compile { backend: BackendKind::Cuda, kernel: entry.to_owned(), options: options.join(" "), log }
}

/// The checks a custom kernel's names pass before NVRTC sees them, and every option it compiles with.
fn checked_options(source: &str, entry: &str, options: &[&str]) -> Result<Vec<String>> {
    if !is_identifier(entry) {
        return Err(compile_error(
            entry,
            options,
            format!("`{entry}` is not a C identifier, so it cannot name a kernel"),
        ));
    }
    if source.contains('\0') {
        return Err(compile_error(entry, options, "the source holds a NUL character".into()));
    }
    let mut extra = define_options();
    extra.extend(options.iter().map(|o| (*o).to_owned()));
    Ok(extra)
}

/// The kernel `entry` of a loaded module, or an error naming the kernels it does define.
fn kernel_of(loaded: LoadedModule, entry: &str, options: &[&str]) -> Result<CustomKernel> {
    if !loaded.entries.iter().any(|e| e == entry) {
        return Err(compile_error(
            entry,
            options,
            format!(
                "the source compiled, but defines no kernel `extern \"C\" __global__ {entry}`; it defines: {}",
                if loaded.entries.is_empty() { "none".to_owned() } else { loaded.entries.join(", ") }
            ),
        ));
    }
    let function = loaded
        .module
        .load_function(entry)
        .map_err(|e| compile_error(entry, options, format!("loading the kernel `{entry}`: {e}")))?;
    Ok(CustomKernel { function, entry: entry.to_owned() })
}

/// [`CudaBackend::custom_kernel`] through `compiler`, which a thread of its own can hold.
pub(crate) fn custom_kernel_through(
    compiler: &ModuleCompiler,
    source: &str,
    entry: &str,
    options: &[&str],
) -> Result<CustomKernel> {
    let extra = checked_options(source, entry, options)?;
    let loaded = compiler.compile(source, &format!("{entry}.cu"), &extra, entry)?;
    kernel_of(loaded, entry, options)
}

/// The custom kernel of [`CudaBackend::custom_kernel`] where it needs no compiling (loaded already, or on disk), else
/// `None`.
pub(crate) fn find_custom_kernel(
    compiler: &ModuleCompiler,
    source: &str,
    entry: &str,
    options: &[&str],
) -> Option<CustomKernel> {
    let extra = checked_options(source, entry, options).ok()?;
    kernel_of(compiler.find(source, &extra)?, entry, options).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_c_identifiers_name_kernels() {
        for good in ["square", "_k2", "matmul_tiled"] {
            assert!(is_identifier(good), "{good}");
        }
        for bad in ["", "2x", "a b", "k();", "x-y", "ünï"] {
            assert!(!is_identifier(bad), "{bad}");
        }
    }

    const ADD_ONE: &str = r#"
extern "C" __global__ void add_one(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}"#;

    /// Where CUDA runs: a kernel of one's own computes, is compiled once, and a bad one is refused with NVRTC's log
    /// and the kernel's name; elsewhere, nothing to try.
    #[test]
    fn a_custom_kernel_runs_is_cached_and_a_bad_one_names_itself_with_the_log() {
        use cudarc::driver::PushKernelArg;
        let Some(cuda) = gpuworthy_core::BackendKind::Cuda.opened_or_skipped(CudaBackend::new(0)) else {
            return;
        };
        let kernel = cuda.custom_kernel(ADD_ONE, "add_one", &[]).unwrap();
        let again = cuda.custom_kernel(ADD_ONE, "add_one", &[]).unwrap();
        assert_eq!(kernel.entry(), again.entry());
        assert_eq!(crate::lock(&cuda.modules).len(), 1, "the same source and options compile once");
        let n = 1000usize;
        let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let input = cuda.buffer_from(&x).unwrap();
        let mut output = cuda.buffer_zeroed(n).unwrap();
        let config = crate::launch_config(((n as u64).div_ceil(256), 1), (256, 1), 0).unwrap();
        let count = n as i32;
        cuda.with_stream(|stream| {
            let mut launch = stream.launch_builder(kernel.function());
            launch.arg(&input).arg(&mut output).arg(&count);
            // SAFETY: add_one takes (const float*, float*, int n) and touches n elements of buffers that hold n.
            unsafe { launch.launch(config) }.map(drop).map_err(crate::driver_error("launching add_one"))
        })
        .unwrap();
        let y = cuda.read_buffer(&output, n).unwrap();
        assert!(y.iter().zip(&x).all(|(y, x)| *y == x + 1.0));
        assert!(cuda.read_buffer(&output, n + 1).is_err());

        let broken = "extern \"C\" __global__ void broken(float* y) { y[0] = undefined_name; }";
        let err = cuda.custom_kernel(broken, "broken", &["-DTILE=4"]).unwrap_err();
        assert!(matches!(err, Error::Compile { .. }), "{err}");
        let message = err.to_string();
        assert!(message.contains("broken") && message.contains("undefined_name"), "{message}");
        let err = cuda.custom_kernel(ADD_ONE, "missing", &[]).unwrap_err().to_string();
        assert!(err.contains("missing") && err.contains("it defines: add_one"), "{err}");
        assert!(cuda.custom_kernel(ADD_ONE, "add_one(); //", &[]).is_err());
    }

    /// Where CUDA runs: a kernel one backend compiled is loaded from disk by the next (a new process finds it the
    /// same way), much faster than compiling; a corrupt entry is compiled again and rewritten, never loaded.
    #[test]
    fn a_compiled_kernel_is_found_on_disk_and_a_corrupt_entry_is_rebuilt() {
        use cudarc::driver::PushKernelArg;
        use std::time::Instant;
        if gpuworthy_core::BackendKind::Cuda.opened_or_skipped(CudaBackend::new(0)).is_none() {
            return;
        }
        let dir = std::env::temp_dir().join(format!("gpuworthy-kernel-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // A source of its own, so that no other test's entry answers.
        let source = format!("{ADD_ONE}\n// {}\n", dir.display());
        let open = || CudaBackend::new(0).unwrap().with_kernel_cache(crate::DiskCache::at(&dir));
        let start = Instant::now();
        open().custom_kernel(&source, "add_one", &[]).unwrap();
        let compiled = start.elapsed();
        let entries: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(entries.len(), 1, "{entries:?}");
        let cuda = open();
        let start = Instant::now();
        cuda.custom_kernel(&source, "add_one", &[]).unwrap();
        let loaded = start.elapsed();
        println!("add_one: compiled in {compiled:?}, loaded from the disk cache in {loaded:?}");
        assert!(loaded < compiled, "loading ({loaded:?}) should beat compiling ({compiled:?})");
        std::fs::write(&entries[0], "gpuworthy-module-2 cubin 0000\nadd_one\n\x7fELF").unwrap();
        let cuda = open();
        let kernel = cuda.custom_kernel(&source, "add_one", &[]).unwrap();
        let x = cuda.buffer_from(&[1.0, 2.0]).unwrap();
        let mut y = cuda.buffer_zeroed(2).unwrap();
        let n = 2i32;
        cuda.with_stream(|stream| {
            let mut launch = stream.launch_builder(kernel.function());
            launch.arg(&x).arg(&mut y).arg(&n);
            // SAFETY: add_one takes (const float*, float*, int n) and touches n elements of buffers that hold n.
            unsafe { launch.launch(crate::launch_config((1, 1), (32, 1), 0)?) }
                .map(drop)
                .map_err(crate::driver_error("launching add_one"))
        })
        .unwrap();
        assert_eq!(cuda.read_buffer(&y, 2).unwrap(), [2.0, 3.0]);
        assert!(crate::DiskCache::at(&dir).load(entries[0].file_stem().unwrap().to_str().unwrap()).is_some());
        let _ = std::fs::remove_dir_all(dir);
    }
}
