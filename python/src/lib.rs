//! `gpuworthy._gpuworthy`: the Rust half of the Python package. The Python half (`python/python/gpuworthy/__init__.py`)
//! gives the results their classes, attributes and `to_dict`; this half does the work, with the GIL released while
//! anything runs, and hands back NumPy arrays for arrays and JSON for records.
//!
//! Records cross as JSON rather than as Python objects built here: the facade's types already describe themselves to
//! serde, the Python classes stay plain Python (readable, typed by the stubs), and one function per command keeps
//! this layer thin. Arrays never go through JSON: they are read from NumPy in place (float32, C-contiguous, one
//! dimension: the Python half converts, broadcasts and flattens the arrays users have into that form, or refuses
//! them with `strict=True`) and returned as NumPy arrays that own the result's memory.
//!
//! Errors become Python exceptions: `ValueError` for bad input (an expression's error keeps its caret), the package's
//! `Unavailable` for a backend that cannot run here, `RuntimeError` for a device failure. Nothing here panics on
//! input; a panic inside the facade would reach Python as PyO3's `PanicException`, not a crash.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use gpuworthy::choose::auto::Auto;
use gpuworthy::choose::catalog::Catalog;
use gpuworthy::core::expr::Expr as ParsedExpr;
use gpuworthy::core::expr::ExprInput;
use gpuworthy::core::{Backend, BackendKind, Dtype, Error, Precision};
use gpuworthy::device::dispatch::{CommandLineWorkload, WorkloadVisitor, visit_workload_named};
use gpuworthy::device::group::DeviceGroup;
use gpuworthy::measure::size::{
    Ladder, ParseSize, SizeRequest, WorkloadOptions, parse_bins, parse_distribution, parse_max_iter, parse_region,
};
use gpuworthy::measure::{MeasureOptions, Measurement, Stats};
use gpuworthy::model::Placement;
use gpuworthy::model::reference::WhatIf;
use gpuworthy::model::sweep::SweepOptions;
use gpuworthy::user_code::expression::{ExprOutputs, ExprValue, ExpressionRequest, named_outputs};
use gpuworthy::{Device, DeviceSpec, HostMemory, PreparedExpression};
use numpy::{PyArray1, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyString, PyType};
use serde_json::{Value, json};

create_exception!(
    _gpuworthy,
    Unavailable,
    PyRuntimeError,
    "A backend that cannot run here: its driver, adapter or library is missing, or this build left it out."
);

/// The Python exception for a facade error: `ValueError` for what the caller asked, `Unavailable` for a missing
/// backend, `RuntimeError` for a device's failure.
fn to_python(e: Error) -> PyErr {
    match e {
        Error::Unavailable { .. } | Error::NotCompiled { .. } => Unavailable::new_err(e.to_string()),
        Error::Device { .. } => PyRuntimeError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// A phase's statistics as a record.
fn stats(s: &Stats) -> Value {
    json!({
        "median_s": s.median.as_secs_f64(),
        "min_s": s.min.as_secs_f64(),
        "max_s": s.max.as_secs_f64(),
        "p25_s": s.p25.as_secs_f64(),
        "p75_s": s.p75.as_secs_f64(),
        "samples": s.samples,
    })
}

/// One measurement of one variant as a record: every phase with its spread, the throughput and the check.
fn measurement(device: &Device, m: &Measurement, reason: Option<&str>) -> Value {
    let check = match &m.check {
        None => "not checked".to_owned(),
        Some(Ok(())) => "passed".to_owned(),
        Some(Err(mismatch)) => format!("failed: {mismatch}"),
    };
    json!({
        "workload": m.workload,
        "size": m.size,
        "device": device.label().to_string(),
        "device_name": device.device().name,
        "is_gpu": device.is_gpu(),
        "variant": m.variant,
        "kernel_clock": device.kernel_clock().to_string(),
        "compile_s": m.compile.as_secs_f64(),
        "first_call_s": m.first_call.as_secs_f64(),
        "upload": stats(&m.upload),
        "kernel": stats(&m.kernel),
        "download": stats(&m.download),
        "end_to_end": stats(&m.end_to_end),
        "bytes": m.cost.bytes,
        "flops": m.cost.flops,
        "kernel_gb_per_s": m.gb_per_s(m.kernel.median),
        "kernel_gflop_per_s": m.gflop_per_s(m.kernel.median),
        "check": check,
        "reason": reason,
    })
}

/// The device `backend` names (`cpu`, `cuda`, `cuda:1`, `wgpu`, `wgpu:<adapter>`); `None` for `auto`. Each is opened
/// once per process and kept: opening a device (a thread pool, a CUDA context, a wgpu adapter) costs far more than a
/// small call.
fn device_named(backend: &str) -> PyResult<Option<Device>> {
    static OPENED: Mutex<Vec<(String, Device)>> = Mutex::new(Vec::new());
    if backend == "auto" {
        return Ok(None);
    }
    let mut opened = OPENED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, device)) = opened.iter().find(|(name, _)| name == backend) {
        return Ok(Some(device.clone()));
    }
    let spec: DeviceSpec = backend.parse().map_err(to_python)?;
    let device = Device::open(spec).map_err(to_python)?;
    opened.push((backend.to_owned(), device.clone()));
    Ok(Some(device))
}

/// CUDA device `ordinal`, opened once per process as [`device_named`] opens it; `None` where that device is not a CUDA
/// one (never, as `cuda:<ordinal>` names only CUDA devices; kept as a check rather than assumed).
fn cuda_device(ordinal: usize) -> PyResult<Option<Device>> {
    Ok(device_named(&format!("cuda:{ordinal}"))?.filter(|device| device.kind() == BackendKind::Cuda))
}

/// The devices this machine has, and for the others why not: JSON, a list of records. A `GPUWORTHY_*` variable with a
/// value its backend does not accept is refused as the command line refuses it: a `ValueError` naming the variable,
/// not a backend listed as missing.
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<String> {
    let mut opened = py.detach(Device::all_available);
    if let Some(bad) = opened.unavailable.iter().position(|(_, why)| matches!(why, Error::InvalidInput(_))) {
        return Err(to_python(opened.unavailable.swap_remove(bad).1));
    }
    let mut list: Vec<Value> = opened
        .devices
        .iter()
        .map(|d| {
            json!({
                "label": d.label().to_string(),
                "backend": d.kind().name(),
                "name": d.device().name,
                "driver": d.device().driver,
                "is_gpu": d.is_gpu(),
                "available": true,
                "reason": null,
            })
        })
        .collect();
    list.extend(opened.unavailable.iter().map(|(spec, why)| {
        json!({
            "label": spec.to_string(),
            "backend": spec.kind().name(),
            "name": null,
            "driver": null,
            "is_gpu": null,
            "available": false,
            "reason": why.to_string(),
        })
    }));
    Ok(Value::Array(list).to_string())
}

/// What `run` asked for.
struct RunRequest<'a> {
    size: Option<&'a str>,
    device: Option<Device>,
    variant: Option<&'a str>,
    options: MeasureOptions,
    /// Kernels per transfer to time as well (the command line's `--launches`).
    launches: Option<usize>,
    /// The precisions named (`precision=`), empty for none.
    precisions: Vec<gpuworthy::core::Precision>,
    /// The relative error accepted (`tolerance=`).
    tolerance: Option<f64>,
    /// The workload's own parameters (`bins=`, `distribution=`, `region=`, `max_iter=`).
    workload_options: WorkloadOptions,
    /// Whether to time one launch three ways as well (the command line's `--no-sync`).
    no_sync: bool,
}

impl WorkloadVisitor for RunRequest<'_> {
    type Output = gpuworthy::core::Result<Vec<Value>>;
    fn visit<W: CommandLineWorkload>(&mut self) -> Self::Output {
        let mut params = match self.size {
            Some(s) => W::Params::parse_size(s)?,
            None => W::quick_ladder().pop().ok_or_else(|| Error::invalid("the workload has no default size"))?,
        };
        params.apply(&self.workload_options).map_err(|e| match e {
            Error::InvalidInput(message) => Error::InvalidInput(python_option_names(&message)),
            other => other,
        })?;
        // A precision's bound depends on the size's cost, computed only for a size the machine could hold.
        let allowed = if self.precisions.is_empty() && self.tolerance.is_none() {
            None
        } else {
            gpuworthy::core::memory::check_host_memory::<W>(&params)?;
            gpuworthy::choose::auto::allowed_precisions(&W::cost(&params), &self.precisions, self.tolerance)
        };
        let in_allowed =
            |device: &Device, v: &&'static str| allowed.as_ref().is_none_or(|a| a.contains(&device.precision::<W>(v)));
        let (device, variants, reason) = match (&self.device, self.variant) {
            (Some(device), Some("all")) => {
                let variants: Vec<&str> =
                    device.variants::<W>().into_iter().filter(|v| in_allowed(device, v)).collect();
                if variants.is_empty() {
                    return Err(Error::invalid(format!(
                        "{} has no variant of {} in the precisions allowed",
                        device.label(),
                        W::NAME
                    )));
                }
                (device.clone(), variants, None)
            }
            (Some(_), _) if allowed.is_some() => {
                return Err(Error::invalid(
                    "precision and tolerance choose among variants: pass backend=\"auto\" (auto may choose them) or \
                     variant=\"all\" (every variant of the device in them)",
                ));
            }
            (Some(device), Some(v)) => (device.clone(), vec![v], None),
            (Some(device), None) => (device.clone(), vec![device.best_variant::<W>(&params)], None),
            (None, variant) => {
                let choice = match allowed.as_deref() {
                    Some(allowed) => gpuworthy::choose::auto::Auto::open()?.allowing(allowed).decide::<W>(
                        &params,
                        Placement::Host,
                        None,
                    )?,
                    None => gpuworthy::choose::auto::global()?.decide::<W>(&params, Placement::Host, None)?,
                };
                let variants = match variant {
                    Some("all") => choice.device.variants::<W>(),
                    Some(v) => vec![v],
                    None => vec![choice.variant],
                };
                (choice.device.clone(), variants, Some(choice.reason))
            }
        };
        device.check_size::<W>(&params)?;
        let input = W::generate(&params, self.options.seed)?;
        variants
            .iter()
            .map(|v| {
                let mut record =
                    measurement(&device, &device.measure::<W>(v, &input, &self.options)?, reason.as_deref());
                if let Some(k) = self.launches {
                    let one = gpuworthy::measure::launches_per_transfer::<W, _>(&device, v, &input, 1, &self.options)?;
                    let many = gpuworthy::measure::launches_per_transfer::<W, _>(&device, v, &input, k, &self.options)?;
                    record["launches"] = json!({
                        "per_transfer": k,
                        "per_kernel_s": many.median.as_secs_f64(),
                        "one_per_transfer_s": one.median.as_secs_f64(),
                    });
                }
                if self.no_sync {
                    let clocks = device.compare_clocks::<W>(v, &input, &self.options)?;
                    record["clocks"] = json!({
                        "host_unsynchronised": stats(&clocks.launch_unsynchronised),
                        "host_synchronised": stats(&clocks.launch_synchronised),
                        "device_timer": stats(&clocks.device_timer),
                    });
                }
                Ok(record)
            })
            .collect()
    }
}

