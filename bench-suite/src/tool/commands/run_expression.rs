//! `gpuworthy run --expr`: a user's expression checked against its bounded reference and measured phase by phase, on
//! one device, where auto puts it, or on every device this machine has, in the table of `gpuworthy run`.
//!
//! A module of its own beside [`super::run`] because an expression is one workload type whose program is data: it
//! needs no visitor over the run-time list, takes none of the built-in workloads' options, and with no `--backend`
//! runs on every device at once, a table each.

use crate::cli::{RunArgs, Target};
use crate::report;
use gpuworthy::core::Backend;
use gpuworthy::measure::{MeasureOptions, Measurement};
use gpuworthy::model::Placement;
use gpuworthy::user_code::expression::ExpressionRequest;
use gpuworthy::{Device, DeviceSpec, HostMemory};

use gpuworthy::device::group::DeviceGroup;

use super::run::{host_memory, print_clocks};
use super::run_group::run_input_on_group;
use crate::tool::exit::{Exit, usage};
use crate::tool::shared::{chosen_label, pipelined_note, warn_about_domain};
use gpuworthy::choose::group_run::HostArrays;

/// `gpuworthy run --expr SOURCE`: refuses the flags that do not apply to an expression, reads the expression's
/// scalars and ranges, and runs it ([`run_expression`]).
pub(crate) fn run_expression_command(source: &str, args: &RunArgs, options: &MeasureOptions) -> anyhow::Result<()> {
    let memory = match host_memory(args.pinned, args.pipelined) {
        HostMemory::Pageable => None,
        memory => Some(memory),
    };
    if memory.is_some() {
        let flag = if args.pipelined { "--pipelined" } else { "--pinned" };
        match &args.backend {
            Some(target) => super::run::host_memory_flag_applies(flag, target)?,
            None => return Err(Exit::usage(format!("{flag} applies to CUDA devices: add --backend cuda"))),
        }
    }
    if matches!(args.backend, Some(Target::Group(_))) && args.variant.is_some() {
        return Err(Exit::usage("--variant names one device's variant; a group's members each run their best"));
    }
    let lessons = &args.lessons;
    if !args.params.options().is_empty() || !lessons.block_size.is_empty() || lessons.launches.is_some() {
        return Err(Exit::usage("workload options, --block-size and --launches do not apply to --expr"));
    }
    if let Some(target) = &args.backend {
        super::run::page_locked_applies(args.page_locked, target)?;
    } else if args.page_locked {
        return Err(Exit::usage("--page-locked applies to a device group's run: add --backend cuda:0,1 (or cpu+cuda)"));
    }
    let arrays = HostArrays { reuse_output: args.reuse_output, page_locked: args.page_locked };
    let how = ExpressionRun { only: args.variant.as_deref(), memory, arrays, no_sync: lessons.no_sync };
    let expression = &args.expression;
    let request = expression.request(source).map_err(usage)?;
    warn_about_domain(&request)?;
    run_expression(&request, args.size.as_deref(), args.backend.clone(), &how, options)
}

/// How `gpuworthy run --expr` measures: one variant or all, how a CUDA device moves data, and whether to show the
/// three clocks.
#[derive(Debug, Clone, Copy)]
struct ExpressionRun<'a> {
    /// The one variant to run; every variant of each device when `None`.
    only: Option<&'a str>,
    /// Pinned or pipelined transfers on a CUDA device; `None` for the default.
    memory: Option<HostMemory>,
    /// How a group's run treats the host's arrays.
    arrays: HostArrays,
    /// Whether to show the three clocks of one launch (`--no-sync`).
    no_sync: bool,
}

/// `gpuworthy run --expr`: a user's expression, checked against its bounded reference and measured phase by phase
/// on `target` (every available device when `None`), in the table of `gpuworthy run`.
fn run_expression(
    request: &ExpressionRequest,
    size: Option<&str>,
    target: Option<Target>,
    how: &ExpressionRun<'_>,
    options: &MeasureOptions,
) -> anyhow::Result<()> {
    let ExpressionRun { only, memory, arrays, no_sync } = *how;
    use gpuworthy::core::Workload;
    use gpuworthy::core::expr::Expression;
    let source = request.source.as_str();
    let n = match size {
        Some(s) => gpuworthy::measure::size::parse_count(s).map_err(usage)?,
        None => 1 << 20,
    };
    let params = request.params(n).map_err(usage)?;
    // The computation as the tables name it: its text, and its arrays' type where they are not f32.
    let what = match params.dtype {
        gpuworthy::core::Dtype::F32 => format!("`{source}` at {n}"),
        dtype => format!("`{source}` on {dtype} arrays at {n}"),
    };
    let program_is_elementwise = params.program.reduction.is_none();
    let devices = match target {
        None => Device::all_available().devices,
        Some(Target::Device(spec @ DeviceSpec::Cuda { .. })) if memory.is_some() => {
            vec![Device::open_with_host_memory(spec, memory.unwrap_or_default())?]
        }
        Some(Target::Device(spec)) => {
            vec![Device::open(spec).map_err(|e| if e.is_unavailable() { e.into() } else { usage(e) })?]
        }
        Some(Target::Group(group)) => {
            let group = DeviceGroup::open_with_host_memory(&group, memory.unwrap_or_default())
                .map_err(|e| if e.is_unavailable() { e.into() } else { usage(e) })?;
            for member in group.members() {
                member.check_size::<Expression>(&params).map_err(usage)?;
            }
            let input = Expression::generate(&params, options.seed).map_err(usage)?;
            return run_input_on_group::<Expression>(&group, &input, &what, arrays, options);
        }
        Some(Target::Auto) => {
            let choice = gpuworthy::choose::auto::global()?.decide::<Expression>(&params, Placement::Host, None)?;
            out!("auto: {} ({})", chosen_label(&choice), choice.reason);
            vec![choice.device]
        }
    };
    for device in &devices {
        device.check_size::<Expression>(&params).map_err(usage)?;
    }
    let input = Expression::generate(&params, options.seed).map_err(usage)?;
    let mut failed = false;
    for device in &devices {
        let variants = match only {
            Some(v) => vec![v],
            None => device.variants::<Expression>(),
        };
        let rows: Vec<Measurement> = variants
            .into_iter()
            .map(|v| {
                device.measure::<Expression>(v, &input, options).map_err(|e| match e {
                    gpuworthy::core::Error::UnknownVariant { .. } => usage(e),
                    other => other.into(),
                })
            })
            .collect::<Result<_, _>>()?;
        failed |= rows.iter().any(|m| matches!(m.check, Some(Err(_))));
        let info = device.device();
        let title = format!("{what} on {} ({}; {})", device.label(), info.name, info.driver);
        out!("{}", report::phase_table(&title, &rows).trim_end());
        out!("  kernel clock: {}", device.kernel_clock());
        if memory == Some(HostMemory::Pipelined) && program_is_elementwise {
            if params.dtype.is_half() {
                out!("  end-to-end phase by phase: the pipelined engine stages f32 arrays, not {} ones", params.dtype);
            } else {
                out!("  {}", pipelined_note());
            }
        }
        if no_sync {
            let clocks = rows
                .iter()
                .map(|m| {
                    device.compare_clocks::<Expression>(&m.variant, &input, options).map(|c| (m.variant.clone(), c))
                })
                .collect::<Result<Vec<_>, _>>()?;
            print_clocks(&clocks, device.is_gpu())?;
        }
    }
    if failed {
        return Err(Exit::check_failed("a result does not match the expression's reference"));
    }
    Ok(())
}
