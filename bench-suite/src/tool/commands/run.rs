//! `gpuworthy run`: one built-in workload at one size on one device (or where auto puts it), every variant, every
//! phase timed and checked against the reference; and the timing lessons (`--no-sync`, `--launches`,
//! `--block-size`).
//!
//! Shaped as ripgrep turns arguments into a request: [`run_workload`] refuses flags that do not go together and
//! opens the devices, then a [`RunRequest`] travels, through the run-time list's visitor, to [`run_on`], the one
//! place that knows the workload's type. An expression of the user's own (`--expr`) takes the same command and
//! table but has a module of its own, [`super::run_expression`], because it needs no visitor and runs on every
//! device at once.

use std::time::Duration;

use crate::cli::{LessonArgs, RunArgs, Target};
use crate::report;
use anyhow::Context;
use gpuworthy::choose::group_run::HostArrays;
use gpuworthy::core::{Backend, Precision};
use gpuworthy::device::dispatch::{CommandLineWorkload, WorkloadVisitor, visit_workload_named};
use gpuworthy::measure::size::{ParseSize, WorkloadOptions};
use gpuworthy::measure::{MeasureOptions, Measurement};
use gpuworthy::model::Placement;
use gpuworthy::{Device, DeviceSpec, HostMemory};

use crate::tool::exit::{Exit, usage};
use crate::tool::shared::{allowed_precisions, chosen_label, describe_allowed, pipelined_note};

/// Bytes per copy when measuring a device's copy bandwidth: large enough to leave every cache behind.
const COPY_PROBE_BYTES: usize = 256 << 20;

/// `gpuworthy run`: one workload at one size on one device (or auto's), every variant, every phase.
pub(crate) fn run_workload(mut args: RunArgs) -> anyhow::Result<()> {
    if let Some(expression) =
        args.expression.for_workloads(&args.workload.as_deref().into_iter().collect::<Vec<_>>()).map_err(usage)?
    {
        println!("{}", sixteen_bit_note(args.workload.as_deref().unwrap_or_default(), &expression));
        args.expression = expression;
        args.workload = None;
    }
    let options = measure_options(&args);
    let rank = gpuworthy::device::rank::Rank::from_env().map_err(usage)?;
    if let Some(source) = &args.expression.source().map_err(usage)? {
        if rank.is_some() {
            return Err(Exit::usage(
                "ranks (GPUWORTHY_RANK) run the built-in workloads; an expression runs in one process",
            ));
        }
        return super::run_expression::run_expression_command(source, &args, &options);
    }
    let RunArgs {
        workload,
        size,
        backend,
        variant,
        precision,
        tolerance,
        pinned,
        pipelined,
        page_locked,
        params,
        lessons,
        ..
    } = args;
    let workload = workload.ok_or_else(|| Exit::usage("name a workload, or give --expr"))?;
    let backend = backend.unwrap_or(Target::Device(DeviceSpec::Cpu));
    check_flags(&workload, &backend, pinned, pipelined, &lessons)?;
    page_locked_applies(page_locked, &backend)?;
    if let Some(rank) = rank {
        let Target::Device(spec) = backend else {
            return Err(Exit::usage("a rank runs on one device: give each rank its own --backend DEVICE"));
        };
        if variant.is_some()
            || !precision.is_empty()
            || tolerance.is_some()
            || pinned
            || pipelined
            || !lessons.block_size.is_empty()
            || lessons.launches.is_some()
        {
            return Err(Exit::usage(
                "a rank runs its device's best variant, pageable: --variant, --precision, --tolerance, --pinned, \
                 --pipelined, --block-size and --launches are for one process's run",
            ));
        }
        return super::run_rank::run_as_rank(rank, &workload, spec, size.as_deref(), &params.options(), options.seed);
    }
    let memory = host_memory(pinned, pipelined);
    if let Target::Group(group) = &backend {
        if variant.is_some() || !precision.is_empty() || tolerance.is_some() {
            return Err(Exit::usage(format!(
                "the group {group} runs each member's best f32 variant: --variant, --precision and --tolerance are \
                 for one device or auto"
            )));
        }
        let arrays = HostArrays { reuse_output: options.reuse_output, page_locked };
        return super::run_group::run_on_group(
            &workload,
            group,
            memory,
            arrays,
            size.as_deref(),
            &params.options(),
            &options,
        );
    }
    let devices = match backend {
        Target::Device(spec) => Ok(open_devices(spec, memory, &lessons.block_size)?),
        Target::Auto | Target::Group(_) => Err(()),
    };
    let transfer_note = pipelined.then(pipelined_note);
    let request = RunRequest {
        transfer_note,
        size: size.as_deref(),
        variant: variant.as_deref(),
        precisions: precision,
        tolerance,
        params: params.options(),
        lessons: &lessons,
        options,
    };
    visit_workload_named(&workload, &mut RunOn { target: devices, request: &request }).map_err(usage)?
}

