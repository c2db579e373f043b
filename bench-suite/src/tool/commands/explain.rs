//! `gpuworthy explain`: where a built-in workload or an expression should run at a size, and why: the cost model's
//! predicted phases on each device, auto's choice, the model's measured error and the predicted crossovers.
//!
//! The prediction is the facade's ([`gpuworthy::choose::auto`], [`gpuworthy::model`]); this module chooses what to predict
//! (a workload through the run-time list, by a visitor, or an expression of the user's own) and prints it. Predictions
//! on a reference machine (`--on`) have a module of their own, [`super::explain_on`], because they build a model
//! that mixes this CPU with another machine's GPUs.

use std::time::Duration;

use crate::cli::ExpressionArgs;
use crate::report;
use gpuworthy::core::Precision;
use gpuworthy::device::dispatch::{CommandLineWorkload, WorkloadVisitor, visit_workload_named};
use gpuworthy::measure::size::ParseSize;
use gpuworthy::model::Placement;
use gpuworthy::user_code::expression::ExpressionRequest;

use super::explain_on::{OnMachine, explain_expression_on, explain_on};
use crate::tool::exit::{Exit, usage};
use crate::tool::shared::{allowed_precisions, chosen_label, describe_allowed, sum_length, warn_about_domain};

/// The precisions `explain` lets auto choose besides `f32` (`--precision`, `--tolerance`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Allowance {
    /// Named precisions.
    pub(crate) precisions: Vec<Precision>,
    /// The relative error accepted.
    pub(crate) tolerance: Option<f64>,
}

/// `gpuworthy explain`: where a built-in workload or an expression should run at a size, on this machine or, with
/// `--on`, on a reference machine (and a GPU described by the what-if flags).
pub(crate) fn explain_command(
    workload: Option<String>,
    expression: &ExpressionArgs,
    size: &str,
    placement: Placement,
    on: Option<OnMachine>,
    what_if: gpuworthy::model::reference::WhatIf,
    allowance: &Allowance,
) -> anyhow::Result<()> {
    let stated = expression.for_workloads(&workload.as_deref().into_iter().collect::<Vec<_>>()).map_err(usage)?;
    let expression = stated.as_ref().unwrap_or(expression);
    let Some(source) = expression.source().map_err(usage)? else {
        let workload = workload.ok_or_else(|| Exit::usage("name a workload, or give --expr"))?;
        return visit_workload_named(&workload, &mut Explain { size, placement, on: on.as_ref(), what_if, allowance })
            .map_err(usage)?;
    };
    let request = expression.request(&source).map_err(usage)?;
    warn_about_domain(&request)?;
    match on {
        Some(_) if what_if.is_some() => Err(Exit::usage(
            "--gpu-memory, --gpu-compute, --link and --unified describe a GPU for the built-in workloads; an \
             expression's special functions were measured on the reference GPU alone",
        )),
        Some(on) => explain_expression_on(&request, size, placement, &on),
        None => explain_expression(&request, size, placement),
    }
}

/// Where auto would run `workload` at `cost` with each precision the model has for it allowed beside `f32`, and each
/// precision's error bound at this size: the choice per precision, each predicted by `predict` (auto's own
/// prediction, preferring each device's documented variant). Nothing where every variant is `f32`.
fn print_choice_by_precision(
    model: &gpuworthy::model::Model,
    workload: &str,
    cost: &gpuworthy::core::Cost,
    placement: Placement,
    predict: &dyn Fn(&gpuworthy::model::Model) -> Vec<gpuworthy::model::Prediction>,
) -> anyhow::Result<()> {
    let mut reduced: Vec<Precision> = model
        .devices
        .iter()
        .flat_map(|d| d.workloads.iter().filter(|w| w.workload == workload))
        .flat_map(|w| w.variants.iter().map(|v| v.precision()))
        .filter(|p| p.is_reduced())
        .collect();
    reduced.sort_by_key(|p| Precision::ALL.iter().position(|q| q == p));
    reduced.dedup();
    if reduced.is_empty() {
        return Ok(());
    }
    let k = sum_length(cost);
    let time = |s: f64| report::duration(Duration::from_secs_f64(s));
    out!("by precision (auto's choice with each allowed beside fp32; error bound at sums of {k}):");
    for precision in std::iter::once(Precision::Fp32).chain(reduced) {
        let allowed = model.clone().allowing(&[precision]);
        let Some(best) = predict(&allowed).into_iter().next() else { continue };
        let at = if placement.moves_data() { best.total_s } else { best.kernel_s };
        out!(
            "  {:<5} bound {:.1e}: {} {}{}, {}",
            precision.name(),
            precision.relative_error_bound(k),
            best.device,
            best.variant,
            if best.pipelined { " (pipelined)" } else { "" },
            time(at)
        );
    }
    Ok(())
}

