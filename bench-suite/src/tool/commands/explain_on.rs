//! `gpuworthy explain --on MACHINE`: a prediction for this machine's CPU beside a reference machine's GPUs (and, with
//! the what-if flags, a GPU described by its memory, compute and link), for a built-in workload or an expression.
//!
//! The CPU's curves come from this machine's calibration where it has them, else from a short calibration of the
//! CPU alone run on the spot; the GPUs' curves are the reference machine's ([`gpuworthy::model::reference`]). A module of
//! its own because that mixed model, and the labels that say it is a prediction from another machine, are its
//! whole job.

use gpuworthy::Device;
use gpuworthy::model::Placement;
use gpuworthy::model::sweep::Progress;
use gpuworthy::user_code::expression::ExpressionRequest;

use super::explain::{model_error, print_groups, print_predictions};
use crate::tool::exit::usage;
use crate::tool::progress::{Bar, progress_bar};

/// A reference machine to predict on (`--on MACHINE`), and how many of its GPUs the host has (`--gpus N`).
#[derive(Debug, Clone)]
pub(crate) struct OnMachine {
    /// The reference machine's name.
    pub machine: String,
    /// Its GPUs as `--gpus` says; without it, as many as the machine had when calibrated (1 where its calibration
    /// measured no set of them).
    pub gpus: Option<usize>,
}

/// `gpuworthy explain --on MACHINE`: `W` at `params` predicted on this machine's CPU beside a reference machine's
/// GPUs ([`gpuworthy::model::reference`]). The CPU's curves come from this machine's calibration where it has them, else
/// from `calibrate_cpu` run now (the workload's calibration ladder on the CPU alone: seconds).
pub(crate) fn explain_on<W: gpuworthy::device::DeviceWorkload>(
    params: &W::Params,
    placement: Placement,
    on: &OnMachine,
    what_if: &gpuworthy::model::reference::WhatIf,
    headline: &str,
    ladder: &[(gpuworthy::measure::names::SizeLabel, gpuworthy::core::Cost)],
    calibrate_cpu: impl FnOnce(
        &Device,
        &dyn Progress,
    ) -> gpuworthy::core::Result<gpuworthy::model::calibration::Calibration>,
) -> anyhow::Result<()> {
    use gpuworthy::choose::auto::{predict_beside_reference, verdict};
    let machine = gpuworthy::model::reference::find(&on.machine).map_err(usage)?;
    let attribution = match what_if.is_some() {
        false => machine.attribution()?,
        true => format!("a what-if GPU: {}'s with {}", machine.attribution()?, what_if.describe()),
    };
    let knows = machine
        .calibration()?
        .model
        .devices
        .iter()
        .any(|d| d.is_gpu && d.workloads.iter().any(|w| w.workload == W::NAME && !w.variants.is_empty()));
    if !knows && W::instance(params).is_none() {
        anyhow::bail!(
            "{}'s shipped calibration has no GPU measurements of {} (it was calibrated before the workload existed): \
             there is nothing to predict its GPU from; `gpuworthy calibrate` on such a machine measures it",
            machine.name,
            W::NAME
        );
    }
    let beside = predict_beside_reference::<W>(machine, what_if, params, placement, |cpu| {
        let progress = progress_bar();
        progress.set_message(format!("measuring this CPU for {} (its calibration has none)", W::NAME));
        let measured = calibrate_cpu(cpu, &Bar(progress.clone()));
        progress.finish_and_clear();
        measured
    })
    // The mixed model refuses a what-if it cannot apply (a usage error); a device's failure stays one.
    .map_err(|e| if matches!(e, gpuworthy::core::Error::InvalidInput(_)) { usage(e) } else { e.into() })?;
    let (auto, predictions) = (beside.auto, beside.predictions);
    let cpu_from = match beside.cpu_measured_now {
        false => "this machine's calibration",
        true => "measured just now on this machine (`gpuworthy calibrate` keeps them)",
    };
    out!("{headline}, {placement}, on this machine's CPU beside {attribution}:");
    if predictions.is_empty() {
        out!("  nothing to predict from: {} does not know this workload", machine.name);
        return Ok(());
    }
    print_predictions(&predictions, None, placement)?;
    if let Some(verdict) = verdict(&predictions, auto.toss_up_margin()) {
        out!("fastest: {verdict}");
    }
    let calibrated_gpus = machine.calibration()?.model.contention.iter().map(|c| c.gpus_present).max().unwrap_or(1);
    let gpus = on.gpus.unwrap_or(calibrated_gpus);
    print_groups::<W>(&auto, params, placement, &predictions, gpus, &[4, 8])?;
    if let Some((elsewhere, _)) = machine.contention_measured_elsewhere()?.filter(|_| gpus > 1) {
        out!("  (how the host slows a set: measured on {elsewhere}, whose host has the same GPUs; this one has one)");
    }
    if let Some(model) = &auto.model
        && !ladder.is_empty()
    {
        let show = |x: Option<(gpuworthy::measure::names::SizeLabel, gpuworthy::DeviceLabel)>| {
            x.map_or("none in range".to_owned(), |(s, g)| format!("{s} ({g})"))
        };
        out!(
            "predicted crossovers over the ladder: data resident {}; data on the host {}",
            show(model.crossover(W::NAME, ladder, Placement::Resident)),
            show(model.crossover(W::NAME, ladder, Placement::Host))
        );
    }
    if let Some(error) = model_error(&auto) {
        out!("{error} (on {})", machine.name);
    }
    out!(
        "a prediction, not a measurement: the CPU's times are {cpu_from}; the GPUs' kernels and transfers (over that \
         machine's host link) were measured on {}",
        machine.name
    );
    if what_if.is_some() {
        out!(
            "what-if: no such GPU was measured; its times are {}'s bounded by the roofline (kernels no faster than \
             their bytes at its memory's rate or their arithmetic at its share; transfers scaled to its link), and \
             its pipelined path is not predicted",
            machine.name
        );
    }
    Ok(())
}

/// `gpuworthy explain --expr ... --on MACHINE`: [`explain_on`] for an expression.
pub(crate) fn explain_expression_on(
    request: &ExpressionRequest,
    size: &str,
    placement: Placement,
    on: &OnMachine,
) -> anyhow::Result<()> {
    use gpuworthy::core::Workload;
    use gpuworthy::core::expr::Expression;
    let n = gpuworthy::measure::size::parse_count(size).map_err(usage)?;
    let params = request.params(n).map_err(usage)?;
    gpuworthy::core::memory::check_host_memory::<Expression>(&params).map_err(usage)?;
    let cost = Expression::cost(&params);
    let headline = format!("`{}` at {n} ({} bytes moved)", request.source.trim(), cost.bytes);
    explain_on::<Expression>(&params, placement, on, &Default::default(), &headline, &[], |cpu, progress| {
        gpuworthy::user_code::expression::calibrate_expressions(std::slice::from_ref(cpu), progress)
    })
}
