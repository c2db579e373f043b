//! `gpuworthy`: is this work worth sending to the GPU? Lists the backends this machine has, and runs workloads on
//! them with every phase measured.
//!
//! Exit codes: 0 success (also when the reader of its output goes away, as `| head` does), 1 a failure while
//! running (a device error, or a sweep in which no requested backend could run), 2 a usage error (a bad argument,
//! size or environment variable, refused before any work starts; also a sweep none of whose sizes could be
//! measured), 3 a result that failed its check against the reference (shown as FAILED in the table; whatever was
//! measured is still written), 4 a sweep with sizes at which nothing could be measured beside sizes that were (the
//! notes under its table say why).

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, bail};
use bench_suite::cli::{Cli, Command, ExpressionArgs, LessonArgs, RunArgs, SweepArgs, Target};
use bench_suite::export::{Fingerprint, write_csv, write_json, write_plot};
use bench_suite::report::{self, table};
use clap::Parser;
use gpuworthy::catalog::Catalog;
use gpuworthy::core::{Backend, BackendKind, Error};
use gpuworthy::dispatch::{CommandLineWorkload, WorkloadVisitor, visit_workload_named};
use gpuworthy::expression::{ExpressionRequest, expression_entry};
use gpuworthy::measure::{MeasureOptions, Measurement};
use gpuworthy::model::Placement;
use gpuworthy::size::{Ladder, SizeRequest};
use gpuworthy::size::{ParseSize, WorkloadOptions};
use gpuworthy::sweep::{Progress, SweepOptions};
use gpuworthy::{Device, DeviceSpec, HostMemory};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Bytes per copy when measuring a device's copy bandwidth: large enough to leave every cache behind.
const COPY_PROBE_BYTES: usize = 256 << 20;

/// An error that ends the tool with its own exit code (see the module header); any other error exits with 1.
#[derive(Debug)]
struct Exit {
    /// The process's exit code.
    code: u8,
    /// What went wrong.
    message: String,
}

impl Exit {
    /// An error in what the user asked for: exit code 2.
    fn usage(message: impl Into<String>) -> anyhow::Error {
        Exit { code: 2, message: message.into() }.into()
    }

    /// A result that failed its check against the reference: exit code 3.
    fn check_failed(message: impl Into<String>) -> anyhow::Error {
        Exit { code: 3, message: message.into() }.into()
    }

    /// A sweep with sizes at which nothing could be measured, while others were: exit code 4.
    fn incomplete(message: impl Into<String>) -> anyhow::Error {
        Exit { code: 4, message: message.into() }.into()
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// Writes a line to standard output, returning an error (rather than panicking as `println!` does) when the reader
/// has gone away.
macro_rules! out {
    ($($arg:tt)*) => {
        writeln!(std::io::stdout().lock(), $($arg)*).context("writing to standard output")?
    };
}

/// Every `GPUWORTHY_*` variable parsed once, before any work: a bad value is a usage error naming the variable.
fn check_environment() -> Result<(), Error> {
    BackendKind::required_by_env()?;
    DeviceSpec::from_env()?;
    gpuworthy::calibration::default_path()?;
    gpuworthy::cpu::simd::requested_level()?;
    gpuworthy::wgpu::check_environment()
}

/// Fails now, before anything is measured, when `path` (a file) cannot be written.
fn check_writable_file(flag: &str, path: &std::path::Path) -> anyhow::Result<()> {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map(drop)
        .map_err(|e| Exit::usage(format!("{flag} {}: cannot write there: {e}", path.display())))
}

/// Fails now, before anything is measured, when files cannot be written in `dir` (made if missing).
fn check_writable_dir(flag: &str, dir: &std::path::Path) -> anyhow::Result<()> {
    let probe = dir.join(".gpuworthy-write-test");
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&probe, b""))
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| Exit::usage(format!("{flag} {}: cannot write there: {e}", dir.display())))
}

/// Turns the library's input errors into usage errors.
fn usage(e: Error) -> anyhow::Error {
    match e {
        // The message alone: an expression's error already reads `error: ...` with its caret below.
        Error::InvalidInput(message) => Exit::usage(message),
        Error::UnknownVariant { .. } | Error::TooLarge { .. } => Exit::usage(e.to_string()),
        other => other.into(),
    }
}

