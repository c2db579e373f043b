//! `gpuworthy`: is this work worth sending to the GPU? Lists the backends this machine has, and runs workloads on
//! them with every phase measured.
//!
//! Exit codes: 0 success (also when the reader of its output goes away, as `| head` does), 1 a failure while
//! running (a device error, or a sweep in which no requested backend could run), 2 a usage error (a bad argument,
//! size or environment variable, refused before any work starts), 3 a result that failed its check against the
//! reference (shown as FAILED in the table; whatever was measured is still written).

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, bail};
use bench_suite::export::{Fingerprint, write_csv, write_json, write_plot};
use bench_suite::report::{self, table};
use clap::{Parser, Subcommand};
use gpuworthy::core::{Backend, BackendKind, Error, WORKLOAD_NAMES, Workload};
use gpuworthy::cuda::{CudaBackend, HostMemory};
use gpuworthy::measure::{MeasureOptions, Measurement};
use gpuworthy::size::ParseSize;
use gpuworthy::sweep::{Progress, SweepOptions, sweep_workload};
use gpuworthy::wgpu::WgpuBackend;
use gpuworthy::{Device, DeviceSpec, OnEveryBackend};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::time::Duration;

/// Is this work worth sending to the GPU? Runs the same workloads on the CPU and on GPUs, side by side: every phase
/// timed, every result checked, the size from which a GPU wins.
#[derive(Debug, Parser)]
#[command(name = "gpuworthy", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Lists each backend: available or not (and why), its device, driver and limits.
    Devices,
    /// Runs one workload at one size on one backend: validated, every phase timed, throughput.
    Run {
        /// The workload.
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(WORKLOAD_NAMES))]
        workload: String,
        /// The size: 2^24, 16M, 2048x2048, MxKxN (the workload's default when omitted).
        #[arg(long, short)]
        size: Option<String>,
        /// The device: cpu, cuda, cuda:N (the Nth CUDA device), wgpu, wgpu:ADAPTER (an index from `gpuworthy
        /// devices`, vulkan, metal, dx12, or part of the adapter's name).
        #[arg(long, short, default_value = "cpu", value_name = "DEVICE", value_parser = parse_device)]
        backend: DeviceSpec,
        /// One variant, or every variant the backend offers when omitted.
        #[arg(long, short)]
        variant: Option<String>,
        /// Fewer repetitions.
        #[arg(long)]
        quick: bool,
        /// Skip the check against the scalar reference (for sizes where the reference is slow).
        #[arg(long)]
        no_validate: bool,
        /// Move data through pinned (page-locked) host memory instead of pageable (CUDA only).
        #[arg(long)]
        pinned: bool,
    },
    /// Sweeps sizes x backends x variants: a table per workload with each backend's best time, the winner and the
    /// speed-up, the crossover size (data resident on the GPU, and data on the host) and a verdict.
    Sweep {
        /// Workloads to sweep (all when omitted).
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(WORKLOAD_NAMES))]
        workloads: Vec<String>,
        /// Devices, comma-separated, each as for `run --backend` (cpu, cuda, cuda:1, wgpu, wgpu:ADAPTER); every
        /// backend's first device that is available when omitted.
        #[arg(long, short, value_name = "DEVICES", value_delimiter = ',', value_parser = parse_device)]
        backends: Vec<DeviceSpec>,
        /// The short ladder of sizes: a sweep of every workload in a few minutes.
        #[arg(long)]
        quick: bool,
        /// Sizes to sweep instead of the ladder, comma-separated (one workload only).
        #[arg(long)]
        sizes: Option<String>,
        /// The most seconds one measurement may take; a variant whose next size would take longer stops there.
        #[arg(long, default_value_t = 4.0)]
        budget: f64,
        /// Write every measurement, the crossovers and the machine's fingerprint as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Write every measurement as CSV.
        #[arg(long)]
        csv: Option<PathBuf>,
        /// Write one SVG chart per workload into this directory.
        #[arg(long)]
        plot: Option<PathBuf>,
    },
    /// Measures raw host-device copy rates on a CUDA device, pageable and pinned.
    Transfers {
        /// Bytes per copy: 256M, 2^28, ...
        #[arg(long, short, default_value = "256M")]
        size: String,
        /// The CUDA device: cuda or cuda:N.
        #[arg(long, short, default_value = "cuda", value_name = "DEVICE", value_parser = parse_device)]
        backend: DeviceSpec,
    },
}

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
    gpuworthy::cpu::simd::requested_level()?;
    gpuworthy::wgpu::check_environment()
}

/// Parses a device as `--backend` takes it.
fn parse_device(text: &str) -> Result<DeviceSpec, String> {
    text.parse().map_err(|e: Error| e.to_string())
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
        Error::InvalidInput(_) | Error::UnknownVariant { .. } | Error::TooLarge { .. } => Exit::usage(e.to_string()),
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
            for ordinal in 1..CudaBackend::device_count() {
                match Device::cuda(ordinal) {
                    Ok(device) => out!("      device {ordinal}: {}  [--backend cuda:{ordinal}]", device.device().name),
                    Err(e) => out!("      device {ordinal}: {e}"),
                }
            }
        }
        if kind == BackendKind::Wgpu {
            for (i, adapter) in WgpuBackend::adapters().iter().enumerate() {
                out!(
                    "      adapter {i}: {} ({:?}, {}, {})  [--backend wgpu:{i}]",
                    adapter.name,
                    adapter.device_type,
                    adapter.backend,
                    adapter.driver
                );
            }
        }
    }
    Ok(())
}