/// Where `--resident` and `--pinned` put a workload's data.
pub(crate) fn placement_of(resident: bool, pinned: bool) -> Placement {
    match (resident, pinned) {
        (true, _) => Placement::Resident,
        (false, true) => Placement::PinnedHost,
        (false, false) => Placement::Host,
    }
}

/// [`explain`] for the workload a visitor is given.
struct Explain<'a> {
    /// The size as written.
    size: &'a str,
    /// Where the data starts and ends.
    placement: Placement,
    /// A reference machine to predict on (`--on`), with its number of GPUs.
    on: Option<&'a OnMachine>,
    /// How the GPU differs from the reference machine's, if it does.
    what_if: gpuworthy::model::reference::WhatIf,
    /// The precisions auto may choose besides `f32`.
    allowance: &'a Allowance,
}

impl WorkloadVisitor for Explain<'_> {
    type Output = anyhow::Result<()>;
    fn visit<W: CommandLineWorkload>(&mut self) -> anyhow::Result<()> {
        match self.on {
            Some(machine) => {
                let params = W::Params::parse_size(self.size).map_err(usage)?;
                gpuworthy::core::memory::check_host_memory::<W>(&params).map_err(usage)?;
                let cost = W::cost(&params);
                let headline = format!("{} {params} ({} bytes moved, {} flops)", W::NAME, cost.bytes, cost.flops);
                let ladder: Vec<(gpuworthy::measure::names::SizeLabel, gpuworthy::core::Cost)> =
                    W::ladder().iter().map(|p| (p.to_string().into(), W::cost(p))).collect();
                explain_on::<W>(&params, self.placement, machine, &self.what_if, &headline, &ladder, |cpu, progress| {
                    Ok(gpuworthy::model::calibration::calibrate_cpu_for::<W>(cpu, progress))
                })
            }
            None => explain::<W>(self.size, self.placement, self.allowance),
        }
    }
}

/// `gpuworthy explain`: the model's prediction for each device, auto's choice and why, the predicted crossovers.
fn explain<W: CommandLineWorkload>(size: &str, placement: Placement, allowance: &Allowance) -> anyhow::Result<()> {
    let params = W::Params::parse_size(size).map_err(usage)?;
    // Refused like `run`: a size whose input could not be made on this machine is not predicted.
    gpuworthy::core::memory::check_host_memory::<W>(&params).map_err(usage)?;
    let cost = W::cost(&params);
    let allowed = allowed_precisions(&cost, &allowance.precisions, allowance.tolerance).unwrap_or_default();
    let auto = gpuworthy::choose::auto::Auto::open()?.allowing(&allowed);
    if let Some(why) = &auto.uncalibrated {
        eprintln!("gpuworthy: warning: {why}");
    }
    let choice = auto.choose::<W>(&params, placement)?;
    out!("{} {params} ({} bytes moved, {} flops), {placement}:", W::NAME, cost.bytes, cost.flops);
    if allowed.iter().any(|p| p.is_reduced()) {
        out!("auto may choose: {}", describe_allowed(&cost, &allowed));
    }
    let chosen = (choice.device.label(), choice.variant, choice.pipelined);
    print_predictions(&choice.predictions, Some(&chosen), placement)?;
    out!("auto: {} ({})", chosen_label(&choice), choice.reason);
    if let Some(model) = &auto.model {
        let devices = &auto.devices;
        let preferred = |label: &gpuworthy::DeviceLabel| {
            devices.iter().find(|d| d.label() == *label).map(|d| d.best_variant::<W>(&params))
        };
        let moved = |kind: gpuworthy::core::BackendKind, variant: &str| Some(W::traffic(&params, kind, variant));
        let predict = |m: &gpuworthy::model::Model| m.predict_preferring(W::NAME, &cost, placement, &preferred, &moved);
        print_choice_by_precision(model, W::NAME, &cost, placement, &predict)?;
    }
    let gpus = choice.predictions.iter().filter(|p| p.is_gpu).min_by(|a, b| a.total_s.total_cmp(&b.total_s)).map_or(
        0,
        |fastest| {
            // Every device of the fastest GPU's kind this machine has (auto opens the first of each kind).
            auto.devices
                .iter()
                .find(|d| d.label() == fastest.device)
                .map_or(1, gpuworthy::choose::group::devices_of_kind)
        },
    );
    print_groups::<W>(&auto, &params, placement, &choice.predictions, gpus, &[])?;
    if let Some(error) = model_error(&auto) {
        out!("{error}");
    }
    if placement == Placement::PinnedHost
        && let Some(model) = &auto.model
    {
        let pinned = |d: &gpuworthy::model::DeviceModel| {
            d.workloads.iter().any(|w| w.workload == W::NAME && w.upload_pinned.is_some())
        };
        let with: Vec<&str> = model.devices.iter().filter(|d| pinned(d)).map(|d| d.label.as_str()).collect();
        if with.is_empty() {
            out!("no device here has pinned transfers calibrated: every GPU's transfers are its pageable ones");
        } else {
            out!(
                "pinned transfers on {} (the others move pageable memory); auto::run itself moves pageable memory",
                with.join(", ")
            );
        }
    }
    if let Some(model) = &auto.model {
        let ladder: Vec<(gpuworthy::measure::names::SizeLabel, gpuworthy::core::Cost)> =
            W::ladder().iter().map(|p| (p.to_string().into(), W::cost(p))).collect();
        let show = |x: Option<(gpuworthy::measure::names::SizeLabel, gpuworthy::DeviceLabel)>| {
            x.map_or("none in range".to_owned(), |(s, g)| format!("{s} ({g})"))
        };
        let pinned = if placement == Placement::PinnedHost {
            format!("; through pinned memory {}", show(model.crossover(W::NAME, &ladder, Placement::PinnedHost)))
        } else {
            String::new()
        };
        out!(
            "predicted crossovers over the ladder: data resident {}; data on the host {}{pinned}",
            show(model.crossover(W::NAME, &ladder, Placement::Resident)),
            show(model.crossover(W::NAME, &ladder, Placement::Host))
        );
    }
    Ok(())
}

