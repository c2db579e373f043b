//! `gpuworthy sweep`: sizes x backends x variants for every workload asked for (the built-in ones from the run-time
//! list, or an expression of the user's own), a table per workload with the winner per size and the crossovers, and
//! `--json`, `--csv` and `--plot` written from what was measured.
//!
//! The measuring is the facade's ([`gpuworthy::choose::catalog`], [`gpuworthy::model::sweep`]); this module is shaped as the steps a
//! sweep takes, each a function: read the request and refuse a bad one before anything runs (sizes, options and
//! output files included, because a sweep is long and failing at its end wastes it), open the devices, measure each
//! workload while showing its table, then write the files and choose the exit code. Whatever a later workload does,
//! the files hold what was measured before it.

use std::path::Path;
use std::time::Duration;

use crate::cli::{ExpressionArgs, SweepArgs, SweepBackend};
use crate::export::{Fingerprint, write_csv, write_json, write_plot};
use crate::report::{self, table};
use anyhow::bail;
use gpuworthy::choose::catalog::{Catalog, WorkloadEntry, WorkloadOf};
use gpuworthy::core::BackendKind;
use gpuworthy::core::expr::Expression;
use gpuworthy::device::group::DeviceGroup;
use gpuworthy::measure::size::{Ladder, SizeRequest, WorkloadOptions};
use gpuworthy::model::sweep::{SweepOptions, WorkloadSweep};
use gpuworthy::user_code::expression::expression_entry;
use gpuworthy::{Device, DeviceSpec};
use indicatif::ProgressBar;

use super::sweep_group::sweep_groups;
use crate::tool::exit::{Exit, usage};
use crate::tool::progress::{Bar, progress_bar};
use crate::tool::shared::{check_writable_dir, check_writable_file, skip_unavailable, warn_about_domain};

/// `gpuworthy sweep`: every workload asked for, from the run-time list of workloads.
pub(crate) fn sweep(args: SweepArgs) -> anyhow::Result<()> {
    let SweepArgs {
        workloads,
        expression,
        backends,
        quick,
        sizes,
        budget,
        no_pipelined,
        json,
        csv,
        plot,
        params,
        precision,
    } = args;
    // A built-in workload on 16-bit arrays is swept as the expression that states it.
    let names: Vec<&str> = workloads.iter().map(String::as_str).collect();
    let (workloads, expression) = match expression.for_workloads(&names).map_err(usage)? {
        Some(stated) => {
            println!("{}", super::run::sixteen_bit_note(names[0], &stated));
            (Vec::new(), stated)
        }
        None => (workloads, expression),
    };
    // An expression of the user's own is swept alone, as one more workload.
    let expression = user_expression(&expression)?;
    let (devices, groups): (Vec<_>, Vec<_>) = backends.into_iter().partition(|b| matches!(b, SweepBackend::Device(_)));
    let devices: Vec<DeviceSpec> =
        devices.into_iter().filter_map(|b| if let SweepBackend::Device(d) = b { Some(d) } else { None }).collect();
    let groups: Vec<String> =
        groups.into_iter().filter_map(|b| if let SweepBackend::Group(g) = b { Some(g) } else { None }).collect();
    if !groups.is_empty() && expression.is_some() {
        return Err(Exit::usage(
            "a sweep's groups run the built-in workloads; `run --expr ... --backend GROUP` measures an expression on one",
        ));
    }
    if !groups.is_empty() && (json.is_some() || csv.is_some() || plot.is_some()) {
        return Err(Exit::usage(
            "--json, --csv and --plot write the devices' rows; a sweep with a group prints its table",
        ));
    }
    let groups: Vec<DeviceGroup> = groups
        .iter()
        .map(|g| DeviceGroup::open(g).map_err(|e| if e.is_unavailable() { e.into() } else { usage(e) }))
        .collect::<anyhow::Result<_>>()?;
    if devices.is_empty() && !groups.is_empty() {
        let catalog = Catalog::builtin();
        let (entries, request) = plan(&catalog, workloads, None, sizes.as_deref(), quick, params.options())?;
        let names: Vec<String> = entries.iter().map(|e| e.name().to_owned()).collect();
        return sweep_groups(&groups, &names, &request);
    }
    let specs = backend_specs(devices)?;
    if !(budget > 0.0 && budget.is_finite()) {
        return Err(Exit::usage(format!("--budget must be a positive number of seconds, got {budget}")));
    }
    let catalog = Catalog::builtin();
    let own = expression.as_ref().map(|(_, entry)| entry as &dyn WorkloadEntry);
    let (entries, request) = plan(&catalog, workloads, own, sizes.as_deref(), quick, params.options())?;
    check_outputs(json.as_deref(), csv.as_deref(), plot.as_deref())?;
    let opened = Device::open_each(specs);
    skip_unavailable(&opened)?;
    if opened.devices.is_empty() {
        bail!("none of the requested backends can run here, so nothing was measured");
    }
    let fingerprint = Fingerprint::of(&opened).map_err(usage)?;
    out!("cpu: {} ({})", fingerprint.cpu, fingerprint.cpu_simd);
    for gpu in &fingerprint.gpus {
        out!("{gpu}");
    }
    let sweeper = Sweeper {
        devices: &opened.devices,
        request: &request,
        options: SweepOptions {
            budget: Duration::from_secs_f64(budget),
            pipelined: !no_pipelined,
            precisions: precision,
            ..SweepOptions::default()
        },
        progress: progress_bar(),
        expression: expression.as_ref().map(|(source, _)| source.as_str()),
        plot: plot.as_deref(),
    };
    let mut swept = Swept::default();
    // Whatever happens to a later workload, what was measured before it is written below.
    let outcome = sweeper.each(&entries, &mut swept);
    sweeper.progress.finish_and_clear();
    if let Some(path) = &json {
        write_json(path, &fingerprint, &swept.results)?;
    }
    if let Some(path) = &csv {
        write_csv(path, &fingerprint, &swept.results)?;
    }
    outcome?;
    if !groups.is_empty() {
        let names: Vec<String> = entries.iter().map(|e| e.name().to_owned()).collect();
        sweep_groups(&groups, &names, &request)?;
    }
    swept.verdict()
}