/// How `run` measures: quick or thorough, validated or not, into the previous output or a fresh one, with or without
/// the spin-up before the first timed run.
fn measure_options(args: &RunArgs) -> MeasureOptions {
    let mut options = if args.quick { MeasureOptions::quick() } else { MeasureOptions::default() };
    options.validate = !args.no_validate;
    options.reuse_output = args.reuse_output;
    if args.lessons.no_spin_up {
        options.spin_up = Duration::ZERO;
    }
    options
}

/// The host memory `--pinned` and `--pipelined` ask for (`--pipelined` wins where both are given).
pub(crate) fn host_memory(pinned: bool, pipelined: bool) -> HostMemory {
    match (pinned, pipelined) {
        (_, true) => HostMemory::Pipelined,
        (true, false) => HostMemory::Pinned,
        (false, false) => HostMemory::Pageable,
    }
}

/// Refuses `--page-locked` off a device group: it locks the arrays a group's members and each member alone share.
pub(crate) fn page_locked_applies(page_locked: bool, target: &Target) -> anyhow::Result<()> {
    if page_locked && !matches!(target, Target::Group(_)) {
        return Err(Exit::usage(
            "--page-locked applies to a device group's run (`--backend cuda:0,1`, `cpu+cuda`), which reports each \
             member alone on the same locked arrays; for one device's transfers, --pinned and --pipelined",
        ));
    }
    Ok(())
}

/// Refuses `--pinned` or `--pipelined` (`flag`) for a target with no CUDA device: a device of another backend,
/// auto, or a group with no CUDA member (a group's CUDA members move their parts through that memory).
pub(crate) fn host_memory_flag_applies(flag: &str, target: &Target) -> anyhow::Result<()> {
    match target {
        Target::Device(DeviceSpec::Cuda { .. }) => Ok(()),
        Target::Device(spec) => Err(Exit::usage(format!("{flag} applies to CUDA devices, not {spec}"))),
        Target::Auto => Err(Exit::usage(format!("{flag} applies to CUDA devices, not auto"))),
        Target::Group(group) => {
            let members = gpuworthy::device::group::DeviceGroup::parse(group).map_err(usage)?;
            if members.iter().any(|m| matches!(m, DeviceSpec::Cuda { .. })) {
                Ok(())
            } else {
                Err(Exit::usage(format!("{flag} applies to CUDA devices, and the group {group} has none")))
            }
        }
    }
}