/// `gpuworthy explain --expr`: an expression predicted from this machine's calibration: from its own curves where
/// `calibrate --expr` measured it, else from the base expression of its kind at the same bytes moved plus its
/// arithmetic and special functions at each device's calibrated rates, and said to be a prediction.
fn explain_expression(request: &ExpressionRequest, size: &str, placement: Placement) -> anyhow::Result<()> {
    use gpuworthy::core::Workload;
    use gpuworthy::core::expr::Expression;
    let n = gpuworthy::measure::size::parse_count(size).map_err(usage)?;
    let params = request.params(n).map_err(usage)?;
    // Refused like `run`: an input that could not be made here is not predicted.
    gpuworthy::core::memory::check_host_memory::<Expression>(&params).map_err(usage)?;
    let cost = Expression::cost(&params);
    let per_element = params.program.cost_per_element();
    let auto = gpuworthy::choose::auto::Auto::open()?;
    let stored = if params.dtype.is_half() { format!(" on {} arrays", params.dtype) } else { String::new() };
    out!(
        "`{}`{stored} at {n} ({} bytes moved; per element {} arithmetic operation(s) and {} special function(s)), \
         {placement}:",
        request.source.trim(),
        cost.bytes,
        per_element.flops,
        per_element.special
    );
    let choice = auto.choose::<Expression>(&params, placement)?;
    if choice.predictions.is_empty() {
        let why = auto.uncalibrated.clone().unwrap_or_else(|| {
            "the calibration has no expressions: run `gpuworthy calibrate --expressions`".to_owned()
        });
        out!("  nothing to predict from: {why} (auto runs it on the CPU until then)");
        return Ok(());
    }
    let chosen = (choice.device.label(), choice.variant, choice.pipelined);
    print_predictions(&choice.predictions, Some(&chosen), placement)?;
    out!("auto: {} ({})", chosen_label(&choice), choice.reason);
    if let Some(error) = model_error(&auto) {
        out!("{error}");
    }
    let instance = Expression::instance(&params).unwrap_or_default();
    let own = auto.model.as_ref().is_some_and(|m| m.knows(&instance));
    if own {
        out!("predicted from this expression's own calibration (`gpuworthy calibrate --expr`)");
    } else {
        let like = Expression::resemblance(&params).map(|r| r.like).unwrap_or_default();
        out!(
            "a prediction, not a measurement: this expression was never measured here; each device's phases are those \
             of `{like}` at the same bytes moved, its kernel grown by the arithmetic and special functions beyond it at \
             the rates calibration measured on that device"
        );
        let unpriced: Vec<String> = auto
            .model
            .iter()
            .flat_map(|m| &m.rates)
            .flat_map(|rates| {
                let r = Expression::resemblance(&params).unwrap_or_default();
                rates.extra_s(&r).1.into_iter().map(|f| format!("{f} on {}", rates.label)).collect::<Vec<_>>()
            })
            .collect();
        if !unpriced.is_empty() {
            out!("  not priced (no rate calibrated): {}", unpriced.join(", "));
        }
    }
    let sets: Vec<String> = request.scalars.iter().map(|(name, value)| format!("{name}={value}")).collect();
    let sets = if sets.is_empty() { String::new() } else { format!(" --set {}", sets.join(",")) };
    out!("  to measure it: gpuworthy run --expr '{}'{sets} --size {n}", request.source.trim());
    Ok(())
}

