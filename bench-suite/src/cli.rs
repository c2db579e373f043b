//! The command line of the `gpuworthy` tool, as data: the binary parses it and acts; the tests parse the commands
//! the guide and the README show, so that a documented command that no longer parses fails a test.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use gpuworthy::DeviceSpec;
use gpuworthy::core::{Error, WORKLOAD_NAMES};
use gpuworthy::measure::size::WorkloadOptions;

/// Is this work worth sending to the GPU? Runs the same workloads on the CPU and on GPUs, side by side: every phase
/// timed, every result checked, the size from which a GPU wins.
#[derive(Debug, Parser)]
#[command(name = "gpuworthy", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// What the tool can do: one subcommand each.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Lists each backend: available or not (and why), its device, driver and limits.
    Devices,
    /// Runs one workload at one size on one backend: validated, every phase timed, throughput.
    Run(RunArgs),
    /// Sweeps sizes x backends x variants: a table per workload with each backend's best time, the winner and the
    /// speed-up, the crossover size (data resident on the GPU, and data on the host) and a verdict.
    Sweep(SweepArgs),
    /// Measures what the cost model behind `auto` and `explain` needs on this machine (every workload's short ladder on
    /// every device and variant; with more than one device, how they slow one another from the host), and stores it
    /// in the user's cache directory (or GPUWORTHY_CALIBRATION).
    Calibrate {
        /// Instead of calibrating: measure the ladder sizes calibration did not use, and compare auto's choice at each
        /// with the fastest measured (the regret).
        #[arg(long)]
        evaluate: bool,
        /// With --evaluate: instead of each device's choice, evaluate auto's choice of device set (each device
        /// alone, every GPU of a kind together, the CPU beside them; data on the host) against the fastest set
        /// measured, over the built-in workloads that split.
        #[arg(long, requires = "evaluate", conflicts_with = "expressions")]
        sets: bool,
        /// With --evaluate: write every point as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Only expressions: calibrate the base expressions and the special-function rates into the stored
        /// calibration, or with --evaluate measure only the expressions calibration never saw.
        #[arg(long, conflicts_with_all = ["expr", "expr_file"])]
        expressions: bool,
        /// Measure one expression of your own and add it to the stored calibration: auto and explain then predict it
        /// from its own curves instead of from its cost.
        #[command(flatten)]
        expression: ExpressionArgs,
    },
    /// The backend and variant auto picks for a workload at a size, and why: the predicted time of each phase on
    /// each device, the phase that decides, and the crossover sizes the model predicts.
    Explain {
        /// The workload (or `--expr` for a computation of your own).
        #[arg(
            value_parser = clap::builder::PossibleValuesParser::new(WORKLOAD_NAMES),
            required_unless_present_any = ["expr", "expr_file"],
            conflicts_with_all = ["expr", "expr_file"]
        )]
        workload: Option<String>,
        /// Your own computation instead of a workload: predicted from this machine's calibration.
        #[command(flatten)]
        expression: ExpressionArgs,
        /// The size: 2^24, 16M, 2048x2048, MxKxN.
        #[arg(long, short)]
        size: String,
        /// With the data already resident on the device (compare kernels only).
        #[arg(long, conflicts_with = "pinned")]
        resident: bool,
        /// With the data on the host, moved through pinned (page-locked) staging memory where a device has it (CUDA;
        /// as `run --pinned` measures it).
        #[arg(long)]
        pinned: bool,
        /// Predict with a reference GPU machine's calibration (shipped with gpuworthy) beside this machine's CPU:
        /// what that GPU would do here, on a machine without one.
        #[arg(long, value_name = "MACHINE", value_parser = clap::builder::PossibleValuesParser::new(
            gpuworthy::model::reference::REFERENCE_MACHINES.iter().map(|m| m.name)
        ))]
        on: Option<String>,
        /// With --on: a GPU other than the reference machine's, described by how it differs.
        #[command(flatten)]
        what_if: WhatIfArgs,
        /// With --on: how many of the reference machine's GPUs the host has, for the groups' predictions (two GPUs
        /// sharing the work, the CPU with them); four and eight are shown beside as what-ifs. Without it, as many
        /// as the machine had when calibrated (two on nvidia-h200-x2, whose calibration measured how its host slows
        /// them).
        #[arg(long, requires = "on", value_parser = clap::value_parser!(u16).range(1..=64))]
        gpus: Option<u16>,
        /// The precisions auto may choose from besides fp32, comma-separated: tf32, bf16, fp16.
        #[arg(long, value_delimiter = ',', value_parser = |s: &str| s.parse::<gpuworthy::core::Precision>().map_err(|e| e.to_string()), conflicts_with = "on")]
        precision: Vec<gpuworthy::core::Precision>,
        /// The relative error you accept, e.g. 1e-2: auto may choose the precisions whose error bound at this size is
        /// within it.
        #[arg(long, value_name = "T", value_parser = parse_tolerance, conflicts_with = "on")]
        tolerance: Option<f64>,
    },
    /// Places the workloads of one or more sweeps on a roofline: each one's arithmetic intensity (flops per byte) and
    /// rate at its largest size, under each device's measured roofs (the best GB/s and GFLOP/s the sweep reached),
    /// memory-bound or compute-bound, and its share of the roof.
    Roofline {
        /// Sweep JSON files (`gpuworthy sweep --json FILE`): the workloads', an expression's, on one chart.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Also draw the chart, as SVG, to this file.
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
    /// Measures the GPUs' own traffic through NCCL: an all-reduce of one value and of an array, and peer copies, over
    /// a group of CUDA devices in this process, or this process's device as one rank (GPUWORTHY_RANK, ...).
    Collectives {
        /// The CUDA devices: a group (cuda:0,1, cuda:*), or one device (cuda:N) when this process is a rank.
        #[arg(long, short, default_value = "cuda:*", value_name = "DEVICES")]
        backend: String,
        /// Bytes of the large all-reduce and of each peer copy: 256M, 2^28, ...
        #[arg(long, short, default_value = "256M")]
        size: String,
        /// Timed runs of each, after one to warm up and check.
        #[arg(long, default_value_t = 20)]
        repeats: usize,
    },
}