/// Measures a built-in workload at a size on a device (or where auto places it), phase by phase: JSON, a list of
/// records, one per variant.
/// `pinned` and `pipelined` move a CUDA device's data through pinned staging memory (the command line's `--pinned`
/// and `--pipelined`); `launches` also times that many kernels between one upload and one download. `precision`
/// (comma-separated names) and `tolerance` (a relative error) allow auto lower precisions, as `--precision` and
/// `--tolerance` do, and filter `variant="all"`.
/// `bins`, `distribution`, `region` and `max_iter` set the workload's own parameters (histogram's and mandelbrot's),
/// as the command line's options of those names do; one the workload does not have is an error that names it.
/// `block_size` sets the threads per block (CUDA) or invocations per workgroup (wgpu) of the elementwise kernels on a
/// device opened for the call, as `--block-size` does. `no_sync` also times one launch on resident data three ways
/// (the host's clock without and with a synchronisation, and the device's timer), as `--no-sync` does.
#[pyfunction]
#[pyo3(signature = (workload, size=None, backend="auto", variant=None, quick=false, seed=1, pinned=false, pipelined=false, launches=None, precision=None, tolerance=None, bins=None, distribution=None, region=None, max_iter=None, block_size=None, no_sync=false))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    workload: &str,
    size: Option<&str>,
    backend: &str,
    variant: Option<&str>,
    quick: bool,
    seed: u64,
    pinned: bool,
    pipelined: bool,
    launches: Option<usize>,
    precision: Option<&str>,
    tolerance: Option<f64>,
    bins: Option<i64>,
    distribution: Option<&str>,
    region: Option<&str>,
    max_iter: Option<i64>,
    block_size: Option<u32>,
    no_sync: bool,
) -> PyResult<String> {
    let named = |e: Error| PyValueError::new_err(python_option_names(&e.to_string()));
    let workload_options = WorkloadOptions {
        bins: bins.map(|b| parse_bins(&b.to_string())).transpose().map_err(named)?,
        distribution: distribution.map(parse_distribution).transpose().map_err(named)?,
        region: region.map(parse_region).transpose().map_err(named)?,
        max_iter: max_iter.map(|m| parse_max_iter(&m.to_string())).transpose().map_err(named)?,
    };
    let precisions = gpuworthy::core::Precision::parse_list(precision.unwrap_or_default()).map_err(to_python)?;
    if tolerance.is_some_and(|t| !(t > 0.0 && t < 1.0)) {
        return Err(PyValueError::new_err(format!(
            "a tolerance is a relative error between 0 and 1 (e.g. 1e-2), not {}",
            tolerance.unwrap_or_default()
        )));
    }
    let device = match (pinned, pipelined, block_size) {
        (false, false, None) => device_named(backend)?,
        _ => {
            if backend == "auto" {
                return Err(PyValueError::new_err(
                    "pinned, pipelined and block_size set up one device: name it (backend=\"cuda\", \"wgpu\" ...), \
                     not \"auto\"",
                ));
            }
            let memory = match (pinned, pipelined) {
                (_, true) => HostMemory::Pipelined,
                (true, false) => HostMemory::Pinned,
                (false, false) => HostMemory::Pageable,
            };
            let spec: DeviceSpec = backend.parse().map_err(to_python)?;
            if memory != HostMemory::Pageable && !matches!(spec, DeviceSpec::Cuda { .. }) {
                return Err(PyValueError::new_err(format!(
                    "pinned and pipelined move a CUDA device's data through pinned memory: pass backend=\"cuda\" \
                     (or \"cuda:N\"), not {backend:?}"
                )));
            }
            // A device of its own, not the one `device_named` shares: its block size is set as it is opened.
            let device = Device::open_with_host_memory(spec, memory).map_err(to_python)?;
            Some(match block_size {
                Some(threads) => device.with_elementwise_block_size(threads).map_err(to_python)?,
                None => device,
            })
        }
    };
    if launches == Some(0) {
        return Err(PyValueError::new_err("launches must be at least 1"));
    }
    let options = MeasureOptions { seed, ..if quick { MeasureOptions::quick() } else { MeasureOptions::default() } };
    let records = py.detach(|| {
        let mut request =
            RunRequest { size, device, variant, options, launches, precisions, tolerance, workload_options, no_sync };
        visit_workload_named(workload, &mut request)?
    });
    Ok(Value::Array(records.map_err(to_python)?).to_string())
}

/// A message about the workload's own options, with each option as `run` takes it (`max_iter`) rather than as the
/// command line spells it (`--max-iter`).
fn python_option_names(message: &str) -> String {
    [("--bins", "bins"), ("--distribution", "distribution"), ("--region", "region"), ("--max-iter", "max_iter")]
        .iter()
        .fold(message.to_owned(), |text, (flag, name)| text.replace(flag, name))
}

/// What `run_group` asked for.
struct GroupRequest<'a> {
    size: Option<&'a str>,
    group: &'a DeviceGroup,
    options: MeasureOptions,
}

impl WorkloadVisitor for GroupRequest<'_> {
    type Output = gpuworthy::core::Result<Value>;
    fn visit<W: CommandLineWorkload>(&mut self) -> Self::Output {
        use gpuworthy::choose::group_run::{calibrated, measure_from_host, measure_resident};
        let Some(sharding) = W::sharding() else {
            return Err(Error::invalid(format!("{} does not split over a device group", W::NAME)));
        };
        let params = match self.size {
            Some(s) => W::Params::parse_size(s)?,
            None => W::quick_ladder().pop().ok_or_else(|| Error::invalid("the workload has no default size"))?,
        };
        for member in self.group.members() {
            member.check_size::<W>(&params)?;
        }
        let input = W::generate(&params, self.options.seed)?;
        let repeats = self.options.min_repetitions.clamp(3, 9);
        let host = measure_from_host::<W>(self.group, &input, repeats, calibrated().as_ref(), Default::default())?;
        let resident = measure_resident::<W>(self.group, &input, repeats, None)?;
        let check = match self.options.validate {
            false => "not checked".to_owned(),
            true => {
                let expected = W::reference(&input)?;
                let joined = W::check(&input, &expected, &host.median.output, Precision::Fp32);
                let parts = W::check(&input, &expected, &resident.output, Precision::Fp32);
                match (joined, parts) {
                    (Ok(()), Ok(())) => "passed".to_owned(),
                    (Err(e), _) => format!("failed: the joined result: {e}"),
                    (_, Err(e)) => format!("failed: the resident parts' joined result: {e}"),
                }
            }
        };
        let total: f64 = host.shares.iter().sum();
        let members: Vec<Value> = self
            .group
            .names()
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let part = host.median.members.iter().find(|m| m.member == i);
                json!({
                    "name": name,
                    "share": host.shares[i] / total,
                    "units": part.map(|p| [p.units.start, p.units.end]),
                    "variant": part.map(|p| p.variant),
                    "in_group_s": part.map(|p| p.time.as_secs_f64()),
                    "alone_s": host.alone[i].as_secs_f64(),
                })
            })
            .collect();
        Ok(json!({
            "workload": W::NAME,
            "size": params.to_string(),
            "group": self.group.label(),
            "unit": sharding.unit,
            "shares_from": host.shares_from,
            "members": members,
            "group_s": host.group_time().as_secs_f64(),
            "parallel_s": host.median.parallel.as_secs_f64(),
            "split_s": host.median.split.as_secs_f64(),
            "join_s": host.median.join.as_secs_f64(),
            "in_place": host.median.in_place,
            "speedup": host.speedup(),
            "repeats": repeats,
            "resident": {
                "upload_s": resident.upload.as_secs_f64(),
                "launch_wall_s": resident.wall.as_secs_f64(),
                "slowest_kernel_s": resident.slowest.as_secs_f64(),
                "fastest_alone_s": resident.fastest_alone.as_secs_f64(),
                "download_s": resident.download.as_secs_f64(),
                "join_s": resident.join.as_secs_f64(),
                "speedup": resident.speedup(),
                "with_combine_s": resident.with_combine.as_secs_f64(),
                "with_combine_alone_s": resident.with_combine_alone.as_secs_f64(),
                "speedup_with_combine": resident.speedup_with_combine(),
            },
            "check": check,
        }))
    }
}

