//! `gpuworthy calibrate`: measures what the cost model behind `auto` and `explain` needs on this machine and stores
//! it; with `--evaluate`, measures the sizes calibration did not use and compares auto's choice at each with the
//! fastest measured (the regret), keeping that error with the calibration; with `--expr`, adds one expression's own
//! curves to the stored calibration; with `--evaluate --sets`, compares auto's choice of device set with the fastest
//! set measured.
//!
//! The measuring is the facade's ([`gpuworthy::choose::catalog`], [`gpuworthy::model::calibration`], [`gpuworthy::choose::evaluation`]);
//! this module is the order of the steps and what is said after each. Calibrating and evaluating share nothing but
//! the stored file and the devices, so each is a function of its own, cut into named steps (load, measure, print,
//! store) so that each step can be read without the others.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::ExpressionArgs;
use crate::report;
use anyhow::{Context, bail};
use gpuworthy::choose::catalog::Catalog;
use gpuworthy::choose::evaluation::Evaluation;
use gpuworthy::model::calibration::{Calibration, CalibrationDevices, Loaded, MachineFingerprint, default_path};
use gpuworthy::model::{DeviceModel, ModelError, Placement};
use gpuworthy::user_code::expression::ExpressionRequest;
use gpuworthy::{Device, OpenedDevices};
use indicatif::ProgressBar;

use crate::tool::exit::{Exit, usage};
use crate::tool::progress::{Bar, progress_bar};
use crate::tool::shared::{check_writable_file, skip_unavailable, warn_about_domain};

/// `gpuworthy calibrate`: this machine's calibration, the evaluation of `auto` (`--evaluate`), or one expression's own
/// curves (`--expr`).
pub(crate) fn calibrate_command(
    evaluate: bool,
    sets: bool,
    json: Option<PathBuf>,
    expressions: bool,
    expression: &ExpressionArgs,
) -> anyhow::Result<()> {
    match expression.source().map_err(usage)? {
        Some(_) if evaluate => {
            Err(Exit::usage("--evaluate measures the expressions calibration never saw: drop --expr"))
        }
        Some(source) => {
            let request = expression.request(&source).map_err(usage)?;
            warn_about_domain(&request)?;
            calibrate_one_expression(&request)
        }
        None if sets => evaluate_sets(json),
        None => calibrate(evaluate, json, expressions),
    }
}

/// Where the calibration is stored: the user's cache directory, or `GPUWORTHY_CALIBRATION`.
fn calibration_path() -> anyhow::Result<PathBuf> {
    default_path()
        .map_err(usage)?
        .ok_or_else(|| Exit::usage("no cache directory is known: set GPUWORTHY_CALIBRATION to a file path"))
}

/// `gpuworthy calibrate --expr`: one expression measured over its calibration ladder and added to the stored
/// calibration, which must exist (its base expressions and rates come from a whole calibration).
fn calibrate_one_expression(request: &ExpressionRequest) -> anyhow::Result<()> {
    let path = calibration_path()?;
    let opened = Device::all_available();
    let mut calibration = match Calibration::load(&path, &MachineFingerprint::of(&opened.devices)) {
        Loaded::Calibrated(c) => c,
        Loaded::Missing(path) => {
            bail!("{} does not exist: run `gpuworthy calibrate` first, then add your expression", path.display())
        }
        Loaded::Ignored(why) => bail!("{why}"),
    };
    let progress = progress_bar();
    let started = std::time::Instant::now();
    let template = request.params(0).map_err(usage)?;
    let part = gpuworthy::user_code::expression::calibrate_expression(
        &CalibrationDevices::of(&opened.devices),
        &template,
        &Bar(progress.clone()),
    );
    progress.finish_and_clear();
    let name = part.workload.clone();
    calibration.merge(Calibration::from_parts(&opened.devices, vec![part], started));
    calibration.save(&path).map_err(usage)?;
    out!("calibrated `{name}` in {:.1} s, added to {}", started.elapsed().as_secs_f64(), path.display());
    out!("  explain --expr and auto now predict it from its own curves");
    Ok(())
}

/// `gpuworthy calibrate [--evaluate] [--expressions]`: checks the request, opens every device, then calibrates or
/// evaluates.
fn calibrate(evaluate: bool, json: Option<PathBuf>, expressions_only: bool) -> anyhow::Result<()> {
    let path = calibration_path()?;
    if let Some(json) = &json {
        if !evaluate {
            return Err(Exit::usage("--json goes with --evaluate"));
        }
        check_writable_file("--json", json)?;
    }
    let opened = Device::all_available();
    skip_unavailable(&opened)?;
    let progress = progress_bar();
    if evaluate {
        evaluate_auto(&path, &opened, json.as_deref(), expressions_only, &progress)
    } else {
        calibrate_and_save(&path, &opened, expressions_only, &progress)
    }
}