/// A GPU that was never measured, for `explain --on`: the reference machine's GPU changed as these say (a laptop
/// GPU, a small cloud GPU over PCIe, Apple's unified memory). A prediction from the roofline's bounds, labelled so.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WhatIfArgs {
    /// With --on: a GPU whose memory streams this many GB/s (a laptop GPU: a few hundred).
    #[arg(long, value_name = "GB/S", requires = "on", value_parser = positive_number)]
    pub gpu_memory: Option<f64>,
    /// With --on: a GPU with this share of the reference GPU's arithmetic (0.25: a quarter).
    #[arg(long, value_name = "SHARE", requires = "on", value_parser = positive_number)]
    pub gpu_compute: Option<f64>,
    /// With --on: a link to the host of this many GB/s each way (PCIe 4.0 x8: about 12).
    #[arg(long, value_name = "GB/S", requires = "on", conflicts_with = "unified", value_parser = positive_number)]
    pub link: Option<f64>,
    /// With --on: memory shared with the CPU (Apple silicon, an integrated GPU): nothing is copied.
    #[arg(long, requires = "on")]
    pub unified: bool,
}

impl WhatIfArgs {
    /// The GPU these describe.
    pub fn what_if(&self) -> gpuworthy::model::reference::WhatIf {
        gpuworthy::model::reference::WhatIf {
            memory_bytes_per_s: self.gpu_memory.map(|g| g * 1e9),
            compute_share: self.gpu_compute,
            link_bytes_per_s: self.link.map(|g| g * 1e9),
            unified: self.unified,
        }
    }
}