/// Measures a built-in workload at a size split over a device group (`cpu+wgpu`, `cuda:0,1`, `cuda:*`,
/// `cpu+cuda`), as the command line's `run --backend GROUP`: each member alone, the shares, the group's median run
/// from the host, its resident phases, and the joined result checked: JSON, a record.
#[pyfunction]
#[pyo3(signature = (workload, group, size=None, quick=true, seed=1))]
fn run_group(
    py: Python<'_>,
    workload: &str,
    group: &str,
    size: Option<&str>,
    quick: bool,
    seed: u64,
) -> PyResult<String> {
    if !DeviceGroup::is_group(group) {
        return Err(PyValueError::new_err(format!(
            "{group:?} is one device, not a group: name two or more (\"cpu+wgpu\", \"cuda:0,1\", \"cuda:*\", \"cpu+cuda\")"
        )));
    }
    let options = MeasureOptions { seed, ..if quick { MeasureOptions::quick() } else { MeasureOptions::default() } };
    let record = py.detach(|| -> gpuworthy::core::Result<Value> {
        let group = DeviceGroup::open(group)?;
        visit_workload_named(workload, &mut GroupRequest { size, group: &group, options })?
    });
    Ok(record.map_err(to_python)?.to_string())
}

/// What `explain` asked for.
struct ExplainRequest<'a> {
    size: &'a str,
    placement: Placement,
    /// A reference machine's GPUs to predict on, beside this machine's CPU, and how its GPU differs (what-ifs).
    on: Option<(&'a str, WhatIf)>,
}

impl WorkloadVisitor for ExplainRequest<'_> {
    type Output = gpuworthy::core::Result<Value>;
    fn visit<W: CommandLineWorkload>(&mut self) -> Self::Output {
        let params = W::Params::parse_size(self.size)?;
        explain_record::<W>(&params, self.placement, &self.on, |cpu| {
            Ok(gpuworthy::model::calibration::calibrate_cpu_for::<W>(cpu, &()))
        })
    }
}

/// Auto's choice for `W` at `params` and why, every device's prediction with it: on this machine, or with `on` on
/// this machine's CPU beside a reference machine's GPUs (as the command line's `explain --on`), the CPU's curves
/// from this machine's calibration, else from `calibrate_cpu` run now (seconds).
fn explain_record<W: gpuworthy::device::DeviceWorkload>(
    params: &W::Params,
    placement: Placement,
    on: &Option<(&str, WhatIf)>,
    calibrate_cpu: impl FnOnce(&Device) -> gpuworthy::core::Result<gpuworthy::model::calibration::Calibration>,
) -> gpuworthy::core::Result<Value> {
    use gpuworthy::choose::auto::verdict;
    gpuworthy::core::memory::check_host_memory::<W>(params)?;
    let cost = W::cost(params);
    let record = json!({
        "workload": W::NAME,
        "size": params.to_string(),
        "placement": placement.to_string(),
        "bytes": cost.bytes,
        "flops": cost.flops,
    });
    let Some((machine, what_if)) = on else {
        let auto = Auto::open()?;
        let choice = auto.choose::<W>(params, placement)?;
        return Ok(merged(
            record,
            json!({
                "device": choice.device.label().to_string(),
                "variant": choice.variant,
                "pipelined": choice.pipelined,
                "reason": choice.reason,
                "predictions": to_json(&choice.predictions)?,
                "uncalibrated": auto.uncalibrated,
                "model_error": auto.model.as_ref().and_then(|m| serde_json::to_value(&m.error).ok()),
            }),
        ));
    };
    what_if.validate()?;
    let machine = gpuworthy::model::reference::find(machine)?;
    let beside =
        gpuworthy::choose::auto::predict_beside_reference::<W>(machine, what_if, params, placement, calibrate_cpu)?;
    let (auto, predictions) = (beside.auto, beside.predictions);
    let cpu_from = match beside.cpu_measured_now {
        false => "this machine's calibration",
        true => "measured just now on this machine",
    };
    let Some(fastest) = predictions.first() else {
        return Err(Error::invalid(format!("{} does not know {}: nothing to predict from", machine.name, W::NAME)));
    };
    let attribution = match what_if.is_some() {
        false => machine.attribution()?,
        true => format!("a what-if GPU: {}'s with {}", machine.attribution()?, what_if.describe()),
    };
    Ok(merged(
        record,
        json!({
            "device": fastest.device.to_string(),
            "variant": fastest.variant,
            "pipelined": fastest.pipelined,
            "reason": verdict(&predictions, auto.toss_up_margin()).unwrap_or_default(),
            "predictions": to_json(&predictions)?,
            "uncalibrated": None::<String>,
            "model_error": auto.model.as_ref().and_then(|m| serde_json::to_value(&m.error).ok()),
            "on": attribution,
            "cpu_from": cpu_from,
        }),
    ))
}

/// `value` as JSON, a facade error where serde cannot write it.
fn to_json(value: &impl serde::Serialize) -> gpuworthy::core::Result<Value> {
    serde_json::to_value(value).map_err(|e| Error::invalid(e.to_string()))
}

/// `record` with `more`'s fields added (both JSON objects).
fn merged(mut record: Value, more: Value) -> Value {
    if let (Some(record), Value::Object(more)) = (record.as_object_mut(), more) {
        record.extend(more);
    }
    record
}

/// Auto's choice for a workload at a size and why, with the model's prediction for every device: JSON, a record.
/// With `on`, a prediction for this machine's CPU beside a reference machine's GPUs, which may be changed by the
/// what-ifs (`gpu_memory_gb_per_s`, `gpu_compute`, `link_gb_per_s`, `unified`).
#[pyfunction]
#[pyo3(signature = (workload, size, placement="host", on=None, gpu_memory_gb_per_s=None, gpu_compute=None, link_gb_per_s=None, unified=false))]
#[allow(clippy::too_many_arguments)]
fn explain(
    py: Python<'_>,
    workload: &str,
    size: &str,
    placement: &str,
    on: Option<&str>,
    gpu_memory_gb_per_s: Option<f64>,
    gpu_compute: Option<f64>,
    link_gb_per_s: Option<f64>,
    unified: bool,
) -> PyResult<String> {
    let placement = placement_named(placement)?;
    let on = reference_machine(on, (gpu_memory_gb_per_s, gpu_compute, link_gb_per_s, unified))?;
    let record = py.detach(|| visit_workload_named(workload, &mut ExplainRequest { size, placement, on })?);
    Ok(record.map_err(to_python)?.to_string())
}

/// The placement `name` names: `host`, `resident` or `pinned`.
fn placement_named(name: &str) -> PyResult<Placement> {
    match name {
        "host" => Ok(Placement::Host),
        "resident" => Ok(Placement::Resident),
        "pinned" => Ok(Placement::PinnedHost),
        other => {
            Err(PyValueError::new_err(format!("placement must be \"host\", \"resident\" or \"pinned\", got {other:?}")))
        }
    }
}

/// The what-ifs as Python passes them: the GPU memory's and the link's GB/s, the share of arithmetic, unified memory.
type WhatIfArguments = (Option<f64>, Option<f64>, Option<f64>, bool);

/// The reference machine `on` names with its what-ifs; what-ifs without a machine refused.
fn reference_machine(on: Option<&str>, what_if: WhatIfArguments) -> PyResult<Option<(&str, WhatIf)>> {
    let (memory, compute, link, unified) = what_if;
    let what_if = WhatIf {
        memory_bytes_per_s: memory.map(|g| g * 1e9),
        compute_share: compute,
        link_bytes_per_s: link.map(|g| g * 1e9),
        unified,
    };
    if on.is_none() && what_if.is_some() {
        return Err(PyValueError::new_err(
            "gpu_memory, gpu_compute, link and unified describe a GPU beside a reference machine: give on= too",
        ));
    }
    Ok(on.map(|machine| (machine, what_if)))
}

/// Sweeps a workload over sizes on devices: every row, the notes, the crossovers and the verdict: JSON, a record.
#[pyfunction]
#[pyo3(signature = (workload, sizes=None, backends=None, quick=true, budget_s=4.0, progress=None))]
fn sweep(
    py: Python<'_>,
    workload: &str,
    sizes: Option<Vec<String>>,
    backends: Option<Vec<String>>,
    quick: bool,
    budget_s: f64,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    sweep_with(py, sizes, backends, (quick, budget_s), progress, |sweep| {
        let catalog = Catalog::builtin();
        sweep(catalog.find(workload)?)
    })
}

/// One sweep's devices, sizes and options, handed to [`sweep_with`]'s caller with the entry to sweep.
type SweepOf<'a> = dyn FnMut(&dyn gpuworthy::choose::catalog::WorkloadEntry) -> gpuworthy::core::Result<Value> + 'a;