fn devices() -> anyhow::Result<()> {
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

/// The sweep's progress on a terminal progress bar.
struct Bar(ProgressBar);

/// Where standard error is piped, the longest time between two progress lines.
const PIPED_LINE_EVERY: Duration = Duration::from_secs(5);

impl Progress for Bar {
    fn plan(&self, steps: u64) {
        self.0.inc_length(steps);
    }
    fn advance(&self, steps: u64) {
        self.0.inc(steps);
    }
    /// On a terminal, the bar's message. Where standard error is not a terminal (a pipe, a file, a CI log) the bar
    /// draws nothing, so a line goes there whenever the work moves to another workload, and at least every
    /// [`PIPED_LINE_EVERY`] otherwise, with the elapsed time: a long calibration piped to a file shows where it is.
    fn now_measuring(&self, what: String) {
        use std::io::IsTerminal;
        use std::sync::atomic::{AtomicU64, Ordering};
        /// The elapsed time of the last line, in milliseconds.
        static LAST_LINE_MS: AtomicU64 = AtomicU64::new(0);
        if !std::io::stderr().is_terminal() {
            let workload = what.split_whitespace().next().unwrap_or_default().to_owned();
            let previous = self.0.message();
            let elapsed = self.0.elapsed();
            let since =
                elapsed.as_millis() as u64 - LAST_LINE_MS.load(Ordering::Relaxed).min(elapsed.as_millis() as u64);
            if previous.split_whitespace().next() != Some(workload.as_str())
                || since >= PIPED_LINE_EVERY.as_millis() as u64
            {
                eprintln!("gpuworthy: [{:>4.0} s] {what}", elapsed.as_secs_f64());
                LAST_LINE_MS.store(elapsed.as_millis() as u64, Ordering::Relaxed);
            }
        }
        self.0.set_message(what);
    }
}

fn describe(backend: &Device) -> anyhow::Result<()> {
    let device = backend.device();
    let kind = if backend.kind().is_gpu() && !backend.is_gpu() { ", a CPU adapter: not a GPU" } else { "" };
    out!("{:<5} available: {} ({}{kind})", backend.kind(), device.name, device.driver);
    for (name, value) in &device.limits {
        out!("      {name}: {value}");
    }
    Ok(())
}

/// What `gpuworthy run` was asked to do.
struct RunRequest<'a> {
    /// A line on how the host data moves, where it is not the default.
    transfer_note: Option<String>,
    size: Option<&'a str>,
    variant: Option<&'a str>,
    params: WorkloadOptions,
    lessons: &'a LessonArgs,
    options: MeasureOptions,
}

/// [`run_on`] for the workload a visitor is given.
struct RunOn<'a> {
    target: Result<Vec<(String, Device)>, ()>,
    request: &'a RunRequest<'a>,
}