/// A positive, finite number.
fn positive_number(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{text}` is not a positive number")),
    }
}

/// What `gpuworthy run` takes.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// The workload (or `--expr` for a computation of your own).
    #[arg(
        value_parser = clap::builder::PossibleValuesParser::new(WORKLOAD_NAMES),
        required_unless_present_any = ["expr", "expr_file"],
        conflicts_with_all = ["expr", "expr_file"]
    )]
    pub workload: Option<String>,
    /// Your own computation instead of a workload.
    #[command(flatten)]
    pub expression: ExpressionArgs,
    /// The size: 2^24, 16M, 2048x2048, MxKxN (the workload's default when omitted).
    #[arg(long, short)]
    pub size: Option<String>,
    /// The device: cpu, cuda, cuda:N (the Nth CUDA device), wgpu, wgpu:ADAPTER (an index from `gpuworthy
    /// devices`, vulkan, metal, dx12, or part of the adapter's name), or auto (where the calibrated cost model
    /// predicts it fastest for this size, with the data on the host), or a group of devices that run one
    /// computation together: cpu+wgpu, cuda:0,1, cuda:* (every CUDA GPU), cpu+cuda:*.
    /// (The CPU when omitted; with `--expr`, every available device.)
    #[arg(long, short, value_name = "DEVICE", value_parser = parse_target)]
    pub backend: Option<Target>,
    /// One variant, or every variant the backend offers when omitted.
    #[arg(long, short)]
    pub variant: Option<String>,
    /// Only the variants computing in these precisions, comma-separated: fp32, tf32, bf16, fp16 (matmul's
    /// tensor-core rungs and their cuBLAS peers; every precision when omitted).
    #[arg(long, value_delimiter = ',', value_parser = |s: &str| s.parse::<gpuworthy::core::Precision>().map_err(|e| e.to_string()), conflicts_with = "variant")]
    pub precision: Vec<gpuworthy::core::Precision>,
    /// The relative error you accept, e.g. 1e-2: only the precisions whose error bound at this size is within it
    /// (the root-mean-square error relative to the products' norms; fp32 always). With --backend auto, the
    /// precisions auto may choose from: it chooses fp32 unless --tolerance or --precision allows more.
    #[arg(long, value_name = "T", value_parser = parse_tolerance, conflicts_with = "variant")]
    pub tolerance: Option<f64>,
    /// Fewer repetitions.
    #[arg(long)]
    pub quick: bool,
    /// Skip the check against the scalar reference (for sizes where the reference is slow).
    #[arg(long)]
    pub no_validate: bool,
    /// Move data through pinned (page-locked) host memory instead of pageable (CUDA only).
    #[arg(long)]
    pub pinned: bool,
    /// Pipeline the end-to-end run: chunks flow through several streams so that host staging, both copies and
    /// the kernels overlap (CUDA only; upload and download alone move through pinned staging).
    #[arg(long, conflicts_with = "pinned")]
    pub pipelined: bool,
    /// Time the end-to-end column as a loop that keeps its result vector would run: each run writes into the
    /// previous run's output, as NumPy's `out=` (CUDA's pipelined path writes into it in place; the other paths
    /// make a fresh output and move it in).
    #[arg(long)]
    pub reuse_output: bool,
    /// With a device group: page-lock the input's arrays and the output in place once, before the timed runs (as
    /// PyTorch's `tensor.pin_memory()`), so that each GPU copies straight from and to them with no staging copy on
    /// the cores; every timed run, the group's and each member's alone, writes into that one output (implies
    /// --reuse-output). Locking's own time is reported beside the runs.
    #[arg(long)]
    pub page_locked: bool,
    /// Workload parameters beyond the size.
    #[command(flatten)]
    pub params: WorkloadArgs,
    /// The guide's timing lessons.
    #[command(flatten)]
    pub lessons: LessonArgs,
}

/// An expression of the user's own, as `run` and `sweep` take it.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ExpressionArgs {
    /// An expression of your own instead of a workload, e.g. `y = a*x + b` (names given values with `--set` are
    /// scalars, the others input arrays); measured and checked on every available device unless `--backend` names
    /// one.
    #[arg(long, value_name = "EXPRESSION", conflicts_with = "expr_file")]
    pub expr: Option<String>,
    /// The expression read from a file (`-`: standard input), for one of several statements.
    #[arg(long, value_name = "FILE")]
    pub expr_file: Option<PathBuf>,
    /// Values of the expression's scalars: `--set a=2 --set b=1` or `--set a=2,b=1`.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// The range an input's values are drawn from (default -1:1), e.g. `--range x=0:1` for `log` or `sqrt`.
    #[arg(long = "range", value_name = "NAME=LOW:HIGH")]
    pub range: Vec<String>,
    /// How the expression's arrays are stored: f32, or f16 or bf16 (half the bytes, computed in f32; each output
    /// rounded to the type and checked to the rounding of its f32 bound).
    #[arg(long, value_name = "TYPE", default_value = "f32", value_parser = |s: &str| s.parse::<gpuworthy::core::Dtype>().map_err(|e| e.to_string()))]
    pub dtype: gpuworthy::core::Dtype,
}