/// Sweeps the entry `with_entry` gives over `sizes` (or the quick or full ladder) on `backends` (or every one): the
/// rows, notes, crossovers and verdict as JSON, with progress and Ctrl-C ([`interruptible`]).
fn sweep_with(
    py: Python<'_>,
    sizes: Option<Vec<String>>,
    backends: Option<Vec<String>>,
    (quick, budget_s): (bool, f64),
    progress: Option<Py<PyAny>>,
    with_entry: impl FnOnce(&mut SweepOf<'_>) -> gpuworthy::core::Result<Value> + Send,
) -> PyResult<String> {
    if !(budget_s > 0.0 && budget_s.is_finite()) {
        return Err(PyValueError::new_err(format!("budget_s must be a positive number of seconds, got {budget_s}")));
    }
    let specs: Vec<DeviceSpec> = match backends {
        Some(list) => list.iter().map(|b| b.parse()).collect::<Result<_, _>>().map_err(to_python)?,
        None => gpuworthy::core::BackendKind::ALL.map(DeviceSpec::from).to_vec(),
    };
    let ladder = match sizes {
        Some(list) => Ladder::Listed(list),
        None if quick => Ladder::Quick,
        None => Ladder::Full,
    };
    let result = interruptible(py, progress, |progress| -> gpuworthy::core::Result<Value> {
        let request = SizeRequest { ladder, ..SizeRequest::quick() };
        let mut sweep = |entry: &dyn gpuworthy::choose::catalog::WorkloadEntry| -> gpuworthy::core::Result<Value> {
            entry.sizes(&request)?;
            let mut opened = Device::open_each(specs.clone());
            // A backend that failed for another reason than being absent (a bad GPUWORTHY_* value) is that error.
            if let Some(at) = opened.unavailable.iter().position(|(_, why)| !why.is_unavailable()) {
                return Err(opened.unavailable.swap_remove(at).1);
            }
            if opened.devices.is_empty() {
                let why: Vec<String> = opened.unavailable.iter().map(|(s, e)| format!("{s}: {e}")).collect();
                return Err(Error::Unavailable {
                    backend: gpuworthy::core::BackendKind::Cpu,
                    reason: format!("none of the requested backends can run here ({})", why.join("; ")),
                });
            }
            let options = SweepOptions { budget: Duration::from_secs_f64(budget_s), ..SweepOptions::default() };
            let swept = entry.sweep(&opened.devices, &request, &options, progress)?;
            serde_json::to_value(&swept).map_err(|e| Error::invalid(e.to_string()))
        };
        with_entry(&mut sweep)
    })?;
    Ok(result.to_string())
}

/// Calibrates this machine (every built-in workload and the expressions' bases and rates) and saves it where `auto`
/// finds it: JSON, a record of where it went and what it fitted.
/// With `evaluate`, then measures auto's choice against the fastest at the sizes calibration did not use, for every
/// built-in workload (the command line's `calibrate --evaluate`; minutes): the evaluation's points in `evaluation`.
#[pyfunction]
#[pyo3(signature = (progress=None, evaluate=false))]
fn calibrate(py: Python<'_>, progress: Option<Py<PyAny>>, evaluate: bool) -> PyResult<String> {
    let result = interruptible(py, progress, |progress| -> gpuworthy::core::Result<Value> {
        let path = gpuworthy::model::calibration::default_path()?
            .ok_or_else(|| Error::invalid("no cache directory is known: set GPUWORTHY_CALIBRATION to a file path"))?;
        let devices = Device::all_available().devices;
        let mut calibration = gpuworthy::choose::catalog::calibrate(&devices, &Catalog::builtin().entries(), progress);
        calibration.merge(gpuworthy::user_code::expression::calibrate_expressions(&devices, progress)?);
        calibration.save(&path)?;
        let evaluation = match evaluate {
            true => to_json(&gpuworthy::choose::catalog::evaluate(
                &calibration,
                &devices,
                &Catalog::builtin().entries(),
                progress,
            ))?,
            false => Value::Null,
        };
        Ok(json!({
            "path": path.display().to_string(),
            "took_s": calibration.took_s,
            "devices": calibration.model.devices.iter().map(|d| d.label.to_string()).collect::<Vec<_>>(),
            "evaluation": evaluation,
        }))
    })?;
    Ok(result.to_string())
}

/// A sweep's or a calibration's progress, handed to a Python callable `(planned, done, measuring)`, and the one place
/// Python runs while the work goes on: where Ctrl-C is noticed.
///
/// The facade's sweeps and calibrations run to their end once started (their loops take no cancel token), so a stop
/// asked for from Python (a pending `KeyboardInterrupt`, or an exception raised by the callback) unwinds out of the
/// work from here with an [`Interrupted`] payload: `resume_unwind` runs no panic hook (nothing is printed), every
/// buffer and device allocation on the way out is freed by its destructor, and [`interruptible`] turns the payload
/// back into the Python exception. No partial result is returned.
struct PythonProgress {
    callback: Option<Py<PyAny>>,
    planned: std::sync::atomic::AtomicU64,
    done: std::sync::atomic::AtomicU64,
}

/// The Python exception that stopped a sweep or a calibration, carried out of it by unwinding.
struct Interrupted(PyErr);

impl PythonProgress {
    /// Checks for Ctrl-C and tells the callback where the work is; unwinds with the exception if either raises.
    fn report(&self, measuring: Option<String>) {
        use std::sync::atomic::Ordering::Relaxed;
        let outcome = Python::attach(|py| -> PyResult<()> {
            py.check_signals()?;
            if let Some(callback) = &self.callback {
                callback.call1(py, (self.planned.load(Relaxed), self.done.load(Relaxed), measuring))?;
            }
            Ok(())
        });
        if let Err(e) = outcome {
            std::panic::resume_unwind(Box::new(Interrupted(e)));
        }
    }
}

impl gpuworthy::model::sweep::Progress for PythonProgress {
    fn plan(&self, steps: u64) {
        self.planned.fetch_add(steps, std::sync::atomic::Ordering::Relaxed);
        self.report(None);
    }
    fn advance(&self, steps: u64) {
        self.done.fetch_add(steps, std::sync::atomic::Ordering::Relaxed);
        self.report(None);
    }
    fn now_measuring(&self, what: String) {
        self.report(Some(what));
    }
}

/// Runs `work` without the GIL, reporting to `callback` ([`PythonProgress`]): its result, the facade's error as a
/// Python exception, or the exception that interrupted it (Ctrl-C's `KeyboardInterrupt`).
fn interruptible<T: Send>(
    py: Python<'_>,
    callback: Option<Py<PyAny>>,
    work: impl FnOnce(&PythonProgress) -> gpuworthy::core::Result<T> + Send,
) -> PyResult<T> {
    let progress = PythonProgress { callback, planned: Default::default(), done: Default::default() };
    let outcome = py.detach(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&progress))));
    match outcome {
        Ok(result) => result.map_err(to_python),
        Err(payload) => match payload.downcast::<Interrupted>() {
            Ok(interrupted) => Err(interrupted.0),
            Err(other) => std::panic::resume_unwind(other),
        },
    }
}

/// A call's outputs as Python values by name: `float32` arrays, `uint16` arrays of a 16-bit type's bits (which the
/// Python side views as that type), and reductions' values as floats.
fn outputs_dict<'py>(py: Python<'py>, named: ExprOutputs) -> PyResult<Bound<'py, PyDict>> {
    let outputs = PyDict::new(py);
    for (name, value) in named.outputs {
        match value {
            ExprValue::Array(values) => outputs.set_item(name, PyArray1::from_vec(py, values))?,
            ExprValue::HalfArray(_, bits) => outputs.set_item(name, PyArray1::from_vec(py, bits))?,
            ExprValue::Value(v) => outputs.set_item(name, v)?,
        }
    }
    Ok(outputs)
}

/// An output of a call on device arrays: its name, and the input it overwrites (`None` for an output of its own).
type OutputPlan = (String, Option<String>);

/// An expression of gpuworthy's language, parsed: called with NumPy arrays and scalars by name.
#[pyclass(module = "gpuworthy._gpuworthy", name = "_Expr", frozen)]
struct Expr {
    source: String,
    parsed: ParsedExpr,
    /// Compiled for a CUDA device, per device ordinal, scalar names and storage type: a call on device arrays looks
    /// its kernel up here instead of generating, hashing and finding its source again.
    prepared: Mutex<Vec<PreparedFor>>,
}

/// An expression compiled for device arrays, and what it was compiled for.
struct PreparedFor {
    ordinal: usize,
    scalars: Vec<String>,
    dtype: Dtype,
    prepared: PreparedExpression,
}

/// One keyword argument of a call: a NumPy array read in place, or a scalar.
enum Argument<'py> {
    Array(numpy::PyReadonlyArray1<'py, f32>),
    Scalar(f32),
}

