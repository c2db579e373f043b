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
//!     Square::check(&x, &Square::reference(&x)?, &y, Precision::Full).unwrap();
//! }
//! # Ok::<(), gpuworthy_core::Error>(())
//! ```

#![deny(missing_docs)]

use std::time::Duration;

use gpuworthy_core::{Backend, BackendKind, DeviceInfo, DeviceType, KernelClock, Result, time_synchronous};

mod kernels;
pub mod simd;

pub use kernels::HostResident;

/// The CPU backend. Cheap to create; every instance shares rayon's global thread pool.
#[derive(Debug, Clone)]
pub struct CpuBackend {
    device: DeviceInfo,
}

impl CpuBackend {
    /// The CPU backend, using the best SIMD level this CPU supports or the one `GPUWORTHY_CPU_SIMD` names (see
    /// [`simd::level`]).
    ///
    /// Returns [`gpuworthy_core::Error::InvalidInput`] naming the variable when it names a level this CPU lacks.
    pub fn new() -> Result<Self> {
        simd::requested_level()?;
        let level = simd::level();
        let device = DeviceInfo {
            name: cpu_model(),
            device_type: DeviceType::Cpu,
            driver: format!("{}, {} threads", level.describe(), rayon::current_num_threads()),
            limits: vec![
                ("threads".into(), rayon::current_num_threads().to_string()),
                ("simd".into(), level.name().into()),
            ],
        };
        Ok(CpuBackend { device })
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