/// Refuses, before any device is opened, the flags of a built-in workload's run that its target cannot take:
/// `--pinned` and `--pipelined` off CUDA, `--block-size` off the GPUs or on a workload that is not elementwise.
fn check_flags(
    workload: &str,
    backend: &Target,
    pinned: bool,
    pipelined: bool,
    lessons: &LessonArgs,
) -> anyhow::Result<()> {
    let cuda_only = host_memory_flag_applies;
    if pinned {
        cuda_only("--pinned", backend)?;
    }
    if pipelined {
        cuda_only("--pipelined", backend)?;
    }
    if !lessons.block_size.is_empty() {
        match backend {
            Target::Device(DeviceSpec::Cuda { .. } | DeviceSpec::Wgpu { .. }) => {}
            Target::Device(spec) => {
                return Err(Exit::usage(format!("--block-size applies to CUDA and wgpu devices, not {spec}")));
            }
            Target::Auto => return Err(Exit::usage("--block-size applies to CUDA and wgpu devices, not auto")),
            Target::Group(group) => {
                return Err(Exit::usage(format!(
                    "--block-size applies to one CUDA or wgpu device, not the group {group}"
                )));
            }
        }
        if !["square", "saxpy"].contains(&workload) {
            return Err(Exit::usage(format!(
                "--block-size applies to the elementwise workloads (square, saxpy), not {workload}"
            )));
        }
    }
    Ok(())
}

/// The device `spec` names, moving data through `memory`: one per block size asked for (each opened afresh, so that
/// it can be changed, and labelled with it), else one.
fn open_devices(spec: DeviceSpec, memory: HostMemory, block_sizes: &[u32]) -> anyhow::Result<Vec<(String, Device)>> {
    let open = || -> anyhow::Result<Device> {
        match &spec {
            DeviceSpec::Cuda { .. } if memory != HostMemory::Pageable => {
                Ok(Device::open_with_host_memory(spec.clone(), memory)?)
            }
            _ => Device::open(spec.clone()).map_err(|e| if e.is_unavailable() { e.into() } else { usage(e) }),
        }
    };
    if block_sizes.is_empty() {
        return Ok(vec![(String::new(), open()?)]);
    }
    // CUDA's blocks are `b`, wgpu's workgroups `wg`, as each API names them.
    let mark = if matches!(spec, DeviceSpec::Cuda { .. }) { "b" } else { "wg" };
    let mut devices = Vec::new();
    for &threads in block_sizes {
        let device = open()?.with_elementwise_block_size(threads).map_err(usage)?;
        devices.push((format!(" {mark}{threads}"), device));
    }
    Ok(devices)
}

/// What `gpuworthy run` was asked to do.
struct RunRequest<'a> {
    /// A line on how the host data moves, where it is not the default.
    transfer_note: Option<String>,
    /// The size as written (`--size`); the workload's largest quick size when `None`.
    size: Option<&'a str>,
    /// The one variant to run (`--variant`); every variant of the device, or auto's, when `None`.
    variant: Option<&'a str>,
    /// Only the variants in these precisions (`--precision`); every variant when empty.
    precisions: Vec<Precision>,
    /// The relative error accepted (`--tolerance`): only the precisions whose bound at the size is within it.
    tolerance: Option<f64>,
    /// The workload's options beyond its size.
    params: WorkloadOptions,
    /// The timing lessons asked for.
    lessons: &'a LessonArgs,
    /// How each variant is measured.
    options: MeasureOptions,
}

/// [`run_on`] for the workload a visitor is given.
struct RunOn<'a> {
    /// The devices opened, each with the suffix its variants are labelled with; `Err` for auto's choice.
    target: Result<Vec<(String, Device)>, ()>,
    /// What to run and show.
    request: &'a RunRequest<'a>,
}

impl WorkloadVisitor for RunOn<'_> {
    type Output = anyhow::Result<()>;
    fn visit<W: CommandLineWorkload>(&mut self) -> anyhow::Result<()> {
        run_on::<W>(self.target.clone(), self.request)
    }
}