/// `value` as an argument named `name`: a one-dimensional C-contiguous float32 array, or a Python number; anything
/// else refused with what it is.
fn argument<'py>(name: &str, value: &Bound<'py, PyAny>) -> PyResult<Argument<'py>> {
    if let Ok(array) = value.cast::<PyUntypedArray>() {
        let dtype = array.dtype();
        let f32_type = numpy::dtype::<f32>(value.py());
        if !dtype.is_equiv_to(&f32_type) {
            return Err(PyValueError::new_err(format!(
                "`{name}` is an array of dtype {}: gpuworthy reads float32 arrays, or arrays all of one 16-bit type \
                 (float16, bfloat16); pass `{name}.astype(numpy.float32)`",
                dtype.str()?
            )));
        }
        if array.ndim() != 1 {
            return Err(PyValueError::new_err(format!(
                "`{name}` has {} dimensions (shape {:?}): expressions take one-dimensional arrays; pass `{name}.ravel()`",
                array.ndim(),
                array.shape()
            )));
        }
        if !array.is_c_contiguous() {
            return Err(PyValueError::new_err(format!(
                "`{name}` is not contiguous in memory (a strided view): pass `numpy.ascontiguousarray({name})`"
            )));
        }
        let typed = value.cast::<PyArray1<f32>>().map_err(|e| PyTypeError::new_err(e.to_string()))?;
        return Ok(Argument::Array(typed.try_readonly().map_err(|e| PyValueError::new_err(e.to_string()))?));
    }
    if value.is_instance_of::<PyFloat>() || value.is_instance_of::<PyInt>() {
        let number: f64 = value.extract()?;
        return Ok(Argument::Scalar(number as f32));
    }
    Err(PyTypeError::new_err(format!(
        "`{name}` is a {}: pass a NumPy float32 array or a number",
        value.get_type().name()?
    )))
}

/// Runs `input` on `chosen` (or where the process's `auto` predicts it fastest, for `None`): its outputs by name and a
/// record of where it ran and why.
fn run_on(chosen: Option<Device>, input: &ExprInput) -> gpuworthy::core::Result<(ExprOutputs, Value)> {
    use gpuworthy::core::expr::Expression;
    let (device, variant, reason) = match chosen {
        Some(device) => {
            device.check_size::<Expression>(&input.params)?;
            let variant = device.best_variant::<Expression>(&input.params);
            (device, variant, "asked for".to_owned())
        }
        None => {
            let choice =
                gpuworthy::choose::auto::global()?.decide::<Expression>(&input.params, Placement::Host, Some(input))?;
            (choice.device, choice.variant, choice.reason)
        }
    };
    let outputs = device.run::<Expression>(variant, input)?;
    let named = named_outputs(input, outputs);
    let record = json!({
        "device": device.label().to_string(),
        "device_name": device.device().name,
        "variant": variant,
        "reason": reason,
    });
    Ok((named, record))
}

/// The keyword arguments of a call, each read as an array or a scalar ([`argument`]), in the order given.
fn read_arguments<'py>(kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<Vec<(String, Argument<'py>)>> {
    let mut arguments = Vec::new();
    if let Some(kwargs) = kwargs {
        for (key, value) in kwargs.iter() {
            let name: String = key.extract()?;
            let parsed = argument(&name, &value)?;
            arguments.push((name, parsed));
        }
    }
    Ok(arguments)
}

/// Named arrays and scalars, as the facade takes them: the arrays borrowed from NumPy in place.
type ArraysAndScalars<'a> = (Vec<(&'a str, &'a [f32])>, Vec<(&'a str, f32)>);

