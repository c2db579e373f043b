//! # gpuworthy-cpu
//!
//! The CPU backend: every workload on rayon threads with explicit SIMD, the analogue of Numba's
//! `njit(parallel=True)`, and the baseline every GPU backend has to beat.
//!
//! Each workload offers a ladder of variants (see [`gpuworthy_core::Implements::variants`]): a `scalar` (or
//! `pairwise`, `naive`) single-threaded version written the obvious way, and optimised ones (`simd`, `private`,
//! `blocked`, `library`) that use every core and the widest vectors the CPU has, chosen at run time (see [`simd`]).
//!
//! "Upload" and "download" copy the input into and the output out of buffers the backend owns, so that the phases
//! mean the same on every backend; on the CPU they are plain memory copies, and comparisons with a GPU should use
//! the CPU's kernel time alone, since the data is already where the CPU computes.
//!
//! ```
//! use gpuworthy_core::{Implements, Precision, Workload, workloads::{Len, Square}};
//! use gpuworthy_cpu::CpuBackend;
//!
//! let cpu = CpuBackend::new()?;
//! let x = Square::generate(&Len(10_000), 1)?;
//! for variant in <CpuBackend as Implements<Square>>::variants(&cpu) {
//!     let y = Implements::<Square>::run(&cpu, variant, &x)?;
//!     Square::check(&x, &Square::reference(&x)?, &y, Precision::Fp32).unwrap();
//! }
//! # Ok::<(), gpuworthy_core::Error>(())
//! ```

#![deny(missing_docs)]

use std::time::Duration;

use gpuworthy_core::{Backend, BackendKind, DeviceInfo, DeviceType, KernelClock, Result, time_synchronous};

pub mod expr;
mod kernels;
mod raw;
pub mod simd;
pub mod vector_math;

pub use kernels::HostResident;
/// The rayon crate whose thread pool this backend's kernels share ([`CpuBackend::install`]).
pub use rayon;

/// The CPU backend. Cheap to create; every instance shares rayon's global thread pool, and each runs its kernels at
/// its own SIMD level.
#[derive(Debug, Clone)]
pub struct CpuBackend {
    device: DeviceInfo,
    simd: simd::Supported,
}

/// How to build a [`CpuBackend`]: from the environment ([`CpuOptions::from_env`]) or in code, which bypasses it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuOptions {
    /// The SIMD level the kernels use (`Level::checked` makes one); `None` for the best this CPU supports.
    pub simd: Option<simd::Supported>,
}

impl CpuOptions {
    /// The options `GPUWORTHY_CPU_SIMD` asks for: the only variable the CPU backend reads (see
    /// [`simd::requested_level`]).
    ///
    /// Returns [`gpuworthy_core::Error::InvalidInput`] naming the variable when it names a level this CPU lacks.
    pub fn from_env() -> Result<Self> {
        Ok(CpuOptions { simd: simd::requested_level()? })
    }
}

impl CpuBackend {
    /// The CPU backend with the options of the environment ([`CpuOptions::from_env`]): the best SIMD level this CPU
    /// supports, or the one `GPUWORTHY_CPU_SIMD` names.
    ///
    /// Returns [`gpuworthy_core::Error::InvalidInput`] naming the variable when it names a level this CPU lacks.
    pub fn new() -> Result<Self> {
        Ok(Self::with_options(CpuOptions::from_env()?))
    }

    /// The CPU backend with these options, whatever the environment says.
    pub fn with_options(options: CpuOptions) -> Self {
        let simd = options.simd.unwrap_or_else(simd::Supported::best);
        let level = simd.level();
        let device = DeviceInfo {
            name: cpu_model(),
            device_type: DeviceType::Cpu,
            driver: format!("{}, {} threads", level.describe(), rayon::current_num_threads()),
            limits: vec![
                ("threads".into(), rayon::current_num_threads().to_string()),
                ("simd".into(), level.name().into()),
            ],
        };
        CpuBackend { device, simd }
    }

    /// The SIMD level this backend's kernels use: pass it to a kernel written with [`simd_kernel!`] to run it at the
    /// level the backend was opened with (`GPUWORTHY_CPU_SIMD`, or [`CpuOptions`] in code).
    pub fn simd(&self) -> simd::Supported {
        self.simd
    }

    /// The threads this backend's kernels run on.
    pub fn threads(&self) -> usize {
        rayon::current_num_threads()
    }

    /// Runs `op` in the thread pool this backend's kernels use, so that rayon's parallel iterators inside it spread
    /// over the same threads as the built-in kernels (see [`simd_kernel!`] for an example).
    pub fn install<R: Send>(&self, op: impl FnOnce() -> R + Send) -> R {
        // Every backend shares rayon's global pool, which parallel iterators use from any thread outside a pool; a
        // thread of another pool would use its own, so `op` moves to the global pool's threads then.
        match rayon::current_thread_index() {
            None => op(),
            Some(_) => {
                std::thread::scope(|scope| scope.spawn(op).join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            }
        }
    }
}

impl Backend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn device(&self) -> &DeviceInfo {
        &self.device
    }