impl WorkloadVisitor for RunOn<'_> {
    type Output = anyhow::Result<()>;
    fn visit<W: CommandLineWorkload>(&mut self) -> anyhow::Result<()> {
        run_on::<W>(self.target.clone(), self.request)
    }
}

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
    let (devices, chosen) = match target {
        Ok(devices) => (devices, None),
        Err(()) => {
            let choice = gpuworthy::auto::global()?.decide::<W>(&params, Placement::Host, None)?;
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
        (None, None) => backend.variants::<W>().into_iter().map(str::to_owned).collect(),
    };
    backend.check_size::<W>(&params).map_err(usage)?;
    let input = W::generate(&params, options.seed).map_err(usage)?;
    let mut rows: Vec<Measurement> = Vec::new();
    for (suffix, device) in &devices {
        for v in &variants {
            let mut m = device.measure::<W>(v, &input, options).map_err(usage)?;
            m.variant.push_str(suffix);
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
    let t = |d: Duration| report::duration(d);
    if request.lessons.no_sync {
        let clocks = variants
            .iter()
            .map(|v| gpuworthy::measure::compare_clocks::<W, _>(backend, v, &input, options).map(|c| (v.clone(), c)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(usage)?;
        print_clocks(&clocks, backend.kind().is_gpu())?;
    }
    if let Some(k) = request.lessons.launches {
        out!("  per kernel, with the data uploaded once and downloaded once around {k} kernel(s):");
        for v in &variants {
            let one =
                gpuworthy::measure::launches_per_transfer::<W, _>(backend, v, &input, 1, options).map_err(usage)?;
            let many = gpuworthy::measure::launches_per_transfer::<W, _>(backend, v, &input, k as usize, options)
                .map_err(usage)?;
            out!("    {:<14} {k} per transfer: {} per kernel (1 per transfer: {})", v, t(many.median), t(one.median));
        }
    }
    if rows.iter().any(|m| matches!(m.check, Some(Err(_)))) {
        return Err(Exit::check_failed("a variant's output does not match the reference"));
    }
    Ok(())
}

/// The model's predicted phases on each device, fastest first, the one auto chose (device, variant, pipelined) marked.
fn print_predictions(
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

/// `gpuworthy explain --expr`: an expression predicted from this machine's calibration: from its own curves where
/// `calibrate --expr` measured it, else from the base expression of its kind at the same bytes moved plus its
/// arithmetic and special functions at each device's calibrated rates, and said to be a prediction.
fn explain_expression(request: &ExpressionRequest, size: &str, placement: Placement) -> anyhow::Result<()> {
    use gpuworthy::core::Workload;
    use gpuworthy::core::expr::Expression;
    let n = gpuworthy::size::parse_count(size).map_err(usage)?;
    let params = request.params(n).map_err(usage)?;
    // Refused like `run`: an input that could not be made here is not predicted.
    gpuworthy::core::memory::check_host_memory::<Expression>(&params).map_err(usage)?;
    let cost = Expression::cost(&params);
    let per_element = params.program.cost_per_element();
    let auto = gpuworthy::auto::Auto::open()?;
    out!(
        "`{}` at {n} ({} bytes moved; per element {} arithmetic operation(s) and {} special function(s)), {placement}:",
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

/// `gpuworthy explain`: the model's prediction for each device, auto's choice and why, the predicted crossovers.
fn explain<W: CommandLineWorkload>(size: &str, placement: Placement) -> anyhow::Result<()> {
    let params = W::Params::parse_size(size).map_err(usage)?;
    // Refused like `run`: a size whose input could not be made on this machine is not predicted.
    gpuworthy::core::memory::check_host_memory::<W>(&params).map_err(usage)?;
    let cost = W::cost(&params);
    let auto = gpuworthy::auto::Auto::open()?;
    if let Some(why) = &auto.uncalibrated {
        eprintln!("gpuworthy: warning: {why}");
    }
    let choice = auto.choose::<W>(&params, placement)?;
    out!("{} {params} ({} bytes moved, {} flops), {placement}:", W::NAME, cost.bytes, cost.flops);
    let chosen = (choice.device.label(), choice.variant, choice.pipelined);
    print_predictions(&choice.predictions, Some(&chosen), placement)?;
    out!("auto: {} ({})", chosen_label(&choice), choice.reason);
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
        let ladder: Vec<(String, gpuworthy::core::Cost)> =
            W::ladder().iter().map(|p| (p.to_string(), W::cost(p))).collect();
        let show = |x: Option<(String, gpuworthy::DeviceLabel)>| {
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

/// The note under a table whose end-to-end column went through CUDA's pipelined path.
fn pipelined_note() -> String {
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
fn chosen_label(choice: &gpuworthy::auto::Choice) -> String {
    let path = if choice.pipelined { ", pipelined" } else { "" };
    format!("{} {}{path}", choice.device.label(), choice.variant)
}

/// `gpuworthy calibrate [--evaluate]`.
/// `gpuworthy calibrate --expr`: one expression measured over its calibration ladder and added to the stored
/// calibration, which must exist (its base expressions and rates come from a whole calibration).
fn calibrate_one_expression(request: &ExpressionRequest) -> anyhow::Result<()> {
    use gpuworthy::calibration::{Calibration, CalibrationDevices, Loaded, MachineFingerprint, default_path};
    let path = default_path()
        .map_err(usage)?
        .ok_or_else(|| Exit::usage("no cache directory is known: set GPUWORTHY_CALIBRATION to a file path"))?;
    let opened = Device::all_available();
    let mut calibration = match Calibration::load(&path, &MachineFingerprint::of(&opened.devices)) {
        Loaded::Calibrated(c) => c,
        Loaded::Missing(path) => {
            bail!("{} does not exist: run `gpuworthy calibrate` first, then add your expression", path.display())
        }
        Loaded::Ignored(why) => bail!("{why}"),
    };
    let progress = calibration_progress();
    let started = std::time::Instant::now();
    let template = request.params(0).map_err(usage)?;
    let part = gpuworthy::expression::calibrate_expression(
        &CalibrationDevices::of(&opened.devices),
        &template,
        &Bar(progress.clone()),
    );
    progress.finish_and_clear();
    let name = part.workload;
    calibration.merge(Calibration::from_parts(&opened.devices, vec![part], started));
    calibration.save(&path).map_err(usage)?;
    out!("calibrated `{name}` in {:.1} s, added to {}", started.elapsed().as_secs_f64(), path.display());
    out!("  explain --expr and auto now predict it from its own curves");
    Ok(())
}

/// The progress bar of calibration and evaluation.
fn calibration_progress() -> ProgressBar {
    ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .expect("a valid template"),
    )
}

fn calibrate(evaluate: bool, json: Option<PathBuf>, expressions_only: bool) -> anyhow::Result<()> {
    use gpuworthy::calibration::{Calibration, Loaded, MachineFingerprint, default_path};
    let path = default_path()
        .map_err(usage)?
        .ok_or_else(|| Exit::usage("no cache directory is known: set GPUWORTHY_CALIBRATION to a file path"))?;
    if let Some(json) = &json {
        if !evaluate {
            return Err(Exit::usage("--json goes with --evaluate"));
        }
        check_writable_file("--json", json)?;
    }
    let opened = Device::all_available();
    for (spec, why) in &opened.unavailable {
        if !why.is_unavailable() {
            return Err(usage(Error::invalid(why.to_string())));
        }
        eprintln!("gpuworthy: skipping {spec}: {why}");
    }
    let progress = calibration_progress();
    let bar = Bar(progress.clone());
    if !evaluate {
        // The built-in workloads first (their calibration starts by warming the GPUs up), then the expressions, on
        // devices already busy, as the evaluation finds them.
        let calibration = if expressions_only {
            gpuworthy::catalog::warm_start(&opened.devices, &bar);
            let expressions = gpuworthy::expression::calibrate_expressions(&opened.devices, &bar);
            match Calibration::load(&path, &MachineFingerprint::of(&opened.devices)) {
                Loaded::Calibrated(mut c) => {
                    c.merge(expressions);
                    *c
                }
                Loaded::Missing(_) | Loaded::Ignored(_) => expressions,
            }
        } else {
            let started = std::time::Instant::now();
            let mut c = gpuworthy::catalog::calibrate(&opened.devices, &Catalog::builtin().entries(), &bar);
            c.merge(gpuworthy::expression::calibrate_expressions(&opened.devices, &bar));
            c.took_s = started.elapsed().as_secs_f64();
            c
        };
        progress.finish_and_clear();
        calibration.save(&path).map_err(usage)?;
        out!("calibrated in {:.0} s, saved to {}", calibration.took_s, path.display());
        for device in &calibration.model.devices {
            let variants: usize = device.workloads.iter().map(|w| w.variants.len()).sum();
            let streaming = device
                .stream_s_per_byte
                .map_or(String::new(), |s| format!("; streams {:.0} GB/s past its caches", 1e-9 / s));
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
            out!("  {}: {} workloads, {variants} variants fitted{streaming}", device.label, device.workloads.len());
        }
        return Ok(());
    }
    let calibration = match Calibration::load(&path, &MachineFingerprint::of(&opened.devices)) {
        Loaded::Calibrated(c) => c,
        Loaded::Missing(path) => bail!("{} does not exist: run `gpuworthy calibrate` first", path.display()),
        Loaded::Ignored(why) => bail!("{why}"),
    };
    let mut evaluation = if expressions_only {
        gpuworthy::evaluation::Evaluation { points: Vec::new() }
    } else {
        gpuworthy::catalog::evaluate(&calibration, &opened.devices, &Catalog::builtin().entries(), &bar)
    };
    let auto = gpuworthy::auto::Auto::with_model(opened.devices.clone(), calibration.model.clone());
    // Each expression's points under its own text, numbered in the table's workload column; a line per expression as
    // it ends, so that a long evaluation piped to a file shows where it is.
    gpuworthy::expression::compile_evaluation_expressions(&opened.devices);
    const NAMES: [&str; gpuworthy::expression::EVALUATION_EXPRESSIONS.len()] =
        ["expr1", "expr2", "expr3", "expr4", "expr5", "expr6", "expr7", "expr8", "expr9", "expr10"];
    for ((source, scalars), name) in gpuworthy::expression::EVALUATION_EXPRESSIONS.iter().zip(NAMES) {
        let points =
            gpuworthy::expression::evaluate_expression(&calibration, &auto, source, scalars, &bar).map_err(usage)?;
        let within = points.iter().filter(|p| p.regret.is_some_and(|r| r <= 1.10)).count();
        progress.suspend(|| -> anyhow::Result<()> {
            out!("{name}: {source} ({within} of {} points within 10%)", points.len());
            Ok(())
        })?;
        evaluation
            .points
            .extend(points.into_iter().map(|p| gpuworthy::evaluation::EvaluationPoint { workload: name, ..p }));
    }
    progress.finish_and_clear();
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
    let (measured, within, median, worst) = evaluation.summary();
    out!(
        "{} points, {measured} with auto's choice measured: within 10% of the fastest at {within} ({:.0}%), median \
         regret {median:.2}x, worst {worst:.2}x; {} settled by a trial (predictions too close to call, timed on the \
         spot)",
        evaluation.points.len(),
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
    if let Some(json) = &json {
        let text = serde_json::to_string_pretty(&evaluation)?;
        std::fs::write(json, text).with_context(|| format!("writing {}", json.display()))?;
    }
    // The error is kept with the calibration: explain says it, and auto calls two devices within it a toss-up.
    let regrets = evaluation.regrets();
    if !regrets.is_empty() {
        let mut calibration = calibration;
        let percentile_90 = |mut values: Vec<f64>| {
            values.sort_by(f64::total_cmp);
            values.get((values.len() * 9).div_ceil(10).saturating_sub(1)).copied()
        };
        let p90 = percentile_90(regrets).unwrap_or(f64::NAN);
        let p90_error = percentile_90(evaluation.points.iter().filter_map(|p| p.prediction_error()).collect());
        calibration.model.error = Some(gpuworthy::model::ModelError {
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
        calibration.save(&path).map_err(usage)?;
        if let Some(e) = p90_error {
            out!("the predictions for auto's choices: 90% within {:.0}% of the measured time", 100.0 * e);
        }
        out!("two predictions closer than {:.0}% are called a toss-up from now on", 100.0 * margin);
    }
    Ok(())
}

/// The model's error as `calibrate --evaluate` measured it, in words, if it did.
fn model_error(auto: &gpuworthy::auto::Auto) -> Option<String> {
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

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Calibrate { evaluate, json, expressions, expression } => {
            calibrate_command(evaluate, json, expressions, &expression)
        }
        Command::Explain { workload, expression, size, resident, pinned, on, what_if } => {
            explain_command(workload, &expression, &size, placement_of(resident, pinned), on, what_if.what_if())
        }
        Command::Devices => devices(),
        Command::Sweep(args) => sweep(args),
        Command::Transfers { size, backend } => transfers(&size, backend),
        Command::Roofline { files, plot } => roofline(&files, plot.as_deref()),
        Command::Run(args) => run_workload(args),
    }
}

/// `gpuworthy calibrate`: this machine's calibration, the evaluation of `auto` (`--evaluate`), or one expression's own
/// curves (`--expr`).
fn calibrate_command(
    evaluate: bool,
    json: Option<PathBuf>,
    expressions: bool,
    expression: &ExpressionArgs,
) -> anyhow::Result<()> {
    match expression.source().map_err(usage)? {
        Some(_) if evaluate => {
            Err(Exit::usage("--evaluate measures the expressions calibration never saw: drop --expr"))
        }
        Some(source) => {
            let request =
                ExpressionRequest::from_command_line(&source, &expression.set, &expression.range).map_err(usage)?;
            warn_about_domain(&request)?;
            calibrate_one_expression(&request)
        }
        None => calibrate(evaluate, json, expressions),
    }
}

/// Where `--resident` and `--pinned` put a workload's data.
fn placement_of(resident: bool, pinned: bool) -> Placement {
    match (resident, pinned) {
        (true, _) => Placement::Resident,
        (false, true) => Placement::PinnedHost,
        (false, false) => Placement::Host,
    }
}

/// `gpuworthy explain`: where a built-in workload or an expression should run at a size, on this machine or, with
/// `--on`, on a reference machine (and a GPU described by the what-if flags).
fn explain_command(
    workload: Option<String>,
    expression: &ExpressionArgs,
    size: &str,
    placement: Placement,
    on: Option<String>,
    what_if: gpuworthy::reference::WhatIf,
) -> anyhow::Result<()> {
    let Some(source) = expression.source().map_err(usage)? else {
        let workload = workload.ok_or_else(|| Exit::usage("name a workload, or give --expr"))?;
        return visit_workload_named(&workload, &mut Explain { size, placement, on: on.as_deref(), what_if })
            .map_err(usage)?;
    };
    let request = ExpressionRequest::from_command_line(&source, &expression.set, &expression.range).map_err(usage)?;
    warn_about_domain(&request)?;
    match on {
        Some(_) if what_if.is_some() => Err(Exit::usage(
            "--gpu-memory, --gpu-compute, --link and --unified describe a GPU for the built-in workloads; an \
             expression's special functions were measured on the reference GPU alone",
        )),
        Some(machine) => explain_expression_on(&request, size, placement, &machine),
        None => explain_expression(&request, size, placement),
    }
}

/// `gpuworthy roofline`: the sweeps in `files` placed under their devices' measured roofs, as a table and, with
/// `plot`, a chart.
fn roofline(files: &[PathBuf], plot: Option<&Path>) -> anyhow::Result<()> {
    let mut texts = Vec::with_capacity(files.len());
    for file in files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| Exit::usage(format!("cannot read the sweep {}: {e}", file.display())))?;
        texts.push((file.display().to_string(), text));
    }
    let (points, roofs) = bench_suite::roofline::from_json(&texts).map_err(|e| Exit::usage(format!("{e:#}")))?;
    print!("{}", bench_suite::roofline::table(&points, &roofs));
    if let Some(path) = plot {
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        let title = format!("roofline of {}", names.join(", "));
        bench_suite::roofline::write_svg(path, &title, &points, &roofs)?;
        println!("chart: {}", path.display());
    }
    Ok(())
}

/// [`explain`] for the workload a visitor is given.
struct Explain<'a> {
    size: &'a str,
    placement: Placement,
    /// A reference machine to predict on (`--on`).
    on: Option<&'a str>,
    /// How the GPU differs from the reference machine's, if it does.
    what_if: gpuworthy::reference::WhatIf,
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
                let ladder: Vec<(String, gpuworthy::core::Cost)> =
                    W::ladder().iter().map(|p| (p.to_string(), W::cost(p))).collect();
                explain_on::<W>(&params, self.placement, machine, &self.what_if, &headline, &ladder, |cpu, progress| {
                    let devices = gpuworthy::calibration::CalibrationDevices::of(std::slice::from_ref(cpu));
                    let part = gpuworthy::calibration::calibrate_workload::<W>(&devices, progress);
                    let mut calibration = gpuworthy::calibration::Calibration::from_parts(
                        std::slice::from_ref(cpu),
                        vec![part],
                        std::time::Instant::now(),
                    );
                    // The streaming probe too, so that sizes past the ladder are bounded as a calibration bounds them.
                    let streaming = gpuworthy::calibration::measure_streaming(std::slice::from_ref(cpu), progress);
                    for device in &mut calibration.model.devices {
                        device.stream_s_per_byte =
                            streaming.iter().find(|(label, _)| *label == device.label).map(|(_, s)| *s);
                    }
                    calibration
                })
            }
            None => explain::<W>(self.size, self.placement),
        }
    }
}

/// `gpuworthy explain --on MACHINE`: `W` at `params` predicted on this machine's CPU beside a reference machine's
/// GPUs ([`gpuworthy::reference`]). The CPU's curves come from this machine's calibration where it has them, else
/// from `calibrate_cpu` run now (the workload's calibration ladder on the CPU alone: seconds).
fn explain_on<W: gpuworthy::device::DeviceWorkload>(
    params: &W::Params,
    placement: Placement,
    machine: &str,
    what_if: &gpuworthy::reference::WhatIf,
    headline: &str,
    ladder: &[(String, gpuworthy::core::Cost)],
    calibrate_cpu: impl FnOnce(&Device, &dyn Progress) -> gpuworthy::calibration::Calibration,
) -> anyhow::Result<()> {
    use gpuworthy::auto::{Auto, verdict};
    let machine = gpuworthy::reference::find(machine).map_err(usage)?;
    let attribution = match what_if.is_some() {
        false => machine.attribution()?,
        true => format!("a what-if GPU: {}'s with {}", machine.attribution()?, what_if.describe()),
    };
    let cpu = Device::cpu()?;
    let local = Auto::open()?.model.unwrap_or_default();
    let predict = |local: &gpuworthy::model::Model| -> anyhow::Result<_> {
        let auto = Auto::with_model(vec![cpu.clone()], machine.beside_as(local, what_if).map_err(usage)?);
        let predicted = auto.predict::<W>(params, placement);
        let has_cpu = predicted.as_ref().is_some_and(|(p, _)| p.iter().any(|p| !p.is_gpu));
        Ok((auto, predicted, has_cpu))
    };
    let (mut auto, mut predicted, has_cpu) = predict(&local)?;
    let mut cpu_from = "this machine's calibration";
    if !has_cpu {
        let progress = calibration_progress();
        progress.set_message(format!("measuring this CPU for {} (its calibration has none)", W::NAME));
        let measured = calibrate_cpu(&cpu, &Bar(progress.clone()));
        progress.finish_and_clear();
        let mut local = local;
        local.merge(measured.model);
        (auto, predicted, _) = predict(&local)?;
        cpu_from = "measured just now on this machine (`gpuworthy calibrate` keeps them)";
    }
    out!("{headline}, {placement}, on this machine's CPU beside {attribution}:");
    let Some((predictions, _)) = predicted.filter(|(p, _)| !p.is_empty()) else {
        out!("  nothing to predict from: {} does not know this workload", machine.name);
        return Ok(());
    };
    print_predictions(&predictions, None, placement)?;
    if let Some(verdict) = verdict(&predictions, auto.toss_up_margin()) {
        out!("fastest: {verdict}");
    }
    if let Some(model) = &auto.model
        && !ladder.is_empty()
    {
        let show = |x: Option<(String, gpuworthy::DeviceLabel)>| {
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
fn explain_expression_on(
    request: &ExpressionRequest,
    size: &str,
    placement: Placement,
    machine: &str,
) -> anyhow::Result<()> {
    use gpuworthy::core::Workload;
    use gpuworthy::core::expr::Expression;
    let n = gpuworthy::size::parse_count(size).map_err(usage)?;
    let params = request.params(n).map_err(usage)?;
    gpuworthy::core::memory::check_host_memory::<Expression>(&params).map_err(usage)?;
    let cost = Expression::cost(&params);
    let headline = format!("`{}` at {n} ({} bytes moved)", request.source.trim(), cost.bytes);
    explain_on::<Expression>(&params, placement, machine, &Default::default(), &headline, &[], |cpu, progress| {
        gpuworthy::expression::calibrate_expressions(std::slice::from_ref(cpu), progress)
    })
}

/// `gpuworthy sweep`: every workload asked for, from the run-time list of workloads.
fn sweep(args: SweepArgs) -> anyhow::Result<()> {
    let SweepArgs { workloads, expression, backends, quick, sizes, budget, no_pipelined, json, csv, plot, params } =
        args;
    // An expression of the user's own is swept alone, as one more workload.
    let expression_entry = match expression.source().map_err(usage)? {
        Some(source) => {
            let request =
                ExpressionRequest::from_command_line(&source, &expression.set, &expression.range).map_err(usage)?;
            warn_about_domain(&request)?;
            Some((source, expression_entry(&request).map_err(usage)?))
        }
        None => None,
    };
    let specs = if backends.is_empty() { BackendKind::ALL.map(DeviceSpec::from).to_vec() } else { backends };
    for (i, spec) in specs.iter().enumerate() {
        if specs[..i].iter().any(|earlier| earlier.kind() == spec.kind()) {
            return Err(Exit::usage(format!(
                "--backends names two {} devices: a sweep compares backends, one device of each",
                spec.kind()
            )));
        }
    }
    if !(budget > 0.0 && budget.is_finite()) {
        return Err(Exit::usage(format!("--budget must be a positive number of seconds, got {budget}")));
    }
    let catalog = Catalog::builtin();
    let workloads = if workloads.is_empty() && expression_entry.is_none() {
        catalog.names().iter().map(|&w| w.to_owned()).collect()
    } else {
        workloads
    };
    let swept = workloads.len() + usize::from(expression_entry.is_some());
    if sizes.is_some() && swept != 1 {
        return Err(Exit::usage("--sizes needs exactly one workload"));
    }
    let params = params.options();
    if let Some(flag) = params.named().first()
        && swept != 1
    {
        return Err(Exit::usage(format!("{flag} needs exactly one workload")));
    }
    let ladder = match &sizes {
        Some(list) => Ladder::Listed(list.split(',').map(str::to_owned).collect()),
        None if quick => Ladder::Quick,
        None => Ladder::Full,
    };
    let request = SizeRequest { ladder, options: params };
    // Every workload's sizes are read before anything is measured: a bad size or option is refused up front.
    let mut entries = workloads.iter().map(|w| catalog.find(w)).collect::<Result<Vec<_>, _>>().map_err(usage)?;
    if let Some((_, entry)) = &expression_entry {
        entries.push(entry);
    }
    for entry in &entries {
        entry.sizes(&request).map_err(usage)?;
    }
    for (flag, path) in [("--json", &json), ("--csv", &csv)] {
        if let Some(path) = path {
            check_writable_file(flag, path)?;
        }
    }
    if let Some(dir) = &plot {
        check_writable_dir("--plot", dir)?;
    }
    let opened = Device::open_each(specs);
    for (spec, why) in &opened.unavailable {
        if !why.is_unavailable() {
            return Err(usage(Error::invalid(why.to_string())));
        }
        eprintln!("gpuworthy: skipping {spec}: {why}");
    }
    if opened.devices.is_empty() {
        bail!("none of the requested backends can run here, so nothing was measured");
    }
    let options =
        SweepOptions { budget: Duration::from_secs_f64(budget), pipelined: !no_pipelined, ..SweepOptions::default() };
    let fingerprint = Fingerprint::of(&opened).map_err(usage)?;
    out!("cpu: {} ({})", fingerprint.cpu, fingerprint.cpu_simd);
    for gpu in &fingerprint.gpus {
        out!("{gpu}");
    }
    let progress = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .expect("a valid template"),
    );
    let mut results = Vec::new();
    let mut incomplete: Vec<String> = Vec::new();
    // Whatever happens to a later workload, what was measured before it is written below.
    let outcome = (|| -> anyhow::Result<()> {
        for entry in &entries {
            let workload = entry.name();
            let sweep = entry.sweep(&opened.devices, &request, &options, &Bar(progress.clone())).map_err(usage)?;
            // Sizes at which nothing was measured: refused like `run` when that is every size, else said.
            let asked = entry.sizes(&request).map_err(usage)?;
            let unmeasured: Vec<&String> =
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
            incomplete.extend(
                unmeasured
                    .iter()
                    .filter(|size| sweep.notes.iter().any(|n| n.size == ***size))
                    .map(|size| format!("{workload} {size}")),
            );
            progress.suspend(|| -> anyhow::Result<()> {
                match &expression_entry {
                    Some((source, _)) if workload == "expr" => out!("\n== expr: {}", source.trim()),
                    _ => out!("\n== {workload}"),
                }
                out!("{}", table(&sweep).trim_end());
                // Without a GPU here, what the reference GPU machines would have done with these sizes.
                if !opened.devices.iter().any(Device::is_gpu) {
                    for line in reference_predictions(&sweep.rows)? {
                        out!("{line}");
                    }
                }
                Ok(())
            })?;
            results.push(sweep);
            if let Some(dir) = &plot {
                write_plot(dir, results.last().expect("pushed above"))?;
            }
        }
        Ok(())
    })();
    progress.finish_and_clear();
    if let Some(path) = &json {
        write_json(path, &fingerprint, &results)?;
    }
    if let Some(path) = &csv {
        write_csv(path, &fingerprint, &results)?;
    }
    outcome?;
    let failed: Vec<String> = results
        .iter()
        .flat_map(|sweep| sweep.failed_checks())
        .map(|r| format!("{} {}/{} at {}", r.workload, r.label, r.variant, r.size))
        .collect();
    if !failed.is_empty() {
        return Err(Exit::check_failed(format!("results failed their check: {}", failed.join(", "))));
    }
    if !incomplete.is_empty() {
        return Err(Exit::incomplete(format!(
            "nothing could be measured at {} (the notes under the table say why)",
            incomplete.join(", ")
        )));
    }
    Ok(())
}

/// Under a sweep on a machine without a GPU: for each reference machine ([`gpuworthy::reference`]), the crossovers
/// its GPUs would give beside this machine's CPU (fitted to the CPU's rows just measured), and the prediction at the
/// largest size, labelled as predictions from a named machine.
fn reference_predictions(rows: &[gpuworthy::rows::Row]) -> anyhow::Result<Vec<String>> {
    let t = |s: f64| report::duration(Duration::from_secs_f64(s));
    let cpu_rows: Vec<gpuworthy::rows::Row> = rows.iter().filter(|r| r.backend == BackendKind::Cpu).cloned().collect();
    let mut lines = Vec::new();
    for machine in gpuworthy::reference::REFERENCE_MACHINES {
        let Some(would) = machine.what_it_would_do(&cpu_rows)? else { continue };
        let show = |x: &Option<(String, gpuworthy::DeviceLabel)>| {
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

/// `gpuworthy transfers`: a CUDA device's copy rates, pageable and pinned.
fn transfers(size: &str, backend: DeviceSpec) -> anyhow::Result<()> {
    let bytes = gpuworthy::size::parse_count(size).map_err(usage)?;
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

/// `gpuworthy run`: one workload at one size on one device (or auto's), every variant, every phase.
fn run_workload(args: RunArgs) -> anyhow::Result<()> {
    let RunArgs {
        workload,
        expression,
        size,
        backend,
        variant,
        quick,
        no_validate,
        pinned,
        pipelined,
        reuse_output,
        params,
        lessons,
    } = args;
    let mut options = if quick { MeasureOptions::quick() } else { MeasureOptions::default() };
    options.validate = !no_validate;
    options.reuse_output = reuse_output;
    if lessons.no_spin_up {
        options.spin_up = Duration::ZERO;
    }
    if let Some(source) = &expression.source().map_err(usage)? {
        let memory = match (pinned, pipelined) {
            (_, true) => Some(HostMemory::Pipelined),
            (true, false) => Some(HostMemory::Pinned),
            (false, false) => None,
        };
        if memory.is_some() && !matches!(backend, Some(Target::Device(DeviceSpec::Cuda { .. }))) {
            let flag = if pipelined { "--pipelined" } else { "--pinned" };
            return Err(Exit::usage(format!("{flag} applies to CUDA devices: add --backend cuda")));
        }
        if !params.options().is_empty() || !lessons.block_size.is_empty() || lessons.launches.is_some() {
            return Err(Exit::usage("workload options, --block-size and --launches do not apply to --expr"));
        }
        let only = variant.as_deref();
        let how = ExpressionRun { only, memory, no_sync: lessons.no_sync };
        let request =
            ExpressionRequest::from_command_line(source, &expression.set, &expression.range).map_err(usage)?;
        warn_about_domain(&request)?;
        return run_expression(&request, size.as_deref(), backend, &how, &options);
    }
    let workload = workload.ok_or_else(|| Exit::usage("name a workload, or give --expr"))?;
    let backend = backend.unwrap_or(Target::Device(DeviceSpec::Cpu));
    let cuda_only = |flag: &str, target: &Target| match target {
        Target::Device(DeviceSpec::Cuda { .. }) => Ok(()),
        Target::Device(spec) => Err(Exit::usage(format!("{flag} applies to CUDA devices, not {spec}"))),
        Target::Auto => Err(Exit::usage(format!("{flag} applies to CUDA devices, not auto"))),
    };
    if pinned {
        cuda_only("--pinned", &backend)?;
    }
    if pipelined {
        cuda_only("--pipelined", &backend)?;
    }
    if !lessons.block_size.is_empty() {
        match &backend {
            Target::Device(DeviceSpec::Cuda { .. } | DeviceSpec::Wgpu { .. }) => {}
            Target::Device(spec) => {
                return Err(Exit::usage(format!("--block-size applies to CUDA and wgpu devices, not {spec}")));
            }
            Target::Auto => return Err(Exit::usage("--block-size applies to CUDA and wgpu devices, not auto")),
        }
        if !["square", "saxpy"].contains(&workload.as_str()) {
            return Err(Exit::usage(format!(
                "--block-size applies to the elementwise workloads (square, saxpy), not {workload}"
            )));
        }
    }
    // One device per block size asked for (each opened afresh, so that it can be changed), else one.
    let devices = match backend {
        Target::Device(spec) => {
            let open = || -> anyhow::Result<Device> {
                match &spec {
                    DeviceSpec::Cuda { .. } if pinned || pipelined => {
                        let memory = if pipelined { HostMemory::Pipelined } else { HostMemory::Pinned };
                        Ok(Device::open_with_host_memory(spec.clone(), memory)?)
                    }
                    _ => Device::open(spec.clone()).map_err(|e| if e.is_unavailable() { e.into() } else { usage(e) }),
                }
            };
            if lessons.block_size.is_empty() {
                Ok(vec![(String::new(), open()?)])
            } else {
                // CUDA's blocks are `b`, wgpu's workgroups `wg`, as each API names them.
                let mark = if matches!(spec, DeviceSpec::Cuda { .. }) { "b" } else { "wg" };
                let mut devices = Vec::new();
                for &threads in &lessons.block_size {
                    let device = open()?.with_elementwise_block_size(threads).map_err(usage)?;
                    devices.push((format!(" {mark}{threads}"), device));
                }
                Ok(devices)
            }
        }
        Target::Auto => Err(()),
    };
    let transfer_note = pipelined.then(pipelined_note);
    let request = RunRequest {
        transfer_note,
        size: size.as_deref(),
        variant: variant.as_deref(),
        params: params.options(),
        lessons: &lessons,
        options,
    };
    visit_workload_named(&workload, &mut RunOn { target: devices, request: &request }).map_err(usage)?
}

/// Warns on standard error when a function of the expression is outside its domain at every element its inputs'
/// ranges give ([`ExpressionRequest::domain_warning`]).
fn warn_about_domain(request: &ExpressionRequest) -> anyhow::Result<()> {
    if let Some(warning) = request.domain_warning().map_err(usage)? {
        eprintln!("gpuworthy: warning: {warning}");
    }
    Ok(())
}

/// How `gpuworthy run --expr` measures: one variant or all, how a CUDA device moves data, and whether to show the
/// three clocks.
#[derive(Debug, Clone, Copy)]
struct ExpressionRun<'a> {
    only: Option<&'a str>,
    memory: Option<HostMemory>,
    no_sync: bool,
}

/// The `--no-sync` lesson: each variant's launch timed by the host clock without synchronising, synchronised, and by
/// the device timer.
fn print_clocks(clocks: &[(String, gpuworthy::measure::ClockComparison)], on_gpu: bool) -> anyhow::Result<()> {
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

/// `gpuworthy run --expr`: a user's expression, checked against its bounded reference and measured phase by phase
/// on `target` (every available device when `None`), in the table of `gpuworthy run`.
fn run_expression(
    request: &ExpressionRequest,
    size: Option<&str>,
    target: Option<Target>,
    how: &ExpressionRun<'_>,
    options: &MeasureOptions,
) -> anyhow::Result<()> {
    let ExpressionRun { only, memory, no_sync } = *how;
    use gpuworthy::core::Workload;
    use gpuworthy::core::expr::Expression;
    let source = request.source.as_str();
    let n = match size {
        Some(s) => gpuworthy::size::parse_count(s).map_err(usage)?,
        None => 1 << 20,
    };
    let params = request.params(n).map_err(usage)?;
    let program_is_elementwise = params.program.reduction.is_none();
    let devices = match target {
        None => Device::all_available().devices,
        Some(Target::Device(spec @ DeviceSpec::Cuda { .. })) if memory.is_some() => {
            vec![Device::open_with_host_memory(spec, memory.unwrap_or_default())?]
        }
        Some(Target::Device(spec)) => {
            vec![Device::open(spec).map_err(|e| if e.is_unavailable() { e.into() } else { usage(e) })?]
        }
        Some(Target::Auto) => {
            let choice = gpuworthy::auto::global()?.decide::<Expression>(&params, Placement::Host, None)?;
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
        let title = format!("`{source}` at {n} on {} ({}; {})", device.label(), info.name, info.driver);
        out!("{}", report::phase_table(&title, &rows).trim_end());
        out!("  kernel clock: {}", device.kernel_clock());
        if memory == Some(HostMemory::Pipelined) && program_is_elementwise {
            out!("  {}", pipelined_note());
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

/// Whether `e` comes from writing to a pipe whose reader has gone away (`gpuworthy sweep | head -1`).
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = check_environment() {
        eprintln!("gpuworthy: {e}");
        return ExitCode::from(2);
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader stopped reading: nothing is wrong, and nobody is left to tell.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gpuworthy: {e:#}");
            e.downcast_ref::<Exit>().map_or(ExitCode::FAILURE, |exit| ExitCode::from(exit.code))
        }
    }
}