impl ExpressionArgs {
    /// The largest expression file read.
    pub const MAX_FILE_BYTES: u64 = 64 << 10;

    /// The expression's text, from `--expr` or `--expr-file`; `None` when neither is given, and then an error if
    /// `--set` or `--range` is.
    pub fn source(&self) -> Result<Option<String>, Error> {
        let text = match (&self.expr, &self.expr_file) {
            (Some(text), _) => Some(text.clone()),
            (None, Some(path)) => Some(read_expression_file(path)?),
            (None, None) => None,
        };
        if text.is_none() {
            let half = self.dtype.is_half();
            for (flag, used) in
                [("--set", !self.set.is_empty()), ("--range", !self.range.is_empty()), ("--dtype", half)]
            {
                if used {
                    return Err(Error::invalid(format!("{flag} applies to an expression: add --expr or --expr-file")));
                }
            }
        }
        Ok(text)
    }

    /// These options for a built-in workload run on 16-bit arrays (`run square --dtype bf16`): the expression that
    /// states the workload (square `y = x*x`, saxpy `y = a*x + y` with the specification's `a`, sum `s = sum(x)`), whose
    /// generated kernels read and write 16-bit elements on every backend, checked as any expression is. `None` where
    /// nothing is to be translated (an expression was given, or the arrays are f32); an error for a 16-bit type with
    /// another workload, or with several, naming those it applies to. The built-in kernels themselves are f32.
    ///
    /// ```
    /// use bench_suite::cli::ExpressionArgs;
    ///
    /// let args = ExpressionArgs { dtype: "bf16".parse()?, ..Default::default() };
    /// let saxpy = args.for_workloads(&["saxpy"])?.expect("saxpy is one expression");
    /// assert_eq!((saxpy.expr.as_deref(), saxpy.set.as_slice()), (Some("y = a*x + y"), &["a=2.5".to_owned()][..]));
    /// assert!(args.for_workloads(&["softmax"]).is_err());
    /// assert!(ExpressionArgs::default().for_workloads(&["square"])?.is_none()); // f32: the built-in kernels
    /// # Ok::<(), gpuworthy::core::Error>(())
    /// ```
    pub fn for_workloads(&self, workloads: &[&str]) -> Result<Option<ExpressionArgs>, Error> {
        if !self.dtype.is_half() || self.expr.is_some() || self.expr_file.is_some() {
            return Ok(None);
        }
        const STATED: [(&str, &str); 3] = [("square", "y = x*x"), ("saxpy", "y = a*x + y"), ("sum", "s = sum(x)")];
        let names = || STATED.map(|(name, _)| name).join(", ");
        let [workload] = workloads else {
            return Err(Error::invalid(format!(
                "--dtype {} applies to an expression, or to one of {}: name one workload",
                self.dtype,
                names()
            )));
        };
        let Some((_, source)) = STATED.iter().find(|(name, _)| name == workload) else {
            return Err(Error::invalid(format!(
                "--dtype {} applies to an expression, or to {}, which one expression states; {workload} computes on \
                 f32 arrays only",
                self.dtype,
                names()
            )));
        };
        let mut set = self.set.clone();
        if *workload == "saxpy" && !set.iter().any(|s| s.split(',').any(|p| p.trim_start().starts_with("a="))) {
            set.push(format!("a={}", gpuworthy::core::workloads::SaxpyParams::DEFAULT_A));
        }
        Ok(Some(ExpressionArgs { expr: Some((*source).to_owned()), set, ..self.clone() }))
    }

    /// The request of `source` (the text [`ExpressionArgs::source`] read) with these options: its scalars, ranges and
    /// storage type.
    pub fn request(&self, source: &str) -> Result<gpuworthy::user_code::expression::ExpressionRequest, Error> {
        gpuworthy::user_code::expression::ExpressionRequest::from_command_line(source, &self.set, &self.range)
            .map(|request| request.in_dtype(self.dtype))
    }
}