/// The sweep's progress on a terminal progress bar.
struct Bar(ProgressBar);

impl Progress for Bar {
    fn plan(&self, steps: u64) {
        self.0.inc_length(steps);
    }
    fn advance(&self, steps: u64) {
        self.0.inc(steps);
    }
    fn now_measuring(&self, what: String) {
        self.0.set_message(what);
    }
}

/// How many variants the opened devices offer for `W`, for the progress bar.
fn variant_count<W: OnEveryBackend>(devices: &[Device]) -> usize {
    devices.iter().map(|d| d.variants::<W>().len()).sum()
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

fn run_on<W>(
    backend: &Device,
    size: Option<&str>,
    variant: Option<&str>,
    options: &MeasureOptions,
) -> anyhow::Result<()>
where
    W: OnEveryBackend,
    W::Params: ParseSize,
{
    let params = match size {
        Some(s) => W::Params::parse_size(s).map_err(usage)?,
        None => W::quick_ladder().pop().context("the workload has no default size")?,
    };
    let variants = match variant {
        Some(v) => vec![v.to_owned()],
        None => backend.variants::<W>().into_iter().map(str::to_owned).collect(),
    };
    backend.check_size::<W>(&params).map_err(usage)?;
    let input = W::generate(&params, options.seed).map_err(usage)?;
    let mut rows: Vec<Measurement> = Vec::new();
    for v in &variants {
        rows.push(backend.measure::<W>(v, &input, options).map_err(usage)?);
    }
    let device = backend.device();
    let title = format!("{} {params} on {} ({}; {})", W::NAME, backend.label(), device.name, device.driver);
    out!("{}", report::phase_table(&title, &rows).trim_end());
    out!("  kernel clock: {}", backend.kernel_clock());
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
    if rows.iter().any(|m| matches!(m.check, Some(Err(_)))) {
        return Err(Exit::check_failed("a variant's output does not match the reference"));
    }
    Ok(())
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Devices => devices(),
        Command::Sweep { workloads, backends, quick, sizes, budget, json, csv, plot } => {
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
            let workloads =
                if workloads.is_empty() { WORKLOAD_NAMES.iter().map(|&w| w.to_owned()).collect() } else { workloads };
            if sizes.is_some() && workloads.len() != 1 {
                return Err(Exit::usage("--sizes needs exactly one workload"));
            }
            if let Some(list) = &sizes {
                gpuworthy::with_workload!(workloads[0].as_str(), W => list
                    .split(',')
                    .try_for_each(|s| <W as Workload>::Params::parse_size(s).map(drop))
                    .map_err(usage)?);
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
            let options = SweepOptions { budget: Duration::from_secs_f64(budget), ..SweepOptions::default() };
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
            // Whatever happens to a later workload, what was measured before it is written below.
            let outcome = (|| -> anyhow::Result<()> {
                for workload in &workloads {
                    let sweep = gpuworthy::with_workload!(workload.as_str(), W => {
                        let ladder = match &sizes {
                            Some(list) => list.split(',').map(<W as Workload>::Params::parse_size).collect::<Result<Vec<_>, _>>().map_err(usage)?,
                            None if quick => W::quick_ladder(),
                            None => W::ladder(),
                        };
                        let bar = Bar(progress.clone());
                        bar.plan((ladder.len() * variant_count::<W>(&opened.devices)) as u64);
                        sweep_workload::<W>(&opened.devices, &ladder, &options, &bar)
                    });
                    progress.suspend(|| -> anyhow::Result<()> {
                        out!("\n== {workload}");
                        out!("{}", table(&sweep).trim_end());
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
            Ok(())
        }
        Command::Transfers { size, backend } => {
            let bytes = gpuworthy::size::parse_count(&size).map_err(usage)?;
            let DeviceSpec::Cuda { ordinal } = backend else {
                return Err(Exit::usage(format!("transfers measures CUDA devices, not {backend}")));
            };
            let cuda = CudaBackend::new(ordinal)?;
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
        Command::Run { workload, size, backend, variant, quick, no_validate, pinned } => {
            let mut options = if quick { MeasureOptions::quick() } else { MeasureOptions::default() };
            options.validate = !no_validate;
            let (size, variant) = (size.as_deref(), variant.as_deref());
            let device = match (&backend, pinned) {
                (DeviceSpec::Cuda { ordinal }, true) => {
                    Device::from(CudaBackend::with_host_memory(*ordinal, HostMemory::Pinned)?)
                }
                (_, true) => return Err(Exit::usage(format!("--pinned applies to CUDA devices, not {backend}"))),
                (_, false) => {
                    Device::open(backend).map_err(|e| if e.is_unavailable() { e.into() } else { usage(e) })?
                }
            };
            gpuworthy::with_workload!(workload.as_str(), W => run_on::<W>(&device, size, variant, &options))
        }
    }
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
