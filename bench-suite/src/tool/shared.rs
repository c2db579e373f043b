//! What several commands share: the environment checked before any work, output files checked before anything is
//! measured, devices that could not open, an expression's domain warning, and how auto's choice and CUDA's pipelined
//! path are named in reports.
//!
//! Each of these is said the same way by every command that says it, so it lives once, here, rather than in the
//! first command that needed it; what only one command says stays in that command's module.

use std::path::Path;

use gpuworthy::core::{BackendKind, Error};
use gpuworthy::user_code::expression::ExpressionRequest;
use gpuworthy::{DeviceSpec, OpenedDevices};

use crate::tool::exit::{Exit, usage};

/// Every `GPUWORTHY_*` variable parsed once, before any work: a bad value is a usage error naming the variable.
pub(crate) fn check_environment() -> Result<(), Error> {
    BackendKind::required_by_env()?;
    DeviceSpec::from_env()?;
    gpuworthy::model::calibration::default_path()?;
    gpuworthy::cpu::simd::requested_level()?;
    gpuworthy::core::wait::limit_from_env()?;
    gpuworthy::wgpu::check_environment()
}

/// Fails now, before anything is measured, when `path` (a file) cannot be written.
pub(crate) fn check_writable_file(flag: &str, path: &Path) -> anyhow::Result<()> {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map(drop)
        .map_err(|e| Exit::usage(format!("{flag} {}: cannot write there: {e}", path.display())))
}

/// Fails now, before anything is measured, when files cannot be written in `dir` (made if missing).
pub(crate) fn check_writable_dir(flag: &str, dir: &Path) -> anyhow::Result<()> {
    let probe = dir.join(".gpuworthy-write-test");
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&probe, b""))
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| Exit::usage(format!("{flag} {}: cannot write there: {e}", dir.display())))
}

/// Says on standard error which of the devices asked for cannot run here, and goes on without them; a device refused
/// for another reason (a bad adapter name, a bad environment variable) is a usage error.
pub(crate) fn skip_unavailable(opened: &OpenedDevices) -> anyhow::Result<()> {
    for (spec, why) in &opened.unavailable {
        if !why.is_unavailable() {
            return Err(usage(Error::invalid(why.to_string())));
        }
        eprintln!("gpuworthy: skipping {spec}: {why}");
    }
    Ok(())
}

/// Warns on standard error when a function of the expression is outside its domain at every element its inputs'
/// ranges give ([`ExpressionRequest::domain_warning`]).
pub(crate) fn warn_about_domain(request: &ExpressionRequest) -> anyhow::Result<()> {
    if let Some(warning) = request.domain_warning().map_err(usage)? {
        eprintln!("gpuworthy: warning: {warning}");
    }
    Ok(())
}

/// The note under a table whose end-to-end column went through CUDA's pipelined path.
pub(crate) fn pipelined_note() -> String {
    format!(
        "end-to-end pipelined: chunks of a {}th of the data ({}-{} MiB) through {} streams, host staging, both copies \
         and the kernels overlapping; upload and download alone go through pinned staging",
        gpuworthy::cuda::PIPELINE_CHUNKS,
        gpuworthy::cuda::PIPELINE_CHUNK_MIN_BYTES >> 20,
        gpuworthy::cuda::PIPELINE_CHUNK_MAX_BYTES >> 20,
        gpuworthy::cuda::PIPELINE_LANES
    )
}

/// Auto's choice as the reports name it: device, variant, and the pipelined path where it was chosen.
pub(crate) fn chosen_label(choice: &gpuworthy::choose::auto::Choice) -> String {
    let path = if choice.pipelined { ", pipelined" } else { "" };
    format!("{} {}{path}", choice.device.label(), choice.variant)
}

pub(crate) use gpuworthy::choose::auto::{allowed_precisions, sum_length};

/// The precisions of `allowed` with their error bounds at `cost`, as `fp32 (bound 2.2e-5), bf16 (bound 7.8e-3)`, and
/// the length of the sums the bounds were taken at.
pub(crate) fn describe_allowed(cost: &gpuworthy::core::Cost, allowed: &[gpuworthy::core::Precision]) -> String {
    let k = sum_length(cost);
    let each: Vec<String> = allowed.iter().map(|p| format!("{p} (bound {:.1e})", p.relative_error_bound(k))).collect();
    format!("{} (relative error bounds at sums of {k})", each.join(", "))
}