/// An expression file's text (`-`: standard input), at most [`ExpressionArgs::MAX_FILE_BYTES`].
fn read_expression_file(path: &std::path::Path) -> Result<String, Error> {
    use std::io::Read;
    let shown = path.display();
    let limit = ExpressionArgs::MAX_FILE_BYTES;
    let mut text = String::new();
    let read = if path.as_os_str() == "-" {
        std::io::stdin().take(limit + 1).read_to_string(&mut text)
    } else {
        std::fs::File::open(path).and_then(|f| f.take(limit + 1).read_to_string(&mut text))
    };
    read.map_err(|e| Error::invalid(format!("--expr-file {shown}: {e}")))?;
    if text.len() as u64 > limit {
        return Err(Error::invalid(format!("--expr-file {shown}: longer than {limit} bytes")));
    }
    Ok(text)
}

/// What `gpuworthy sweep` takes.
#[derive(Debug, Clone, clap::Args)]
pub struct SweepArgs {
    /// Workloads to sweep (all when omitted).
    #[arg(
        value_parser = clap::builder::PossibleValuesParser::new(WORKLOAD_NAMES),
        conflicts_with_all = ["expr", "expr_file"]
    )]
    pub workloads: Vec<String>,
    /// Your own computation instead of the workloads: its crossover, resident and from the host.
    #[command(flatten)]
    pub expression: ExpressionArgs,
    /// Devices, comma-separated, each as for `run --backend` (cpu, cuda, cuda:1, wgpu, wgpu:ADAPTER); every
    /// backend's first device that is available when omitted. A device group among them (`cuda:*`, `cpu+cuda`,
    /// `cuda:0+cuda:1`) is swept against its members alone, and the sweep says from which size it pays.
    #[arg(long, short, value_name = "DEVICES", value_delimiter = ',', value_parser = parse_sweep_backend)]
    pub backends: Vec<SweepBackend>,
    /// The short ladder of sizes: a sweep of every workload in a few minutes.
    #[arg(long)]
    pub quick: bool,
    /// Sizes to sweep instead of the ladder, comma-separated (one workload only).
    #[arg(long)]
    pub sizes: Option<String>,
    /// The most seconds one measurement may take; a variant whose next size would take longer stops there.
    #[arg(long, default_value_t = 4.0)]
    pub budget: f64,
    /// Only the variants computing in these precisions, comma-separated (fp32, tf32, bf16, fp16): the report
    /// gives the crossovers with each reduced precision allowed beside fp32's (the CPU's variants are fp32, so
    /// keep fp32 in the list for a crossover). Every variant when omitted.
    #[arg(long, value_delimiter = ',', value_parser = |s: &str| s.parse::<gpuworthy::core::Precision>().map_err(|e| e.to_string()))]
    pub precision: Vec<gpuworthy::core::Precision>,
    /// Measure only the pageable end-to-end path: without this, a CUDA device's pipelined runs are measured too
    /// and the host crossover takes the faster mode.
    #[arg(long)]
    pub no_pipelined: bool,
    /// Write every measurement, the crossovers and the machine's fingerprint as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write every measurement as CSV.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write one SVG chart per workload into this directory.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Workload parameters beyond the size.
    #[command(flatten)]
    pub params: WorkloadArgs,
}

/// Where `run` runs: a device, or where `auto` chooses.
#[derive(Debug, Clone)]
pub enum Target {
    /// The cost model's choice for the workload and size.
    Auto,
    /// This device.
    Device(DeviceSpec),
    /// A device group, as written (`cpu+wgpu`, `cuda:0,1`, `cuda:*`): its members run one computation together.
    Group(String),
}

/// Workload parameters beyond the size.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WorkloadArgs {
    /// Histogram: the number of bins, 1 to 65536 (default 256).
    #[arg(long, value_parser = |s: &str| gpuworthy::measure::size::parse_bins(s).map_err(|e| e.to_string()))]
    pub bins: Option<usize>,
    /// Histogram: how the values spread over the bins: uniform, or skewed (90% in one bin: the atomics contend).
    #[arg(long, value_parser = |s: &str| gpuworthy::measure::size::parse_distribution(s).map_err(|e| e.to_string()))]
    pub distribution: Option<gpuworthy::core::workloads::Distribution>,
    /// Mandelbrot: the region of the complex plane, whole, inside (every pixel runs to the limit), boundary
    /// (neighbours diverge), or XMIN,XMAX,YMIN,YMAX.
    #[arg(long, allow_hyphen_values = true, value_parser = |s: &str| gpuworthy::measure::size::parse_region(s).map_err(|e| e.to_string()))]
    pub region: Option<gpuworthy::core::workloads::Region>,
    /// Mandelbrot: the most iterations per pixel, 1 to 2^20 (default 256).
    #[arg(long, value_parser = |s: &str| gpuworthy::measure::size::parse_max_iter(s).map_err(|e| e.to_string()))]
    pub max_iter: Option<u32>,
}