/// The user's expression (`--expr`, `--expr-file`), as its heading (its text, and its arrays' type where not f32) and
/// the workload entry that sweeps it; `None` when none was given.
fn user_expression(expression: &ExpressionArgs) -> anyhow::Result<Option<(String, WorkloadOf<Expression>)>> {
    let Some(source) = expression.source().map_err(usage)? else { return Ok(None) };
    let request = expression.request(&source).map_err(usage)?;
    warn_about_domain(&request)?;
    let entry = expression_entry(&request).map_err(usage)?;
    let heading = match request.dtype {
        gpuworthy::core::Dtype::F32 => source.trim().to_owned(),
        dtype => format!("{} (on {dtype} arrays)", source.trim()),
    };
    Ok(Some((heading, entry)))
}

/// The devices to compare: those asked for, else every backend's first; two devices of one backend are refused.
fn backend_specs(backends: Vec<DeviceSpec>) -> anyhow::Result<Vec<DeviceSpec>> {
    let specs = if backends.is_empty() { BackendKind::ALL.map(DeviceSpec::from).to_vec() } else { backends };
    for (i, spec) in specs.iter().enumerate() {
        if specs[..i].iter().any(|earlier| earlier.kind() == spec.kind()) {
            return Err(Exit::usage(format!(
                "--backends names two {} devices: a sweep compares backends, one device of each",
                spec.kind()
            )));
        }
    }
    Ok(specs)
}

