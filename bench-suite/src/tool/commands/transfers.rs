//! `gpuworthy transfers`: a CUDA device's host-device copy rates, from pageable and from pinned memory, each way.
//!
//! The copies are the facade's ([`Device::transfer_rates`]); this module parses the size, refuses a device that is
//! not a CUDA one as a usage error before anything is opened, and prints the two rows.

use gpuworthy::core::Backend;
use gpuworthy::{Device, DeviceSpec};

use crate::tool::exit::{Exit, usage};

/// `gpuworthy transfers`: a CUDA device's copy rates, pageable and pinned.
pub(crate) fn transfers(size: &str, backend: DeviceSpec) -> anyhow::Result<()> {
    let bytes = gpuworthy::measure::size::parse_count(size).map_err(usage)?;
    let DeviceSpec::Cuda { ordinal } = backend else {
        return Err(Exit::usage(format!("transfers measures CUDA devices, not {backend}")));
    };
    let cuda = Device::cuda(ordinal)?;
    let rates = cuda.transfer_rates(bytes, 10)?;
    out!("{} ({}), {} bytes per copy, median of 10:", cuda.device().name, cuda.device().driver, rates.bytes);
    out!(
        "  host to device  pageable {:7.1} GB/s   pinned {:7.1} GB/s",
        rates.host_to_device_pageable,
        rates.host_to_device_pinned
    );
    out!(
        "  device to host  pageable {:7.1} GB/s   pinned {:7.1} GB/s",
        rates.device_to_host_pageable,
        rates.device_to_host_pinned
    );
    Ok(())
}
