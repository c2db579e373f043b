//! `gpuworthy`: is this work worth sending to the GPU? Lists the backends this machine has, and runs workloads on
//! them with every phase measured.

use std::process::ExitCode;

use anyhow::{Context, bail};
use bench_suite::report;
use clap::{Parser, Subcommand};
use gpuworthy::core::{Backend, BackendKind, Error, Implements, WORKLOAD_NAMES, Workload};
use gpuworthy::cpu::CpuBackend;
use gpuworthy::cuda::{CudaBackend, HostMemory};
use gpuworthy::measure::{MeasureOptions, Measurement, measure};
use gpuworthy::size::ParseSize;
use gpuworthy::wgpu::WgpuBackend;

/// Is this work worth sending to the GPU? Runs the same workloads on the CPU and on GPUs, side by side.
#[derive(Debug, Parser)]
#[command(version, about)]
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
        /// The backend.
        #[arg(long, short, default_value = "cpu")]
        backend: String,
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
    /// Measures raw host-device copy rates on the CUDA device, pageable and pinned.
    Transfers {
        /// Bytes per copy: 256M, 2^28, ...
        #[arg(long, short, default_value = "256M")]
        size: String,
    },
}

/// An error in what the user asked for (exit code 2), as opposed to a failure while running (exit code 1).
#[derive(Debug)]
struct UsageError(String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Turns the library's input errors into usage errors.
fn usage(e: Error) -> anyhow::Error {
    match e {
        Error::InvalidInput(_) | Error::UnknownVariant { .. } | Error::TooLarge { .. } => {
            UsageError(e.to_string()).into()
        }
        other => other.into(),
    }
}

fn devices() -> anyhow::Result<()> {
    for kind in BackendKind::ALL {
        let opened: Result<Box<dyn Backend>, Error> = match kind {
            BackendKind::Cpu => Ok(Box::new(CpuBackend::new())),
            BackendKind::Cuda => CudaBackend::new(0).map(|b| Box::new(b) as Box<dyn Backend>),
            BackendKind::Wgpu => WgpuBackend::new().map(|b| Box::new(b) as Box<dyn Backend>),
        };
        match opened {
            Ok(backend) => describe(backend.as_ref()),
            Err(e) => println!("{kind:<5} not available: {e}"),
        }
        if kind == BackendKind::Wgpu {
            for (i, adapter) in WgpuBackend::adapters().iter().enumerate() {
                println!(
                    "      adapter {i}: {} ({:?}, {}, {})  [GPUWORTHY_WGPU_ADAPTER={i}]",
                    adapter.name, adapter.device_type, adapter.backend, adapter.driver
                );
            }
        }
    }
    Ok(())
}

fn describe(backend: &dyn Backend) {
    let device = backend.device();
    println!("{:<5} available: {} ({})", backend.kind(), device.name, device.driver);
    for (name, value) in &device.limits {
        println!("      {name}: {value}");
    }
}

fn run_on<W, B>(backend: &B, size: Option<&str>, variant: Option<&str>, options: &MeasureOptions) -> anyhow::Result<()>
where
    W: Workload,
    W::Params: ParseSize,
    B: Implements<W>,
{
    let params = match size {
        Some(s) => W::Params::parse_size(s).map_err(usage)?,
        None => W::quick_ladder().pop().context("the workload has no default size")?,
    };
    let variants = match variant {
        Some(v) => vec![v.to_owned()],
        None => backend.variants().into_iter().map(str::to_owned).collect(),
    };
    let input = W::generate(&params, options.seed).map_err(usage)?;
    let mut rows: Vec<Measurement> = Vec::new();
    for v in &variants {
        rows.push(measure::<W, B>(backend, v, &input, options).map_err(usage)?);
    }
    let device = backend.device();
    let title = format!("{} {params} on {} ({}; {})", W::NAME, backend.kind(), device.name, device.driver);
    print!("{}", report::phase_table(&title, &rows));
    println!("  kernel clock: {}", backend.kernel_clock());
    if rows.iter().any(|m| matches!(m.check, Some(Err(_)))) {
        bail!("a variant's output does not match the reference");
    }
    Ok(())
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Devices => devices(),
        Command::Transfers { size } => {
            let bytes = gpuworthy::size::parse_count(&size).map_err(usage)?;
            let cuda = CudaBackend::new(0)?;
            let rates = cuda.transfer_rates(bytes, 10)?;
            println!(
                "{} ({}), {} bytes per copy, median of 10:",
                cuda.device().name,
                cuda.device().driver,
                rates.bytes
            );
            println!(
                "  host to device  pageable {:7.1} GB/s   pinned {:7.1} GB/s",
                rates.host_to_device_pageable, rates.host_to_device_pinned
            );
            println!(
                "  device to host  pageable {:7.1} GB/s   pinned {:7.1} GB/s",
                rates.device_to_host_pageable, rates.device_to_host_pinned
            );
            Ok(())
        }
        Command::Run { workload, size, backend, variant, quick, no_validate, pinned } => {
            let kind: BackendKind = backend.parse().map_err(usage)?;
            let mut options = if quick { MeasureOptions::quick() } else { MeasureOptions::default() };
            options.validate = !no_validate;
            let (size, variant) = (size.as_deref(), variant.as_deref());
            match kind {
                BackendKind::Cpu => {
                    let cpu = CpuBackend::new();
                    gpuworthy::with_workload!(workload.as_str(), W => run_on::<W, _>(&cpu, size, variant, &options))
                }
                BackendKind::Wgpu => {
                    let wgpu = WgpuBackend::new()?;
                    gpuworthy::with_workload!(workload.as_str(), W => run_on::<W, _>(&wgpu, size, variant, &options))
                }
                BackendKind::Cuda => {
                    let memory = if pinned { HostMemory::Pinned } else { HostMemory::Pageable };
                    let cuda = CudaBackend::with_host_memory(0, memory)?;
                    gpuworthy::with_workload!(workload.as_str(), W => run_on::<W, _>(&cuda, size, variant, &options))
                }
            }
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gpuworthy: {e:#}");
            if e.downcast_ref::<UsageError>().is_some() { ExitCode::from(2) } else { ExitCode::FAILURE }
        }
    }
}