/// `arguments` split into arrays and scalars by name.
fn by_kind<'a>(arguments: &'a [(String, Argument<'_>)]) -> PyResult<ArraysAndScalars<'a>> {
    let mut arrays = Vec::new();
    let mut scalars = Vec::new();
    for (name, argument) in arguments {
        match argument {
            Argument::Array(array) => {
                let slice = array.as_slice().map_err(|e| PyValueError::new_err(e.to_string()))?;
                arrays.push((name.as_str(), slice));
            }
            Argument::Scalar(v) => scalars.push((name.as_str(), *v)),
        }
    }
    Ok((arrays, scalars))
}

impl Expr {
    /// The expression with its scalars' values and its inputs' ranges, as the command line's `--set` and `--range`
    /// give them.
    fn request(&self, sets: &[String], ranges: &[String], storage: &str) -> gpuworthy::core::Result<ExpressionRequest> {
        Ok(ExpressionRequest::from_command_line(&self.source, sets, ranges)?.in_dtype(storage.parse()?))
    }
}

#[pymethods]
impl Expr {
    /// Parses `source`; a language error is a `ValueError` whose message points at the text with a caret.
    #[new]
    fn new(source: &str) -> PyResult<Self> {
        let parsed = ParsedExpr::parse(source).map_err(|e| PyValueError::new_err(e.into_error(source).to_string()))?;
        Ok(Expr { source: source.to_owned(), parsed, prepared: Mutex::new(Vec::new()) })
    }

    /// The expression's text.
    #[getter]
    fn source(&self) -> &str {
        &self.source
    }

    /// Runs the expression on `device` (`auto`, `cpu`, `cuda`, `wgpu`, ...) with these keyword arguments, arrays and
    /// scalars by name. Returns the outputs by name (arrays, or the reduction's value) and a JSON record of where it
    /// ran and why.
    #[pyo3(signature = (device="auto", **kwargs))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        device: &str,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<(Bound<'py, PyDict>, String)> {
        let arguments = read_arguments(kwargs)?;
        let (arrays, scalars) = by_kind(&arguments)?;
        let chosen = device_named(device)?;
        // The work runs without the GIL: other Python threads go on, and the arrays stay borrowed (read-only) until
        // it ends.
        let outcome = py.detach(|| -> gpuworthy::core::Result<_> {
            // The NumPy arrays are lent to the backend for the call, not copied.
            gpuworthy::user_code::expression::with_input(&self.parsed, &arrays, &scalars, |input| run_on(chosen, input))
        });
        let (named, record) = outcome.map_err(to_python)?;
        Ok((outputs_dict(py, named)?, record.to_string()))
    }

    /// Runs the expression on `device` with arrays of 16-bit elements of `dtype` (`"f16"` or `"bf16"`), each given
    /// as a one-dimensional C-contiguous `uint16` array of its bits (the Python side views NumPy's `float16` and
    /// torch's `bfloat16` so), and scalars by name. The arrays are read in place; the array outputs come back as
    /// `uint16` arrays of the same type's bits. Returns the outputs by name and the JSON record, as `call`.
    #[pyo3(signature = (device, dtype, arrays, scalars))]
    fn call_stored<'py>(
        &self,
        py: Python<'py>,
        device: &str,
        dtype: &str,
        arrays: &Bound<'py, PyDict>,
        scalars: &Bound<'py, PyDict>,
    ) -> PyResult<(Bound<'py, PyDict>, String)> {
        let storage: Dtype = dtype.parse().map_err(to_python)?;
        let mut held = Vec::with_capacity(arrays.len());
        for (key, value) in arrays.iter() {
            let name: String = key.extract()?;
            let typed = value.cast::<PyArray1<u16>>().map_err(|_| {
                PyTypeError::new_err(format!("`{name}` must be a one-dimensional uint16 array of {storage} bits"))
            })?;
            held.push((name, typed.try_readonly().map_err(|e| PyValueError::new_err(e.to_string()))?));
        }
        let mut bits = Vec::with_capacity(held.len());
        for (name, array) in &held {
            let slice = array.as_slice().map_err(|_| {
                PyValueError::new_err(format!("`{name}` is not contiguous in memory: pass a contiguous copy"))
            })?;
            bits.push((name.as_str(), slice));
        }
        let mut numbers = Vec::with_capacity(scalars.len());
        for (key, value) in scalars.iter() {
            numbers.push((key.extract::<String>()?, value.extract::<f64>()? as f32));
        }
        let numbers: Vec<(&str, f32)> = numbers.iter().map(|(name, v)| (name.as_str(), *v)).collect();
        let chosen = device_named(device)?;
        let outcome = py.detach(|| -> gpuworthy::core::Result<_> {
            gpuworthy::user_code::expression::with_stored_input(&self.parsed, storage, &bits, &numbers, |input| {
                run_on(chosen, input)
            })
        });
        let (named, record) = outcome.map_err(to_python)?;
        Ok((outputs_dict(py, named)?, record.to_string()))
    }

    /// Measures the expression at `size` elements (`"2^24"`, `"16M"`) with its scalars (`sets`: `"a=2"`) and input
    /// ranges (`ranges`: `"x=0:1"`) on `backend` (or where auto places it), phase by phase and checked against the
    /// reference, as the command line's `run --expr`: JSON, a list of records, one per variant (`variant="all"`). The
    /// arrays are stored as `storage` (`f32`, `f16`, `bf16`: the command line's `--dtype`).
    #[pyo3(signature = (size, sets, ranges, backend="auto", variant=None, quick=false, seed=1, storage="f32"))]
    #[allow(clippy::too_many_arguments)]
    fn measure(
        &self,
        py: Python<'_>,
        size: &str,
        sets: Vec<String>,
        ranges: Vec<String>,
        backend: &str,
        variant: Option<&str>,
        quick: bool,
        seed: u64,
        storage: &str,
    ) -> PyResult<String> {
        use gpuworthy::core::Workload;
        use gpuworthy::core::expr::Expression;
        let chosen = device_named(backend)?;
        let options =
            MeasureOptions { seed, ..if quick { MeasureOptions::quick() } else { MeasureOptions::default() } };
        let records = py.detach(|| -> gpuworthy::core::Result<Vec<Value>> {
            let params = self.request(&sets, &ranges, storage)?.params(gpuworthy::measure::size::parse_count(size)?)?;
            let (device, reason) = match chosen {
                Some(device) => (device, None),
                None => {
                    let choice =
                        gpuworthy::choose::auto::global()?.decide::<Expression>(&params, Placement::Host, None)?;
                    (choice.device, Some(choice.reason))
                }
            };
            device.check_size::<Expression>(&params)?;
            let variants = match variant {
                Some("all") => device.variants::<Expression>(),
                Some(v) => vec![v],
                None => vec![device.best_variant::<Expression>(&params)],
            };
            let input = Expression::generate(&params, seed)?;
            variants
                .iter()
                .map(|v| {
                    Ok(measurement(&device, &device.measure::<Expression>(v, &input, &options)?, reason.as_deref()))
                })
                .collect()
        });
        Ok(Value::Array(records.map_err(to_python)?).to_string())
    }

    /// Auto's choice for the expression at `size` elements and why (beside a reference machine's GPUs with `on`,
    /// changed by the what-ifs), as the command line's `explain --expr`: JSON, a record; arrays stored as `storage`.
    #[pyo3(signature = (size, sets, ranges, placement="host", on=None, gpu_memory_gb_per_s=None, gpu_compute=None, link_gb_per_s=None, unified=false, storage="f32"))]
    #[allow(clippy::too_many_arguments)]
    fn explain(
        &self,
        py: Python<'_>,
        size: &str,
        sets: Vec<String>,
        ranges: Vec<String>,
        placement: &str,
        on: Option<&str>,
        gpu_memory_gb_per_s: Option<f64>,
        gpu_compute: Option<f64>,
        link_gb_per_s: Option<f64>,
        unified: bool,
        storage: &str,
    ) -> PyResult<String> {
        use gpuworthy::core::expr::Expression;
        let placement = placement_named(placement)?;
        let on = reference_machine(on, (gpu_memory_gb_per_s, gpu_compute, link_gb_per_s, unified))?;
        let record = py.detach(|| -> gpuworthy::core::Result<Value> {
            let params = self.request(&sets, &ranges, storage)?.params(gpuworthy::measure::size::parse_count(size)?)?;
            explain_record::<Expression>(&params, placement, &on, |cpu| {
                gpuworthy::user_code::expression::calibrate_expressions(std::slice::from_ref(cpu), &())
            })
        });
        Ok(record.map_err(to_python)?.to_string())
    }

    /// Sweeps the expression over sizes on devices, as the command line's `sweep --expr`: JSON, a record of rows,
    /// notes, crossovers and verdict; arrays stored as `storage`.
    #[pyo3(signature = (sets, ranges, sizes=None, backends=None, quick=true, budget_s=4.0, progress=None, storage="f32"))]
    #[allow(clippy::too_many_arguments)]
    fn sweep(
        &self,
        py: Python<'_>,
        sets: Vec<String>,
        ranges: Vec<String>,
        sizes: Option<Vec<String>>,
        backends: Option<Vec<String>>,
        quick: bool,
        budget_s: f64,
        progress: Option<Py<PyAny>>,
        storage: &str,
    ) -> PyResult<String> {
        let request = self.request(&sets, &ranges, storage).map_err(to_python)?;
        sweep_with(py, sizes, backends, (quick, budget_s), progress, |sweep| {
            sweep(&gpuworthy::user_code::expression::expression_entry(&request)?)
        })
    }

    /// What a call on device arrays must allocate, for the scalars named: each output's name, and the input it
    /// overwrites (`None` for an output of its own); for a reduction, its name alone, with `True`.
    fn plan(&self, scalars: Vec<String>) -> PyResult<(Vec<OutputPlan>, bool)> {
        let names: Vec<&str> = scalars.iter().map(String::as_str).collect();
        let program = self.parsed.bind(&names).map_err(|e| PyValueError::new_err(e.to_string()))?;
        if let Some(reduction) = &program.reduction {
            return Ok((vec![(reduction.name.clone(), None)], true));
        }
        let outputs = program
            .outputs
            .iter()
            .map(|o| (o.name.clone(), program.overwrites(o).map(|k| program.inputs[k].clone())))
            .collect();
        Ok((outputs, false))
    }

    /// The fast path of later calls like one that just ran on device arrays: `arguments` as given (name, and whether
    /// it was an array), the arrays of type `array_type` from `library` (`cupy` or `torch`) on CUDA device `ordinal`;
    /// outputs allocated by `empty(n, **empty_kwargs)`; the stream read as `stream_attribute` of `current_stream()`;
    /// `current_device()` (or `None` on a machine with one GPU) must name `ordinal` for the outputs to land there.
    /// The arrays are stored as `storage` (`"f32"`, `"f16"` or `"bf16"`), the type `empty_kwargs["dtype"]` names.
    #[pyo3(signature = (ordinal, arguments, array_type, library, empty, empty_kwargs, current_stream, stream_attribute, current_device, storage="f32"))]
    #[allow(clippy::too_many_arguments)]
    fn launcher(
        &self,
        py: Python<'_>,
        ordinal: usize,
        arguments: Vec<(Py<PyString>, bool)>,
        array_type: Py<PyType>,
        library: &str,
        empty: Py<PyAny>,
        empty_kwargs: Py<PyDict>,
        current_stream: Py<PyAny>,
        stream_attribute: Py<PyString>,
        current_device: Option<Py<PyAny>>,
        storage: &str,
    ) -> PyResult<Launcher> {
        let dtype: Dtype = storage.parse().map_err(to_python)?;
        let element_type = match dtype {
            Dtype::F32 => None,
            _ => Some(
                empty_kwargs
                    .bind(py)
                    .get_item("dtype")?
                    .ok_or_else(|| PyValueError::new_err("a launcher of 16-bit arrays needs empty_kwargs['dtype']"))?
                    .unbind(),
            ),
        };
        let Some(backend) = cuda_device(ordinal)? else {
            return Err(Unavailable::new_err(format!("cuda:{ordinal} is not a CUDA device here")));
        };
        let library = match library {
            "cupy" => ArrayLibrary::Cupy,
            "torch" => ArrayLibrary::Torch,
            other => return Err(PyTypeError::new_err(format!("arrays of {other} on a GPU are not supported"))),
        };
        let mut scalar_names = Vec::new();
        for (name, is_array) in &arguments {
            if !is_array {
                scalar_names.push(name.bind(py).extract::<String>()?);
            }
        }
        let prepared = self.prepared_for(py, &backend, ordinal, scalar_names, dtype)?;
        let program = prepared.program();
        let mut slots = Vec::with_capacity(arguments.len());
        for (name, is_array) in arguments {
            let text = name.bind(py).extract::<String>()?;
            let list = if is_array { &program.inputs } else { &program.scalars };
            let Some(index) = list.iter().position(|n| *n == text) else {
                return Err(PyValueError::new_err(format!("the expression takes no argument named `{text}`")));
            };
            slots.push((name, if is_array { Slot::Input(index) } else { Slot::Scalar(index) }));
        }
        let mut outputs = Vec::new();
        if program.reduction.is_none() {
            for output in &program.outputs {
                let source = match program.overwrites(output) {
                    Some(input) => OutputSource::Overwrites(input),
                    None => OutputSource::Own,
                };
                outputs.push((PyString::new(py, &output.name).unbind(), source));
            }
        }
        Ok(Launcher {
            backend,
            prepared,
            ordinal: ordinal as i64,
            slots,
            array_type,
            library,
            empty,
            empty_kwargs,
            current_stream,
            stream_attribute,
            current_device,
            outputs,
            dtype,
            element_type,
        })
    }

    /// Runs the expression on arrays already in CUDA device `ordinal`'s memory (another library's: their pointers
    /// and length, every array stored as `storage`: `"f32"`, `"f16"` or `"bf16"`), writing `outputs` (one pointer
    /// per output of its own, in the program's order, stored alike), ordered after and before the work of the raw
    /// CUDA `stream` the arrays' owner uses. Returns a reduction's value, else `None`.
    #[pyo3(signature = (ordinal, inputs, outputs, scalars, stream, storage="f32"))]
    #[allow(clippy::too_many_arguments)]
    fn call_on_device(
        &self,
        py: Python<'_>,
        ordinal: usize,
        inputs: Vec<(String, u64, usize)>,
        outputs: Vec<u64>,
        scalars: Vec<(String, f64)>,
        stream: u64,
        storage: &str,
    ) -> PyResult<Option<f32>> {
        let dtype: Dtype = storage.parse().map_err(to_python)?;
        let Some(backend) = cuda_device(ordinal)? else {
            return Err(Unavailable::new_err(format!("cuda:{ordinal} is not a CUDA device here")));
        };
        let names: Vec<String> = scalars.iter().map(|(n, _)| n.clone()).collect();
        let prepared = self.prepared_for(py, &backend, ordinal, names, dtype)?;
        let program = prepared.program();
        let values: Vec<f32> = program
            .scalars
            .iter()
            .map(|name| scalars.iter().find(|(n, _)| n == name).map(|(_, v)| *v as f32))
            .collect::<Option<_>>()
            .ok_or_else(|| PyValueError::new_err("a scalar of the expression has no value"))?;
        let mut pointers = Vec::with_capacity(program.inputs.len());
        let mut n = None;
        for name in &program.inputs {
            let Some((_, pointer, len)) = inputs.iter().find(|(given, _, _)| given == name) else {
                return Err(PyValueError::new_err(format!(
                    "the expression reads the array `{name}`, which was not given (a scalar needs a value instead)"
                )));
            };
            match n {
                Some(first) if first != *len => {
                    return Err(PyValueError::new_err(format!(
                        "the input arrays differ in length: {first} and `{name}` with {len}"
                    )));
                }
                _ => n = Some(*len),
            }
            pointers.push(*pointer);
        }
        if let Some((name, _, _)) = inputs.iter().find(|(given, _, _)| !program.inputs.contains(given)) {
            return Err(PyValueError::new_err(format!(
                "`{name}` is given as an array, but the expression reads no array of that name (it reads {})",
                program.inputs.join(", ")
            )));
        }
        let n = n.unwrap_or(0);
        let result = py.detach(|| {
            // SAFETY: the pointers come from the arrays' own `__cuda_array_interface__` (or torch's `data_ptr`) on
            // this device, each of `n` elements stored as `storage` (the Python side checked dtype, shape and
            // strides), the outputs freshly allocated by the same
            // library; the arrays stay referenced by the caller until the call returns and the work is ordered on
            // their owner's stream, which the caller passed.
            unsafe { backend.run_expression_on_foreign_memory(&prepared, &pointers, &outputs, &values, n, stream) }
        });
        result.map_err(to_python)
    }
}