/// The model's predicted phases on each device, fastest first, the one auto chose (device, variant, pipelined) marked.
pub(crate) fn print_predictions(
    predictions: &[gpuworthy::model::Prediction],
    chosen: Option<&(gpuworthy::DeviceLabel, &str, bool)>,
    placement: Placement,
) -> anyhow::Result<()> {
    let t = |s: f64| report::duration(Duration::from_secs_f64(s));
    if !predictions.is_empty() {
        out!(
            "  {:<12} {:<10} {:>10} {:>24} {:>10} {:>10}",
            "device",
            "variant",
            "upload",
            "kernel (launch part)",
            "download",
            "total"
        );
        for p in predictions {
            let chosen = chosen.is_some_and(|(label, variant, pipelined)| {
                p.device == *label && p.variant == *variant && p.pipelined == *pipelined
            });
            let moves = placement.moves_data() && p.upload_s + p.download_s > 0.0;
            let moved = |s: f64| if moves { t(s) } else { "-".to_owned() };
            out!(
                "  {:<12} {:<10} {:>10} {:>24} {:>10} {:>10}{}",
                if p.pipelined { format!("{} p", p.device) } else { p.device.to_string() },
                p.variant,
                moved(p.upload_s),
                format!("{} ({})", t(p.kernel_s), t(p.launch_s)),
                moved(p.download_s),
                t(p.total_s),
                if chosen { "  <- auto" } else { "" }
            );
        }
    }
    if predictions.iter().any(|p| p.pipelined) {
        out!(
            "  p: through the pipelined path; its upload and download are what the pipeline does not hide behind the kernel"
        );
    }
    Ok(())
}