/// The workloads to sweep (those named, else every built-in one, with the user's expression `own` last) and the
/// sizes to sweep them at, every workload's sizes read now: a bad size or option is refused before anything runs.
fn plan<'a>(
    catalog: &'a Catalog,
    workloads: Vec<String>,
    own: Option<&'a dyn WorkloadEntry>,
    sizes: Option<&str>,
    quick: bool,
    params: WorkloadOptions,
) -> anyhow::Result<(Vec<&'a dyn WorkloadEntry>, SizeRequest)> {
    let workloads = if workloads.is_empty() && own.is_none() {
        catalog.names().iter().map(|&w| w.to_owned()).collect()
    } else {
        workloads
    };
    let swept = workloads.len() + usize::from(own.is_some());
    if sizes.is_some() && swept != 1 {
        return Err(Exit::usage("--sizes needs exactly one workload"));
    }
    if let Some(flag) = params.named().first()
        && swept != 1
    {
        return Err(Exit::usage(format!("{flag} needs exactly one workload")));
    }
    let ladder = match sizes {
        Some(list) => Ladder::Listed(list.split(',').map(str::to_owned).collect()),
        None if quick => Ladder::Quick,
        None => Ladder::Full,
    };
    let request = SizeRequest { ladder, options: params };
    let mut entries = workloads.iter().map(|w| catalog.find(w)).collect::<Result<Vec<_>, _>>().map_err(usage)?;
    entries.extend(own);
    for entry in &entries {
        entry.sizes(&request).map_err(usage)?;
    }
    Ok((entries, request))
}

/// Fails now, before anything is measured, when an output asked for cannot be written.
fn check_outputs(json: Option<&Path>, csv: Option<&Path>, plot: Option<&Path>) -> anyhow::Result<()> {
    for (flag, path) in [("--json", json), ("--csv", csv)] {
        if let Some(path) = path {
            check_writable_file(flag, path)?;
        }
    }
    if let Some(dir) = plot {
        check_writable_dir("--plot", dir)?;
    }
    Ok(())
}

/// Where a sweep's workloads are measured and how each is shown: the same for every workload of one sweep.
struct Sweeper<'a> {
    /// The devices that opened.
    devices: &'a [Device],
    /// The sizes and workload options asked for.
    request: &'a SizeRequest,
    /// The time budget and paths measured.
    options: SweepOptions,
    /// The progress bar on standard error, suspended while a table is printed.
    progress: ProgressBar,
    /// The text of the user's expression, for the heading of its table.
    expression: Option<&'a str>,
    /// Where to write each workload's chart, if asked.
    plot: Option<&'a Path>,
}

/// What a sweep measured: every workload's sweep, and the sizes at which nothing could be measured beside sizes that
/// were (`workload size`).
#[derive(Default)]
struct Swept {
    results: Vec<WorkloadSweep>,
    incomplete: Vec<String>,
}

impl Sweeper<'_> {
    /// Measures each of `entries` in turn into `swept`; stops at the first that fails, what was measured before it
    /// kept in `swept`.
    fn each(&self, entries: &[&dyn WorkloadEntry], swept: &mut Swept) -> anyhow::Result<()> {
        for entry in entries {
            self.one(*entry, swept)?;
        }
        Ok(())
    }

    /// Measures one workload, refuses it when none of its sizes could be measured, shows its table and writes its
    /// chart.
    fn one(&self, entry: &dyn WorkloadEntry, swept: &mut Swept) -> anyhow::Result<()> {
        let workload = entry.name();
        let sweep =
            entry.sweep(self.devices, self.request, &self.options, &Bar(self.progress.clone())).map_err(usage)?;
        // Sizes at which nothing was measured: refused like `run` when that is every size, else said.
        let asked = entry.sizes(self.request).map_err(usage)?;
        let unmeasured: Vec<&gpuworthy::measure::names::SizeLabel> =
            asked.iter().filter(|size| !sweep.rows.iter().any(|r| r.size == **size)).collect();
        if !asked.is_empty() && unmeasured.len() == asked.len() {
            let why: Vec<String> = sweep.notes.iter().map(|n| format!("{}: {}", n.size, n.message)).collect();
            return Err(Exit::usage(format!(
                "{workload}: no size could be measured here:\n  {}",
                if why.is_empty() { "no device took it".to_owned() } else { why.join("\n  ") }
            )));
        }
        // A size left out because the time budget stopped every variant before it is not a failure: only sizes
        // refused or whose input could not be made (each has a note of its own) make the sweep incomplete.
        swept.incomplete.extend(
            unmeasured
                .iter()
                .filter(|size| sweep.notes.iter().any(|n| n.size == ***size))
                .map(|size| format!("{workload} {size}")),
        );
        self.progress.suspend(|| self.show(workload, &sweep))?;
        swept.results.push(sweep);
        if let Some(dir) = self.plot {
            write_plot(dir, swept.results.last().expect("pushed above"))?;
        }
        Ok(())
    }

    /// A workload's table under its heading, and without a GPU here what the reference GPU machines would have done
    /// with these sizes.
    fn show(&self, workload: &str, sweep: &WorkloadSweep) -> anyhow::Result<()> {
        match self.expression {
            Some(source) if workload == "expr" => out!("\n== expr: {}", source.trim()),
            _ => out!("\n== {workload}"),
        }
        out!("{}", table(sweep).trim_end());
        if !self.devices.iter().any(Device::is_gpu) {
            for line in reference_predictions(&sweep.rows)? {
                out!("{line}");
            }
        }
        Ok(())
    }
}