/// The library that owns the arrays of a call on device memory: it allocates the outputs and names the stream.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ArrayLibrary {
    Cupy,
    Torch,
}

/// Where a keyword argument of a [`Launcher`]'s calls goes: the program's input or scalar of that index.
enum Slot {
    Input(usize),
    Scalar(usize),
}

/// Where an output of a [`Launcher`]'s calls is written: a new array, or the input of that index it overwrites.
enum OutputSource {
    Own,
    Overwrites(usize),
}

/// One expression's calls on device arrays made cheap: everything the first call found out (the device, the compiled
/// kernel, which argument is which, how the arrays' library allocates and names its stream) kept, so that a later
/// call of the same shape only reads its arrays' pointers and launches. A call of any other shape (other names or
/// types, another GPU, an empty array) is not taken (`None`): the general path then runs it, or explains why not.
#[pyclass(module = "gpuworthy._gpuworthy", name = "_Launcher", frozen)]
struct Launcher {
    backend: Device,
    prepared: PreparedExpression,
    ordinal: i64,
    /// The keyword arguments, in the order the first call gave them.
    slots: Vec<(Py<PyString>, Slot)>,
    array_type: Py<PyType>,
    library: ArrayLibrary,
    empty: Py<PyAny>,
    empty_kwargs: Py<PyDict>,
    current_stream: Py<PyAny>,
    stream_attribute: Py<PyString>,
    current_device: Option<Py<PyAny>>,
    /// The outputs by name, in the program's order; empty for a reduction.
    outputs: Vec<(Py<PyString>, OutputSource)>,
    /// How the arrays are stored.
    dtype: Dtype,
    /// For 16-bit arrays, the library's dtype object they must have (`torch.bfloat16`, `cupy.float16`).
    element_type: Option<Py<PyAny>>,
}

impl Launcher {
    /// The device pointer and length of `array`, when it is a one-dimensional, contiguous array of this launcher's
    /// storage type on its GPU whose start is aligned as the kernels' 16-byte accesses need; `None` otherwise (the
    /// general path then converts it, or says what is wrong).
    fn device_array(&self, array: &Bound<'_, PyAny>) -> PyResult<Option<(u64, usize)>> {
        let py = array.py();
        let (ordinal, found): (i64, Option<(u64, usize)>) = match (self.library, &self.element_type) {
            (ArrayLibrary::Cupy, _) => {
                let ordinal = array.getattr(intern!(py, "device"))?.getattr(intern!(py, "id"))?.extract()?;
                (ordinal, Self::cupy_array(array, self.dtype)?)
            }
            (ArrayLibrary::Torch, None) => {
                let ordinal = array.call_method0(intern!(py, "get_device"))?.extract()?;
                (ordinal, Self::interface_array(array)?)
            }
            (ArrayLibrary::Torch, Some(element_type)) => {
                let ordinal = array.call_method0(intern!(py, "get_device"))?.extract()?;
                (ordinal, Self::torch_array(array, element_type.bind(py))?)
            }
        };
        if ordinal != self.ordinal {
            return Ok(None);
        }
        Ok(found.filter(|(pointer, _)| pointer % 16 == 0))
    }

    /// A CuPy array's pointer and length, read from its attributes one by one: CuPy builds its
    /// `__cuda_array_interface__` dictionary anew on every access (0.54 µs of a 9 µs call on an H200), and the few
    /// attributes a launch needs cost less.
    fn cupy_array(array: &Bound<'_, PyAny>, dtype: Dtype) -> PyResult<Option<(u64, usize)>> {
        let py = array.py();
        // CuPy's dtypes are NumPy's, in the machine's byte order: `f` is float32, `e` float16 (CuPy has no bf16).
        let (char, element_bytes) = match dtype {
            Dtype::F32 => (intern!(py, "f"), 4),
            Dtype::F16 => (intern!(py, "e"), 2),
            Dtype::Bf16 => return Ok(None),
        };
        if !array.getattr(intern!(py, "dtype"))?.getattr(intern!(py, "char"))?.eq(char)? {
            return Ok(None);
        }
        let Ok((n,)) = array.getattr(intern!(py, "shape"))?.extract::<(usize,)>() else { return Ok(None) };
        if n > 1 && array.getattr(intern!(py, "strides"))?.extract::<(isize,)>().ok() != Some((element_bytes,)) {
            return Ok(None);
        }
        // A view's `data.ptr` includes its offset into the allocation.
        let pointer = array.getattr(intern!(py, "data"))?.getattr(intern!(py, "ptr"))?.extract()?;
        Ok(Some((pointer, n)))
    }

    /// An array's pointer and length from its `__cuda_array_interface__`, when it describes a one-dimensional,
    /// contiguous float32 array.
    fn interface_array(array: &Bound<'_, PyAny>) -> PyResult<Option<(u64, usize)>> {
        let py = array.py();
        // torch raises for dtypes the interface cannot describe (bf16): such an array takes the general path.
        let Ok(interface) = array.getattr(intern!(py, "__cuda_array_interface__")) else { return Ok(None) };
        let Ok(interface) = interface.cast::<PyDict>() else { return Ok(None) };
        let Some(typestr) = interface.get_item(intern!(py, "typestr"))? else { return Ok(None) };
        if !typestr.eq(intern!(py, "<f4"))? {
            return Ok(None);
        }
        let Some(shape) = interface.get_item(intern!(py, "shape"))? else { return Ok(None) };
        let Ok((n,)) = shape.extract::<(usize,)>() else { return Ok(None) };
        if let Some(strides) = interface.get_item(intern!(py, "strides"))?
            && !strides.is_none()
            && strides.extract::<(usize,)>().ok() != Some((4,))
        {
            return Ok(None);
        }
        let Some(data) = interface.get_item(intern!(py, "data"))? else { return Ok(None) };
        let Ok((pointer, _read_only)) = data.extract::<(u64, bool)>() else { return Ok(None) };
        Ok(Some((pointer, n)))
    }

    /// A torch tensor's pointer and length, when it is one-dimensional, contiguous and of `element_type` (torch's
    /// `bfloat16` or `float16`: its `__cuda_array_interface__` cannot describe bfloat16, so the tensor's own
    /// accessors are read).
    fn torch_array(array: &Bound<'_, PyAny>, element_type: &Bound<'_, PyAny>) -> PyResult<Option<(u64, usize)>> {
        let py = array.py();
        if !array.getattr(intern!(py, "dtype"))?.is(element_type)
            || array.call_method0(intern!(py, "dim"))?.extract::<usize>()? != 1
            || !array.call_method0(intern!(py, "is_contiguous"))?.is_truthy()?
        {
            return Ok(None);
        }
        let pointer = array.call_method0(intern!(py, "data_ptr"))?.extract()?;
        let n = array.call_method0(intern!(py, "numel"))?.extract()?;
        Ok(Some((pointer, n)))
    }

    /// The device pointer of an array this launcher's library just allocated.
    fn pointer_of(&self, array: &Bound<'_, PyAny>) -> PyResult<u64> {
        let py = array.py();
        match self.library {
            ArrayLibrary::Cupy => array.getattr(intern!(py, "data"))?.getattr(intern!(py, "ptr"))?.extract(),
            ArrayLibrary::Torch => array.call_method0(intern!(py, "data_ptr"))?.extract(),
        }
    }
}