/// The device groups' predictions beside the devices alone ([`gpuworthy::choose::group`]): the fastest GPU kind
/// `gpus` times over, the CPU with it, and, labelled as what-ifs, with `what_if_gpus` of it; and whether a second GPU,
/// or the CPU beside the GPU, is predicted to pay.
pub(crate) fn print_groups<W: gpuworthy::device::DeviceWorkload>(
    auto: &gpuworthy::choose::auto::Auto,
    params: &W::Params,
    placement: Placement,
    predictions: &[gpuworthy::model::Prediction],
    gpus: usize,
    what_if_gpus: &[usize],
) -> anyhow::Result<()> {
    use gpuworthy::choose::group::{candidate_groups, predict_group};
    let Some(alone) = predictions.iter().min_by(|a, b| a.total_s.total_cmp(&b.total_s)) else { return Ok(()) };
    let mut rows = Vec::new();
    for members in candidate_groups(predictions, gpus.max(1)) {
        rows.push((predict_group::<W>(auto, params, placement, &members), ""));
    }
    for &more in what_if_gpus.iter().filter(|&&n| n > gpus) {
        let many = |members: &Vec<gpuworthy::DeviceLabel>| members.iter().filter(|m| **m != members[0]).count() == 0;
        for members in candidate_groups(predictions, more).into_iter().filter(|m| m.len() > more || many(m)) {
            rows.push((predict_group::<W>(auto, params, placement, &members), "  what-if"));
        }
    }
    let rows: Vec<_> = rows.into_iter().filter_map(|(p, what_if)| p.map(|p| (p, what_if))).collect();
    if rows.is_empty() {
        return Ok(());
    }
    let t = |s: f64| report::duration(Duration::from_secs_f64(s));
    out!(
        "device groups (predicted: each member's part at its own rate over its own link, with the host's copies of a \
         part its device does not read in place, balanced to finish together):"
    );
    let shares = format!("share of the {}", W::sharding().map_or("work", |s| s.unit));
    out!("  {:<16} {:<22} {:>10}   against {} alone ({})", "group", shares, "total", alone.device, t(alone.total_s));
    for (group, what_if) in &rows {
        out!(
            "  {:<16} {:<22} {:>10}   {:.2}x{what_if}",
            group.name(),
            group.shares(),
            t(group.total_s),
            alone.total_s / group.total_s.max(1e-12)
        );
    }
    let is_gpu = |label: &gpuworthy::DeviceLabel| predictions.iter().any(|p| p.device == *label && p.is_gpu);
    let pays = |ratio: f64| if ratio >= 1.1 { "pays" } else { "does not pay" };
    let fastest_gpu = predictions.iter().filter(|p| p.is_gpu).min_by(|a, b| a.total_s.total_cmp(&b.total_s));
    let measured = rows.iter().filter(|(_, what_if)| what_if.is_empty()).map(|(g, _)| g);
    for group in measured {
        let all_gpus = group.members.iter().all(|m| is_gpu(&m.device));
        match fastest_gpu {
            Some(gpu) if all_gpus => {
                let ratio = gpu.total_s / group.total_s.max(1e-12);
                out!(
                    "{} GPUs against one: {} ({ratio:.2}x one {}, predicted)",
                    group.members.len(),
                    pays(ratio),
                    gpu.device
                );
            }
            _ if group.members.len() == 2 && !all_gpus => {
                let ratio = alone.total_s / group.total_s.max(1e-12);
                out!("the CPU and the GPU together: {} ({ratio:.2}x the fastest alone, predicted)", pays(ratio));
            }
            _ => {}
        }
    }
    if let Some(set) = gpuworthy::choose::group::choose_set::<W>(auto, params, placement, gpus.max(1)) {
        out!("fastest set: {}", set.reason);
    }
    let contention = auto.model.as_ref().map_or(&[][..], |m| &m.contention[..]);
    let applied = rows.iter().any(|(g, _)| g.slowdowns.is_some());
    match (placement.moves_data(), applied) {
        (false, _) => out!("  resident: each member computes on its own memory; the combine of parts is left out"),
        (true, true) => {
            out!(
                "  members slow one another as calibration measured on this host (the GPUs' transfers and the CPU's square, each in the set against alone):"
            );
            let in_rows = |c: &&gpuworthy::model::contention::HostContention| {
                rows.iter().any(|(g, _)| g.members.iter().any(|m| m.device == c.gpu))
            };
            for line in contention.iter().filter(in_rows).flat_map(|c| c.describe()) {
                out!("    {line}");
            }
            if let Some(from) = rows.iter().find_map(|(g, _)| g.slowdowns.as_ref()?.extrapolated_from) {
                out!(
                    "    what-ifs past {from} GPUs: their GPUs share what {from} carried together (the host carrying no more)"
                );
            }
        }
        (true, false) if contention.is_empty() => out!(
            "  left out of these predictions: members slowing one another (GPUs sharing the host's memory, the CPU's \
             memory busy with the GPUs' transfers): calibration on a host with these sets measures it"
        ),
        (true, false) => out!("  no member running beside another: nothing slows it"),
    }
    if let Some(per_byte) = auto.model.as_ref().and_then(|m| m.host_copy_s_per_byte).filter(|_| placement.moves_data())
    {
        out!(
            "  a member whose device does not read its part where it lies is charged the host's copies of its part: \
             {:.2} GB/s into fresh memory, as calibration measured",
            1e-9 / per_byte
        );
    }
    Ok(())
}

/// The model's error as `calibrate --evaluate` measured it, in words, if it did.
pub(crate) fn model_error(auto: &gpuworthy::choose::auto::Auto) -> Option<String> {
    let error = auto.model.as_ref()?.error.as_ref()?;
    Some(format!(
        "the model's error (calibrate --evaluate, over {}): auto within 10% of the fastest at {} of {} points, worst \
         {:.2}x; 90% of its predictions within {}",
        error.covered,
        error.within_10,
        error.points,
        error.worst_regret,
        error.p90_prediction_error.map_or("an unmeasured error".to_owned(), |e| format!("{:.0}%", 100.0 * e))
    ))
}