/// Runs `W` as `request` asks on `target` (the devices opened, each with the suffix its variants are labelled with;
/// `Err` for auto's choice, made here for the size asked): the phase table, the kernel clock, the copy peak, and the
/// lessons asked for.
fn run_on<W: CommandLineWorkload>(
    target: Result<Vec<(String, Device)>, ()>,
    request: &RunRequest<'_>,
) -> anyhow::Result<()> {
    let (size, variant, options) = (request.size, request.variant, &request.options);
    let mut params = match size {
        Some(s) => W::Params::parse_size(s).map_err(usage)?,
        None => W::quick_ladder().pop().context("the workload has no default size")?,
    };
    params.apply(&request.params).map_err(usage)?;
    let mut transfer_note = request.transfer_note.clone();
    // A precision's bound depends on the size's cost, which is computed only for a size the machine could hold.
    let allowed = if request.precisions.is_empty() && request.tolerance.is_none() {
        None
    } else {
        gpuworthy::core::memory::check_host_memory::<W>(&params).map_err(usage)?;
        allowed_precisions(&W::cost(&params), &request.precisions, request.tolerance)
    };
    if allowed.as_ref().is_some_and(|a| a.is_empty()) {
        let named: Vec<&str> = request.precisions.iter().map(|p| p.name()).collect();
        return Err(Exit::usage(format!(
            "none of {} is within the tolerance at this size: {}",
            named.join(", "),
            describe_allowed(&W::cost(&params), &request.precisions)
        )));
    }
    let (devices, chosen) = match target {
        Ok(devices) => (devices, None),
        Err(()) => {
            let choice = match allowed.as_deref().filter(|a| a.iter().any(|p| p.is_reduced())) {
                Some(allowed) => {
                    out!("auto may choose: {}", describe_allowed(&W::cost(&params), allowed));
                    let auto = gpuworthy::choose::auto::Auto::open()?.allowing(allowed);
                    auto.decide::<W>(&params, Placement::Host, None)?
                }
                None => gpuworthy::choose::auto::global()?.decide::<W>(&params, Placement::Host, None)?,
            };
            out!("auto: {} ({})", chosen_label(&choice), choice.reason);
            if choice.pipelined {
                transfer_note = Some(pipelined_note());
            }
            (vec![(String::new(), choice.device)], Some(choice.variant))
        }
    };
    let backend = &devices[0].1;
    let variants = match (variant, chosen) {
        (Some(v), _) => vec![v.to_owned()],
        (None, Some(v)) => vec![v.to_owned()],
        (None, None) => in_precisions::<W>(backend, allowed.as_deref().unwrap_or(&[]))?,
    };
    backend.check_size::<W>(&params).map_err(usage)?;
    let input = W::generate(&params, options.seed).map_err(usage)?;
    let mut rows: Vec<Measurement> = Vec::new();
    for (suffix, device) in &devices {
        for v in &variants {
            let mut m = device.measure::<W>(v, &input, options).map_err(usage)?;
            m.variant = format!("{}{suffix}", m.variant).into();
            rows.push(m);
        }
    }
    let device = backend.device();
    let title = format!("{} {params} on {} ({}; {})", W::NAME, backend.label(), device.name, device.driver);
    out!("{}", report::phase_table(&title, &rows).trim_end());
    out!("  kernel clock: {}", backend.kernel_clock());
    if let Some(note) = &transfer_note {
        out!("  {note}");
    }
    if options.reuse_output {
        out!(
            "  end-to-end into the previous run's output vector (run_into): written in place on CUDA's pipelined path, \
             a fresh output moved in elsewhere"
        );
    }
    let peak = backend.copy_bandwidth(COPY_PROBE_BYTES)?;
    let percent: Vec<String> =
        rows.iter().map(|m| format!("{} {:.0}%", m.variant, 100.0 * m.gb_per_s(m.kernel.median) / peak)).collect();
    out!(
        "  measured copy peak: {peak:.1} GB/s (read + write); kernel bandwidth as a share of it: {}{}",
        percent.join(", "),
        if rows.first().is_some_and(|m| m.cost.arithmetic_intensity() > 4.0) {
            " (compute-bound: GFLOP/s is the figure that matters here)"
        } else {
            ""
        }
    );
    print_lessons::<W>(backend, &variants, &input, request)?;
    if rows.iter().any(|m| matches!(m.check, Some(Err(_)))) {
        return Err(Exit::check_failed("a variant's output does not match the reference"));
    }
    Ok(())
}