/// Calibrates every device (the built-in workloads and the expressions, or with `expressions_only` the expressions
/// merged into the stored calibration), saves it at `path` and says what each device was fitted with.
fn calibrate_and_save(
    path: &Path,
    opened: &OpenedDevices,
    expressions_only: bool,
    progress: &ProgressBar,
) -> anyhow::Result<()> {
    let bar = Bar(progress.clone());
    // The built-in workloads first (their calibration starts by warming the GPUs up), then the expressions, on
    // devices already busy, as the evaluation finds them.
    let calibration = if expressions_only {
        gpuworthy::choose::catalog::warm_start(&opened.devices, &bar);
        let expressions = gpuworthy::user_code::expression::calibrate_expressions(&opened.devices, &bar)?;
        match Calibration::load(path, &MachineFingerprint::of(&opened.devices)) {
            Loaded::Calibrated(mut c) => {
                c.merge(expressions);
                *c
            }
            Loaded::Missing(_) | Loaded::Ignored(_) => expressions,
        }
    } else {
        let started = std::time::Instant::now();
        let mut c = gpuworthy::choose::catalog::calibrate(&opened.devices, &Catalog::builtin().entries(), &bar);
        c.merge(gpuworthy::user_code::expression::calibrate_expressions(&opened.devices, &bar)?);
        c.took_s = started.elapsed().as_secs_f64();
        c
    };
    progress.finish_and_clear();
    calibration.save(path).map_err(usage)?;
    out!("calibrated in {:.0} s, saved to {}", calibration.took_s, path.display());
    for device in &calibration.model.devices {
        out!("{}", calibrated_device(device));
    }
    for contention in &calibration.model.contention {
        out!(
            "  the host's contention (square {} from the host, equal parts, each member against itself alone):",
            contention.elements
        );
        for line in contention.describe() {
            out!("    {line}");
        }
    }
    Ok(())
}

/// `calibrate --evaluate --sets`: auto's choice of device set against the fastest set measured at each size of the
/// built-in workloads that split, data on the host, printed and written to `json` when asked.
fn evaluate_sets(json: Option<PathBuf>) -> anyhow::Result<()> {
    if let Some(json) = &json {
        check_writable_file("--json", json)?;
    }
    let path = calibration_path()?;
    let opened = Device::all_available();
    skip_unavailable(&opened)?;
    let calibration = match Calibration::load(&path, &MachineFingerprint::of(&opened.devices)) {
        Loaded::Calibrated(c) => c,
        Loaded::Missing(path) => bail!("{} does not exist: run `gpuworthy calibrate` first", path.display()),
        Loaded::Ignored(why) => bail!("{why}"),
    };
    let auto = gpuworthy::choose::auto::Auto::with_model(opened.devices.clone(), calibration.model);
    let progress = progress_bar();
    let bar = Bar(progress.clone());
    let t = |s: f64| report::duration(Duration::from_secs_f64(s));
    out!(
        "{:<11} {:<12} {:<30} {:>10} {:>10}  {:<30} {:>10} {:>7}",
        "workload",
        "size",
        "auto's set",
        "measured",
        "predicted",
        "fastest set",
        "time",
        "regret"
    );
    // Each workload's points as it ends, so that a long evaluation piped to a file shows where it is.
    let mut evaluation = gpuworthy::choose::set_evaluation::SetEvaluation::default();
    for workload in Catalog::builtin().entries() {
        let own = workload.evaluate_sets(&auto, &bar);
        progress.suspend(|| -> anyhow::Result<()> {
            for p in &own.points {
                let chosen = p.set(&p.auto_set);
                let fastest = p.set(&p.fastest_set);
                out!(
                    "{:<11} {:<12} {:<30} {:>10} {:>10}  {:<30} {:>10} {:>6.2}x",
                    p.workload,
                    p.size,
                    p.auto_set,
                    chosen.map_or("-".to_owned(), |s| t(s.measured_s)),
                    chosen.map_or("-".to_owned(), |s| t(s.predicted_s)),
                    p.fastest_set,
                    fastest.map_or("-".to_owned(), |s| t(s.measured_s)),
                    p.regret
                );
            }
            Ok(())
        })?;
        evaluation.extend(own);
    }
    progress.finish_and_clear();
    for failure in &evaluation.failures {
        out!("FAILED {} {}: {}", failure.workload, failure.size, failure.what);
    }
    let (points, within, median, worst) = evaluation.summary();
    out!(
        "{points} points ({} failed): auto's set within 10% of the fastest set at {within} ({:.0}%), median regret \
         {median:.2}x, worst {worst:.2}x; groups chosen at {}, fastest at {}",
        evaluation.failures.len(),
        100.0 * within as f64 / points.max(1) as f64,
        evaluation.points.iter().filter(|p| p.auto_set.contains('+') || p.auto_set.contains('×')).count(),
        evaluation.points.iter().filter(|p| p.fastest_set.contains('+') || p.fastest_set.contains('×')).count(),
    );
    if let Some(json) = json {
        let text = serde_json::to_string_pretty(&evaluation)?;
        std::fs::write(&json, text).with_context(|| format!("writing {}", json.display()))?;
    }
    if !evaluation.failures.is_empty() {
        return Err(Exit::check_failed(format!("{} points of the set evaluation failed", evaluation.failures.len())));
    }
    Ok(())
}