impl WorkloadArgs {
    /// The options as the library takes them.
    pub fn options(&self) -> WorkloadOptions {
        WorkloadOptions {
            bins: self.bins,
            distribution: self.distribution,
            region: self.region,
            max_iter: self.max_iter,
        }
    }
}

/// Measurements that show how timing goes wrong, and what moves a crossover (the guide's lessons).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LessonArgs {
    /// Also time each launch with the host clock and no synchronisation (wrong on purpose: on a GPU it measures the
    /// launch, not the kernel), beside the synchronised host clock and the device timer.
    #[arg(long)]
    pub no_sync: bool,
    /// Also time upload + K kernels + download per K, the cost per kernel when data stays on the device for K
    /// kernels between transfers (1 to 65536).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub launches: Option<u32>,
    /// Skip the spin-up that keeps a GPU busy before its kernel is timed (to see the clock ramp it exists for).
    #[arg(long)]
    pub no_spin_up: bool,
    /// CUDA: threads per block of the elementwise kernels (square, saxpy), comma-separated to compare several:
    /// 32,64,128,256,512,1024.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(32..=1024))]
    pub block_size: Vec<u32>,
}

/// Parses `--tolerance`: a relative error in (0, 1).
pub fn parse_tolerance(text: &str) -> Result<f64, String> {
    let value: f64 = text.trim().parse().map_err(|_| format!("`{text}` is not a number (e.g. 1e-2)"))?;
    if !(value > 0.0 && value < 1.0) {
        return Err(format!("a tolerance is a relative error between 0 and 1 (e.g. 1e-2), not {text}"));
    }
    Ok(value)
}

/// Parses `run --backend`: `auto` or a device.
pub fn parse_target(text: &str) -> Result<Target, String> {
    if text.trim().eq_ignore_ascii_case("auto") {
        Ok(Target::Auto)
    } else if gpuworthy::device::group::DeviceGroup::is_group(text) {
        // `cuda:*` is expanded when the group opens: parsing here finds every other mistake before anything runs.
        if !text.contains('*') {
            gpuworthy::device::group::DeviceGroup::parse(text).map_err(|e| e.to_string())?;
        }
        Ok(Target::Group(text.trim().to_owned()))
    } else {
        parse_device(text).map(Target::Device)
    }
}

/// One entry of `sweep --backends`: a device, or a device group compared with its members.
#[derive(Debug, Clone, PartialEq)]
pub enum SweepBackend {
    /// One device.
    Device(DeviceSpec),
    /// A device group as written (`cuda:*`, `cpu+cuda`), its members checked when parsed.
    Group(String),
}

/// Parses an entry of `sweep --backends`: a group where the text joins devices with `+` or names every device of a
/// backend (`cuda:*`), else a device ([`parse_device`]). (A list such as `cuda:0,1` is cut at its comma by
/// `--backends`: write it `cuda:0+cuda:1`.)
pub fn parse_sweep_backend(text: &str) -> Result<SweepBackend, String> {
    if gpuworthy::device::group::DeviceGroup::is_group(text) {
        // `cuda:*` is read when the group opens: listing a backend's devices here would open the backend.
        if !text.contains('*') {
            gpuworthy::device::group::DeviceGroup::parse(text).map_err(|e| e.to_string())?;
        }
        Ok(SweepBackend::Group(text.trim().to_owned()))
    } else {
        parse_device(text).map(SweepBackend::Device)
    }
}

/// Parses a device as `--backend` takes it.
pub fn parse_device(text: &str) -> Result<DeviceSpec, String> {
    text.parse().map_err(|e: Error| e.to_string())
}
