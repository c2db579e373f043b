//! `gpuworthy devices`: the environment variables in effect, then each backend: available or not (and why), its
//! device, driver and limits, and the other devices it has, each with the `--backend` text that picks it.
//!
//! It opens each backend's first device as every other command would, so that what it says is what `run` and
//! `sweep` will find; the further devices are listed from the facade ([`Device::list`]) and opened one by one, so
//! that one GPU that cannot open is a line here, not a failure of the command.

use gpuworthy::Device;
use gpuworthy::core::{Backend, BackendKind};

/// `gpuworthy devices`: what this machine has, and why not where it has not.
pub(crate) fn devices() -> anyhow::Result<()> {
    out!("environment:");
    for (variable, value) in gpuworthy::core::env::in_effect() {
        match value {
            Some(value) => out!("      {}={value}", variable.name),
            None => out!("      {} unset: {}", variable.name, variable.purpose),
        }
    }
    for name in gpuworthy::core::env::unknown_names() {
        out!("      warning: {name} is set but gpuworthy reads no such variable (misspelt?)");
    }
    for kind in BackendKind::ALL {
        match Device::open(kind) {
            Ok(device) => describe(&device)?,
            Err(e) => out!("{kind:<5} not available: {e}"),
        }
        if kind == BackendKind::Cuda {
            for (ordinal, listed) in Device::list(kind).into_iter().enumerate().skip(1) {
                match Device::open(listed.spec.clone()) {
                    Ok(device) => out!("      device {ordinal}: {}  [--backend {}]", device.device().name, listed.spec),
                    Err(e) => out!("      device {ordinal}: {e}"),
                }
            }
        }
        if kind == BackendKind::Wgpu {
            for (i, listed) in Device::list(kind).iter().enumerate() {
                if let Some(adapter) = &listed.adapter {
                    out!("      adapter {i}: {adapter}  [--backend {}]", listed.spec);
                }
            }
        }
    }
    Ok(())
}

/// The line of an opened backend's first device, and its limits below it.
fn describe(backend: &Device) -> anyhow::Result<()> {
    let device = backend.device();
    let kind = if backend.kind().is_gpu() && !backend.is_gpu() { ", a CPU adapter: not a GPU" } else { "" };
    out!("{:<5} available: {} ({}{kind})", backend.kind(), device.name, device.driver);
    for (name, value) in &device.limits {
        out!("      {name}: {value}");
    }
    Ok(())
}