#[pymethods]
impl Launcher {
    /// Runs a call whose keyword arguments are `arguments`, if it has the shape this launcher was made for: the
    /// result as the general path returns it (the output, a dict of outputs, or the reduction's value); `None` when
    /// the call is not of that shape.
    fn __call__<'py>(&self, py: Python<'py>, arguments: &Bound<'py, PyDict>) -> PyResult<Option<Bound<'py, PyAny>>> {
        if arguments.len() != self.slots.len() {
            return Ok(None);
        }
        let program = self.prepared.program();
        let mut inputs: Vec<Option<Bound<'py, PyAny>>> = vec![None; program.inputs.len()];
        let mut pointers = vec![0u64; program.inputs.len()];
        let mut scalars = vec![0f32; program.scalars.len()];
        let mut n = None;
        for ((key, value), (name, slot)) in arguments.iter().zip(&self.slots) {
            if !key.is(name) && !key.eq(name)? {
                return Ok(None);
            }
            match *slot {
                Slot::Input(index) => {
                    if !value.get_type().is(&self.array_type) {
                        return Ok(None);
                    }
                    let Some((pointer, len)) = self.device_array(&value)? else { return Ok(None) };
                    if len == 0 || n.is_some_and(|first| first != len) {
                        return Ok(None);
                    }
                    n = Some(len);
                    pointers[index] = pointer;
                    inputs[index] = Some(value);
                }
                Slot::Scalar(index) => {
                    if !(value.is_instance_of::<PyFloat>() || value.is_instance_of::<PyInt>()) {
                        return Ok(None);
                    }
                    scalars[index] = value.extract::<f64>()? as f32;
                }
            }
        }
        let Some(n) = n else { return Ok(None) };
        if let Some(current_device) = &self.current_device {
            let current: i64 = current_device.call0(py)?.extract(py)?;
            if current != self.ordinal {
                return Ok(None);
            }
        }
        let mut results = Vec::with_capacity(self.outputs.len());
        let mut own = Vec::with_capacity(self.outputs.len());
        for (name, source) in &self.outputs {
            let array = match *source {
                OutputSource::Overwrites(input) => {
                    let Some(array) = inputs[input].clone() else { return Ok(None) };
                    array
                }
                OutputSource::Own => {
                    let array = self.empty.call(py, (n,), Some(self.empty_kwargs.bind(py)))?.into_bound(py);
                    own.push(self.pointer_of(&array)?);
                    array
                }
            };
            results.push((name, array));
        }
        let stream: u64 = self.current_stream.call0(py)?.getattr(py, self.stream_attribute.bind(py))?.extract(py)?;
        let (backend, prepared) = (&self.backend, &self.prepared);
        let value = py
            .detach(|| {
                // SAFETY: every pointer was read from the array's own `__cuda_array_interface__` or attributes (or, for
                // an output, from the array its library just allocated in the launcher's storage type) on this
                // launcher's device, each of `n` elements of that type, contiguous (checked above); the arrays stay referenced here until the call returns, and the work is ordered on
                // the stream their library uses now.
                unsafe { backend.run_expression_on_foreign_memory(prepared, &pointers, &own, &scalars, n, stream) }
            })
            .map_err(to_python)?;
        if let Some(value) = value {
            return Ok(Some(PyFloat::new(py, f64::from(value)).into_any()));
        }
        if results.len() == 1 {
            return Ok(results.pop().map(|(_, array)| array));
        }
        let dict = PyDict::new(py);
        for (name, array) in results {
            dict.set_item(name, array)?;
        }
        Ok(Some(dict.into_any()))
    }
}

impl Expr {
    /// The expression compiled for CUDA device `ordinal` with these scalar names, for arrays stored as `dtype`: from
    /// this object's cache, or compiled (without the GIL) and kept.
    fn prepared_for(
        &self,
        py: Python<'_>,
        backend: &Device,
        ordinal: usize,
        names: Vec<String>,
        dtype: Dtype,
    ) -> PyResult<PreparedExpression> {
        let mut cache = self.prepared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(kept) = cache.iter().find(|p| p.ordinal == ordinal && p.scalars == names && p.dtype == dtype) {
            return Ok(kept.prepared.clone());
        }
        let borrowed: Vec<&str> = names.iter().map(String::as_str).collect();
        let program = self.parsed.bind(&borrowed).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let prepared = py.detach(|| backend.prepare_expression(Arc::new(program), dtype)).map_err(to_python)?;
        cache.push(PreparedFor { ordinal, scalars: names, dtype, prepared: prepared.clone() });
        Ok(prepared)
    }
}

/// A kernel written by hand per backend (CUDA C, WGSL), with its signature and a reference expression: the
/// `load_inline` and `cupy.RawKernel` of gpuworthy ([`gpuworthy::core::raw`] has the calling conventions).
#[pyclass(module = "gpuworthy._gpuworthy", name = "_RawKernel", frozen)]
struct RawKernel {
    kernel: std::sync::Arc<gpuworthy::core::raw::RawKernel>,
}

#[pymethods]
impl RawKernel {
    /// The kernel named `name` with these input, output and scalar names, and its bodies: `cuda` as (source, entry
    /// point, (block x, block y)), `wgsl` as (source, entry point); `reference` an expression every output is checked
    /// against in the test suite.
    #[new]
    #[pyo3(signature = (name, inputs, outputs, scalars=Vec::new(), cuda=None, wgsl=None, reference=None))]
    fn new(
        name: &str,
        inputs: Vec<String>,
        outputs: Vec<String>,
        scalars: Vec<String>,
        cuda: Option<(String, String, (u32, u32))>,
        wgsl: Option<(String, String)>,
        reference: Option<String>,
    ) -> PyResult<Self> {
        fn names(list: &[String]) -> Vec<&str> {
            list.iter().map(String::as_str).collect()
        }
        let mut kernel =
            gpuworthy::core::raw::RawKernel::new(name, &names(&inputs), &names(&outputs), &names(&scalars))
                .map_err(to_python)?;
        if let Some((source, entry, block)) = cuda {
            kernel = kernel.cuda(&source, &entry, block).map_err(to_python)?;
        }
        if let Some((source, entry)) = wgsl {
            kernel = kernel.wgsl(&source, &entry).map_err(to_python)?;
        }
        if let Some(source) = reference {
            kernel = kernel.reference(&source).map_err(to_python)?;
        }
        Ok(RawKernel { kernel: Arc::new(kernel) })
    }

    /// Runs the kernel over `shape` (`(height, width)` for a grid, `None` for a line as long as the inputs) on
    /// `device` with NumPy arrays and numbers by name: the outputs by name (arrays of the shape's length) and a JSON
    /// record of where it ran and why.
    #[pyo3(signature = (device="auto", shape=None, **kwargs))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        device: &str,
        shape: Option<(usize, usize)>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<(Bound<'py, PyDict>, String)> {
        let arguments = read_arguments(kwargs)?;
        let (arrays, scalars) = by_kind(&arguments)?;
        let shape = match shape {
            Some((height, width)) => gpuworthy::core::raw::Shape::Grid { width, height },
            None => gpuworthy::core::raw::Shape::Line(arrays.first().map_or(0, |(_, a)| a.len())),
        };
        let chosen = device_named(device)?;
        let kernel = &self.kernel;
        let outcome = py.detach(|| -> gpuworthy::core::Result<_> {
            match chosen {
                Some(device) => {
                    let outputs = device.run_raw(kernel, shape, &arrays, &scalars)?;
                    Ok((outputs, device.label().to_string(), device.device().name.clone(), "asked for".to_owned()))
                }
                None => {
                    let (outputs, choice) = gpuworthy::user_code::raw::run_raw_auto(kernel, shape, &arrays, &scalars)?;
                    let name = choice.device.device().name.clone();
                    Ok((outputs, choice.device.label().to_string(), name, choice.reason))
                }
            }
        });
        let (named, label, name, reason) = outcome.map_err(to_python)?;
        let outputs = PyDict::new(py);
        for (output, value) in named.outputs {
            if let ExprValue::Array(values) = value {
                outputs.set_item(output, PyArray1::from_vec(py, values))?;
            }
        }
        let record = json!({ "device": label, "device_name": name, "variant": "raw", "reason": reason });
        Ok((outputs, record.to_string()))
    }

    /// Measures the kernel over `size` (`"2^20"` for a line, `"512x512"` for a grid) on `device` (or where auto
    /// places it) with generated inputs and these scalars by name, phase by phase and checked against its reference,
    /// as [`run`] measures a built-in workload: JSON, a list of one record.
    #[pyo3(signature = (size, device="auto", quick=false, seed=1, scalars=Vec::new()))]
    fn measure(
        &self,
        py: Python<'_>,
        size: &str,
        device: &str,
        quick: bool,
        seed: u64,
        scalars: Vec<(String, f32)>,
    ) -> PyResult<String> {
        use gpuworthy::core::Workload;
        use gpuworthy::core::raw::{Raw, RawParams, Shape};
        let chosen = device_named(device)?;
        let options =
            MeasureOptions { seed, ..if quick { MeasureOptions::quick() } else { MeasureOptions::default() } };
        let kernel = &self.kernel;
        let record = py.detach(|| -> gpuworthy::core::Result<Value> {
            let shape = Shape::parse(size)?;
            let named: Vec<(&str, f32)> = scalars.iter().map(|(n, v)| (n.as_str(), *v)).collect();
            let values = gpuworthy::user_code::raw::raw_scalars(kernel, &named)?;
            let params = RawParams::new(Arc::clone(kernel), shape, values)?;
            let (device, reason) = match chosen {
                Some(device) => (device, None),
                None => {
                    let choice = gpuworthy::choose::auto::global()?.decide::<Raw>(&params, Placement::Host, None)?;
                    (choice.device, Some(choice.reason))
                }
            };
            device.check_size::<Raw>(&params)?;
            let input = Raw::generate(&params, seed)?;
            let variant = device.best_variant::<Raw>(&params);
            let mut record =
                measurement(&device, &device.measure::<Raw>(variant, &input, &options)?, reason.as_deref());
            // The kernel's own name, where the record would say `raw`.
            record["workload"] = json!(kernel.name());
            Ok(record)
        });
        Ok(Value::Array(vec![record.map_err(to_python)?]).to_string())
    }
}

/// The `gpuworthy` command line, run in this process with `argv` (the program's name first): the tool of the
/// workspace's `bench-suite`, the same one `cargo install` gives, for Python users who have no cargo. Returns its exit
/// status. The GIL is released while it runs.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| bench_suite::tool::exit_status(argv.into_iter().map(std::ffi::OsString::from)))
}

/// The extension module.
#[pymodule]
fn _gpuworthy(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Unavailable", m.py().get_type::<Unavailable>())?;
    m.add_class::<Expr>()?;
    m.add_class::<RawKernel>()?;
    m.add_class::<Launcher>()?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_group, m)?)?;
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
