//! How much memory a workload needs, checked before anything is allocated.
//!
//! A size typed on the command line (`2^40`, `sum 16G`, `mandelbrot 100000x100000`) must be refused with a message,
//! not end in an allocation failure that aborts the process, or a "capacity overflow" panic. So every workload
//! states its host footprint ([`crate::Workload::host_bytes`], in checked arithmetic), generators call
//! [`check_host_memory`] before they allocate, and backends compare the same figure with their device's memory
//! ([`crate::Backend::device_memory`]) in [`crate::Implements::check_size`].

use crate::error::{Error, Result};
use crate::workload::Workload;

/// The memory of this machine, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostMemory {
    /// Memory that can be allocated now without swapping (Linux's `MemAvailable`).
    pub available: u64,
    /// All of it.
    pub total: u64,
}

/// The memory of this machine, where the operating system says (Linux's `/proc/meminfo`); `None` elsewhere, and then
/// sizes are only checked for overflow.
pub fn host_memory() -> Option<HostMemory> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kib: u64 = line[name.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
        kib.checked_mul(1024)
    };
    let total = field("MemTotal:")?;
    Some(HostMemory { available: field("MemAvailable:").unwrap_or(total), total })
}

/// A byte count for people: `1.5 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

/// The host bytes `W` at `params` needs for its input and output, or [`Error::TooLarge`] when that overflows 64
/// bits.
pub fn host_bytes<W: Workload>(params: &W::Params) -> Result<u64> {
    W::host_bytes(params).ok_or_else(|| Error::TooLarge {
        what: format!("{} {params}", W::NAME),
        limit: "2^64 bytes: the size overflows the address space".into(),
    })
}

/// Refuses `params` when the input and output of `W` would not fit in the memory this machine has free, naming
/// both figures. Called before anything of that size is allocated.
///
/// ```
/// use gpuworthy_core::{memory::check_host_memory, workloads::{Len, Sum}};
/// assert!(check_host_memory::<Sum>(&Len(1000)).is_ok());
/// assert!(check_host_memory::<Sum>(&Len(usize::MAX)).is_err());
/// ```
pub fn check_host_memory<W: Workload>(params: &W::Params) -> Result<()> {
    let bytes = host_bytes::<W>(params)?;
    match host_memory() {
        Some(memory) if bytes > memory.available => Err(Error::TooLarge {
            what: format!("{} {params} ({} for its input and output on the host)", W::NAME, human_bytes(bytes)),
            limit: format!(
                "{} of memory available on this machine ({} in all)",
                human_bytes(memory.available),
                human_bytes(memory.total)
            ),
        }),
        _ => Ok(()),
    }
}

/// Refuses `params` when the input and output of `W` would not fit in a device of `device_bytes` bytes, naming
/// both figures. The default [`crate::Implements::check_size`] of a backend that knows its device's memory.
pub fn check_device_memory<W: Workload>(params: &W::Params, device_bytes: u64, device: &str) -> Result<()> {
    let bytes = host_bytes::<W>(params)?;
    if bytes > device_bytes {
        return Err(Error::TooLarge {
            what: format!("{} {params} ({} for its input and output on the device)", W::NAME, human_bytes(bytes)),
            limit: format!("{} of memory on {device}", human_bytes(device_bytes)),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::{Len, MandelbrotParams, MatmulParams, Shape2, Softmax, Sum};

    #[test]
    fn this_machine_reports_its_memory() {
        if cfg!(target_os = "linux") {
            let memory = host_memory().expect("Linux has /proc/meminfo");
            assert!(memory.available > 0 && memory.available <= memory.total, "{memory:?}");
        }
    }

    #[test]
    fn sizes_beyond_memory_or_the_address_space_are_too_large_before_any_allocation() {
        let err = check_host_memory::<Sum>(&Len(1 << 62)).unwrap_err();
        assert!(matches!(err, Error::TooLarge { .. }), "{err}");
        if host_memory().is_some() {
            let err = check_host_memory::<Sum>(&Len(1 << 40)).unwrap_err().to_string();
            assert!(err.contains("4.0 TiB") && err.contains("available on this machine"), "{err}");
        }
        assert!(check_host_memory::<Softmax>(&Shape2::new(usize::MAX, 3)).is_err());
        let huge = MatmulParams::new(1 << 40, 1 << 40, 1);
        assert!(check_host_memory::<crate::workloads::Matmul>(&huge).is_err());
        let image = MandelbrotParams::new(100_000, 100_000);
        let err = check_device_memory::<crate::workloads::Mandelbrot>(&image, 1 << 30, "a 1 GiB GPU").unwrap_err();
        assert!(err.to_string().contains("1.0 GiB of memory on a 1 GiB GPU"), "{err}");
    }

    #[test]
    fn bytes_read_as_people_write_them() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }
}