/// The line `calibrate` ends with for one device: how many workloads and variants were fitted, the rate at which it
/// streams past its caches, and each workload's own rates above the ladder.
fn calibrated_device(device: &DeviceModel) -> String {
    let variants: usize = device.workloads.iter().map(|w| w.variants.len()).sum();
    let streaming =
        device.stream_s_per_byte.map_or(String::new(), |s| format!("; streams {:.0} GB/s past its caches", 1e-9 / s));
    let cache = device.cache_bytes.map_or(String::new(), |bytes| {
        format!(" (last-level cache {} MiB: sizes within it are not held to that rate)", bytes >> 20)
    });
    let own: Vec<String> = device
        .workloads
        .iter()
        .filter_map(|w| {
            let probes = &w.streaming.as_ref().filter(|own| !own.probes.is_empty())?.probes;
            let rates: Vec<String> = probes.iter().map(|(_, s)| format!("{:.0}", 1e-9 / s)).collect();
            Some(format!("{} {}", w.workload, rates.join("/")))
        })
        .collect();
    let own = if own.is_empty() {
        String::new()
    } else {
        format!("; above the ladder (GB/s at each probe, the largest last): {}", own.join(", "))
    };
    let streaming = streaming + &cache + &own;
    format!("  {}: {} workloads, {variants} variants fitted{streaming}", device.label, device.workloads.len())
}

/// `calibrate --evaluate`: the stored calibration's choices measured against the fastest at the sizes it did not use
/// (the built-in workloads unless `expressions_only`, then the evaluation's expressions), printed, written to `json`
/// when asked, and the model's error kept with the calibration.
fn evaluate_auto(
    path: &Path,
    opened: &OpenedDevices,
    json: Option<&Path>,
    expressions_only: bool,
    progress: &ProgressBar,
) -> anyhow::Result<()> {
    let bar = Bar(progress.clone());
    let calibration = match Calibration::load(path, &MachineFingerprint::of(&opened.devices)) {
        Loaded::Calibrated(c) => c,
        Loaded::Missing(path) => bail!("{} does not exist: run `gpuworthy calibrate` first", path.display()),
        Loaded::Ignored(why) => bail!("{why}"),
    };
    let mut evaluation = if expressions_only {
        Evaluation::default()
    } else {
        gpuworthy::choose::catalog::evaluate(&calibration, &opened.devices, &Catalog::builtin().entries(), &bar)
    };
    evaluate_expressions(&calibration, opened, &mut evaluation, progress)?;
    progress.finish_and_clear();
    print_evaluation(&evaluation)?;
    if let Some(json) = json {
        let text = serde_json::to_string_pretty(&evaluation)?;
        std::fs::write(json, text).with_context(|| format!("writing {}", json.display()))?;
    }
    store_model_error(*calibration, &evaluation, expressions_only, path)
}

/// The evaluation's expressions measured and added to `evaluation`: each expression's points under its own name,
/// numbered in the table's workload column, and a line per expression as it ends, so that a long evaluation piped to
/// a file shows where it is.
fn evaluate_expressions(
    calibration: &Calibration,
    opened: &OpenedDevices,
    evaluation: &mut Evaluation,
    progress: &ProgressBar,
) -> anyhow::Result<()> {
    let bar = Bar(progress.clone());
    let auto = gpuworthy::choose::auto::Auto::with_model(opened.devices.clone(), calibration.model.clone());
    gpuworthy::user_code::expression::compile_evaluation_expressions(&opened.devices);
    const NAMES: [&str; gpuworthy::user_code::expression::EVALUATION_EXPRESSIONS.len()] =
        ["expr1", "expr2", "expr3", "expr4", "expr5", "expr6", "expr7", "expr8", "expr9", "expr10"];
    for ((source, scalars), name) in gpuworthy::user_code::expression::EVALUATION_EXPRESSIONS.iter().zip(NAMES) {
        let mut own = gpuworthy::user_code::expression::evaluate_expression(calibration, &auto, source, scalars, &bar)
            .map_err(usage)?;
        let within = own.points.iter().filter(|p| p.regret.is_some_and(|r| r <= 1.10)).count();
        progress.suspend(|| -> anyhow::Result<()> {
            out!("{name}: {source} ({within} of {} points within 10%)", own.points.len());
            Ok(())
        })?;
        own.points.iter_mut().for_each(|p| p.workload = name.into());
        own.failures.iter_mut().for_each(|f| f.workload = name.into());
        evaluation.extend(own);
    }
    Ok(())
}