impl Swept {
    /// The sweep's exit: a failed check (3) before sizes at which nothing could be measured (4), else success.
    fn verdict(&self) -> anyhow::Result<()> {
        let failed: Vec<String> = self
            .results
            .iter()
            .flat_map(|sweep| sweep.failed_checks())
            .map(|r| format!("{} {}/{} at {}", r.workload, r.label, r.variant, r.size))
            .collect();
        if !failed.is_empty() {
            return Err(Exit::check_failed(format!("results failed their check: {}", failed.join(", "))));
        }
        if !self.incomplete.is_empty() {
            return Err(Exit::incomplete(format!(
                "nothing could be measured at {} (the notes under the table say why)",
                self.incomplete.join(", ")
            )));
        }
        Ok(())
    }
}

/// Under a sweep on a machine without a GPU: for each reference machine ([`gpuworthy::model::reference`]), the crossovers
/// its GPUs would give beside this machine's CPU (fitted to the CPU's rows just measured), and the prediction at the
/// largest size, labelled as predictions from a named machine.
fn reference_predictions(rows: &[gpuworthy::model::rows::Row]) -> anyhow::Result<Vec<String>> {
    let t = |s: f64| report::duration(Duration::from_secs_f64(s));
    let cpu_rows: Vec<gpuworthy::model::rows::Row> =
        rows.iter().filter(|r| r.backend == BackendKind::Cpu).cloned().collect();
    let mut lines = Vec::new();
    let swept_sizes: std::collections::BTreeSet<u64> = cpu_rows.iter().map(|r| r.bytes).collect();
    if !cpu_rows.is_empty() && swept_sizes.len() < 2 {
        // The CPU's curve is fitted through its sizes: one size gives none, and no prediction to set beside it.
        lines.push(
            "  no GPU here; a reference machine's GPUs are set beside this CPU from a curve through its times at two \
             sizes or more, and one size was swept"
                .to_owned(),
        );
        return Ok(lines);
    }
    for machine in gpuworthy::model::reference::REFERENCE_MACHINES {
        let Some(would) = machine.what_it_would_do(&cpu_rows)? else { continue };
        let show = |x: &Option<(gpuworthy::measure::names::SizeLabel, gpuworthy::DeviceLabel)>| {
            x.as_ref().map_or("none in range".to_owned(), |(s, g)| format!("{s} ({g})"))
        };
        let at = |predictions: &[gpuworthy::model::Prediction]| {
            let best = predictions.iter().find(|p| p.is_gpu);
            let cpu = predictions.iter().find(|p| !p.is_gpu);
            match (best, cpu) {
                (Some(gpu), Some(cpu)) => format!(
                    "{} {} against this CPU's {} ({})",
                    gpu.device,
                    t(gpu.total_s),
                    t(cpu.total_s),
                    if gpu.total_s < cpu.total_s {
                        format!("{:.1}x faster", cpu.total_s / gpu.total_s)
                    } else {
                        format!("{:.1}x slower", gpu.total_s / cpu.total_s)
                    }
                ),
                _ => "-".to_owned(),
            }
        };
        lines.push(format!("  no GPU here; predicted on {}, beside this CPU's rows above:", machine.attribution()?));
        lines.push(format!(
            "    crossover, data resident {}; data on the host {}",
            show(&would.resident),
            show(&would.host)
        ));
        lines.push(format!(
            "    at {}: resident {}; from the host {}",
            would.largest,
            at(&would.at_largest_resident),
            at(&would.at_largest_host)
        ));
    }
    Ok(lines)
}