    /// Work on the CPU is synchronous: a launch returns when it is done.
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    fn kernel_clock(&self) -> KernelClock {
        KernelClock::HostWallClock
    }

    fn time_on_device(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        time_synchronous(work)
    }

    fn copy_bandwidth(&self, bytes: usize) -> Result<f64> {
        use rayon::prelude::*;
        let len = (bytes / 4).max(1);
        let source = vec![1.0f32; len];
        let mut target = vec![0.0f32; len];
        let mut samples: Vec<f64> = (0..7)
            .map(|_| {
                let start = std::time::Instant::now();
                target.par_chunks_mut(1 << 16).zip(source.par_chunks(1 << 16)).for_each(|(t, s)| t.copy_from_slice(s));
                start.elapsed().as_secs_f64()
            })
            .skip(2)
            .collect();
        samples.sort_by(f64::total_cmp);
        Ok(8.0 * len as f64 / samples[samples.len() / 2] / 1e9)
    }
}

/// The CPU's model name, from `/proc/cpuinfo` where there is one.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name") || l.starts_with("Model"))
                .and_then(|l| l.split(':').nth(1))
                .map(|name| name.trim().to_owned())
        })
        .unwrap_or_else(|| format!("{} CPU", std::env::consts::ARCH))
}

/// The size of this machine's last-level CPU cache in bytes, where the operating system says it: the largest data
/// or unified cache that Linux's `/sys/devices/system/cpu/cpu0/cache/index*` describes; `None` elsewhere, or where
/// the files cannot be read. The cost model uses it to tell a kernel whose data fits in the cache from one that
/// streams from memory (`gpuworthy::model::DeviceModel::cache_bytes`).
///
/// ```
/// if let Some(bytes) = gpuworthy_cpu::last_level_cache_bytes() {
///     assert!(bytes >= 1 << 10);
/// }
/// ```
pub fn last_level_cache_bytes() -> Option<u64> {
    let caches = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    caches
        .filter_map(|entry| {
            let dir = entry.ok()?.path();
            let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok().map(|s| s.trim().to_owned());
            if read("type")? == "Instruction" {
                return None;
            }
            parse_cache_size(&read("size")?)
        })
        .max()
}

/// A cache size as sysfs writes it (`32768K`, `300M`, `1G`, or bytes), in bytes; `None` for anything else.
fn parse_cache_size(text: &str) -> Option<u64> {
    let (digits, unit) = match text.char_indices().last()? {
        (at, 'K') => (&text[..at], 1u64 << 10),
        (at, 'M') => (&text[..at], 1 << 20),
        (at, 'G') => (&text[..at], 1 << 30),
        _ => (text, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(unit).filter(|&bytes| bytes > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuworthy_core::{Implements, Workload};

    /// Every variant of every workload at its conformance sizes and special inputs, on `backend`.
    macro_rules! every_workload_on {
        ([$backend:expr] $($name:ident: $workload:ty),* $(,)?) => {{
            let backend = $backend;
            let level = backend.simd().level().name();
            $(
                let mut inputs: Vec<_> = <$workload as Workload>::conformance_params()
                    .iter()
                    .map(|p| <$workload as Workload>::generate(p, 7).unwrap())
                    .collect();
                inputs.extend(<$workload as Workload>::special_inputs().into_iter().map(|(_, input)| input));
                for input in inputs {
                    let expected = <$workload as Workload>::reference(&input).unwrap();
                    for variant in Implements::<$workload>::variants(&backend) {
                        let got = Implements::<$workload>::run(&backend, variant, &input).unwrap();
                        let precision = Implements::<$workload>::precision(&backend, variant);
                        if let Err(e) = <$workload as Workload>::check(&input, &expected, &got, precision) {
                            panic!("{} {variant} at SIMD level {level}: {e}", stringify!($name));
                        }
                    }
                }
            )*
        }};
    }

    #[test]
    fn options_in_code_choose_the_simd_level_and_every_supported_level_is_right() {
        for level in simd::Level::supported() {
            let supported = level.checked().expect("a supported level checks");
            let backend = CpuBackend::with_options(CpuOptions { simd: Some(supported) });
            assert_eq!(backend.simd().level(), level);
            assert!(backend.device().driver.starts_with(level.describe()), "{}", backend.device().driver);
            gpuworthy_core::for_each_workload!(every_workload_on; backend);
        }
    }

    #[test]
    fn cache_sizes_are_read_as_sysfs_writes_them_and_nothing_else() {
        assert_eq!(parse_cache_size("32768K"), Some(32 << 20));
        assert_eq!(parse_cache_size("300M"), Some(300 << 20));
        assert_eq!(parse_cache_size("1G"), Some(1 << 30));
        assert_eq!(parse_cache_size("4096"), Some(4096));
        for bad in ["", "K", "12Q", "-1K", "0K", "99999999999999999999G"] {
            assert_eq!(parse_cache_size(bad), None, "{bad}");
        }
    }
}