/// The evaluation's table, a point a line, and the summary under it.
fn print_evaluation(evaluation: &Evaluation) -> anyhow::Result<()> {
    out!(
        "{:<11} {:<16} {:<9} {:<24} {:>10} {:>10}  {:<24} {:>10} {:>7}",
        "workload",
        "size",
        "data on",
        "auto's choice",
        "measured",
        "predicted",
        "fastest measured",
        "time",
        "regret"
    );
    let t = |s: f64| report::duration(Duration::from_secs_f64(s));
    for p in &evaluation.points {
        out!(
            "{:<11} {:<16} {:<9} {:<24} {:>10} {:>10}{} {:<24} {:>10} {:>7}",
            p.workload,
            p.size,
            if p.placement == Placement::Host { "host" } else { "device" },
            format!("{} {}{}", p.auto_device, p.auto_variant, if p.auto_pipelined { " pipelined" } else { "" }),
            p.auto_s.map_or("-".to_owned(), t),
            p.predicted_s.map_or("-".to_owned(), t),
            if p.past_ladder { "*" } else { " " },
            p.fastest,
            t(p.fastest_s),
            p.regret.map_or("-".to_owned(), |r| format!("{r:.2}x"))
        );
    }
    for failure in &evaluation.failures {
        out!("FAILED {} {} ({}): {}", failure.workload, failure.size, failure.placement, failure.what);
    }
    let (measured, within, median, worst) = evaluation.summary();
    out!(
        "{} points ({} failed), {measured} with auto's choice measured: within 10% of the fastest at {within} ({:.0}%), median \
         regret {median:.2}x, worst {worst:.2}x; {} settled by a trial (predictions too close to call, timed on the \
         spot)",
        evaluation.points.len(),
        evaluation.failures.len(),
        100.0 * within as f64 / measured.max(1) as f64,
        evaluation.points.iter().filter(|p| p.by_trial).count()
    );
    let past = evaluation.errors_past_ladder();
    if let Some(worst) = past.last() {
        let within = past.iter().filter(|&&e| e <= 0.25).count();
        out!(
            "*: past the calibration ladder (more bytes than any calibrated size): the prediction for auto's choice \
             within 25% of the measured time at {within} of {} points, worst {:.0}% off",
            past.len(),
            100.0 * worst
        );
    }
    Ok(())
}

/// Keeps the model's error with the calibration at `path`: explain says it, and auto calls two devices within it a
/// toss-up. Nothing is stored when no point had auto's choice measured.
fn store_model_error(
    mut calibration: Calibration,
    evaluation: &Evaluation,
    expressions_only: bool,
    path: &Path,
) -> anyhow::Result<()> {
    let regrets = evaluation.regrets();
    if regrets.is_empty() {
        return Ok(());
    }
    let (measured, within, _, worst) = evaluation.summary();
    let percentile_90 = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values.get((values.len() * 9).div_ceil(10).saturating_sub(1)).copied()
    };
    let p90 = percentile_90(regrets).unwrap_or(f64::NAN);
    let p90_error = percentile_90(evaluation.points.iter().filter_map(|p| p.prediction_error()).collect());
    calibration.model.error = Some(ModelError {
        covered: if expressions_only {
            "the expressions calibration never saw"
        } else {
            "the workloads and expressions"
        }
        .to_owned(),
        points: measured,
        within_10: within,
        p90_regret: p90,
        worst_regret: worst,
        p90_prediction_error: p90_error,
    });
    let margin = calibration.model.toss_up_margin();
    calibration.save(path).map_err(usage)?;
    if let Some(e) = p90_error {
        out!("the predictions for auto's choices: 90% within {:.0}% of the measured time", 100.0 * e);
    }
    out!("two predictions closer than {:.0}% are called a toss-up from now on", 100.0 * margin);
    Ok(())
}