/// `backend`'s variants of `W` that compute in one of `precisions` (all of them where it is empty), or the error
/// that names the precisions it has.
fn in_precisions<W: CommandLineWorkload>(backend: &Device, precisions: &[Precision]) -> anyhow::Result<Vec<String>> {
    let all = backend.variants::<W>();
    let chosen: Vec<String> = all
        .iter()
        .filter(|v| precisions.is_empty() || precisions.contains(&backend.precision::<W>(v)))
        .map(|v| v.to_string())
        .collect();
    if chosen.is_empty() {
        let offered: Vec<String> = all.iter().map(|v| format!("{v} ({})", backend.precision::<W>(v))).collect();
        let asked: Vec<&str> = precisions.iter().map(|p| p.name()).collect();
        return Err(Exit::usage(format!(
            "{} has no variant of {} in {}: it offers {}",
            backend.label(),
            W::NAME,
            asked.join(", "),
            offered.join(", ")
        )));
    }
    Ok(chosen)
}

/// The timing lessons `request` asks for, for each of `variants` on `backend`: the three clocks of one launch
/// (`--no-sync`), and the cost per kernel of several launches between one upload and one download (`--launches`).
fn print_lessons<W: CommandLineWorkload>(
    backend: &Device,
    variants: &[String],
    input: &W::Input,
    request: &RunRequest<'_>,
) -> anyhow::Result<()> {
    let options = &request.options;
    let t = |d: Duration| report::duration(d);
    if request.lessons.no_sync {
        let clocks = variants
            .iter()
            .map(|v| gpuworthy::measure::compare_clocks::<W, _>(backend, v, input, options).map(|c| (v.clone(), c)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(usage)?;
        print_clocks(&clocks, backend.kind().is_gpu())?;
    }
    if let Some(k) = request.lessons.launches {
        out!("  per kernel, with the data uploaded once and downloaded once around {k} kernel(s):");
        for v in variants {
            let one =
                gpuworthy::measure::launches_per_transfer::<W, _>(backend, v, input, 1, options).map_err(usage)?;
            let many = gpuworthy::measure::launches_per_transfer::<W, _>(backend, v, input, k as usize, options)
                .map_err(usage)?;
            out!("    {:<14} {k} per transfer: {} per kernel (1 per transfer: {})", v, t(many.median), t(one.median));
        }
    }
    Ok(())
}

/// The `--no-sync` lesson: each variant's launch timed by the host clock without synchronising, synchronised, and by
/// the device timer.
pub(crate) fn print_clocks(
    clocks: &[(impl std::fmt::Display, gpuworthy::measure::ClockComparison)],
    on_gpu: bool,
) -> anyhow::Result<()> {
    let t = |d: Duration| report::duration(d);
    out!("  one launch, three clocks (median of each; the first is wrong on purpose):");
    out!("    {:<14} {:>26} {:>26} {:>14}", "variant", "host, no synchronise", "host, synchronised", "device timer");
    for (v, c) in clocks {
        out!(
            "    {:<14} {:>26} {:>26} {:>14}",
            v,
            t(c.launch_unsynchronised.median),
            t(c.launch_synchronised.median),
            t(c.device_timer.median)
        );
    }
    if on_gpu {
        out!("  without a synchronisation the host clock stops when the launch is queued, not when the kernel ends");
    }
    Ok(())
}

/// What `run` and `sweep` print before a built-in workload on 16-bit arrays: that it runs as its expression.
pub(crate) fn sixteen_bit_note(workload: &str, expression: &crate::cli::ExpressionArgs) -> String {
    format!(
        "note: {workload} on {} arrays runs as the expression `{}`, whose generated kernels read and write 16-bit \
         elements on every backend; the built-in {workload} kernels are f32",
        expression.dtype,
        expression.expr.as_deref().unwrap_or_default()
    )
}
