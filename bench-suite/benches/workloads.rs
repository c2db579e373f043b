//! Criterion benchmarks of every workload on every available backend and variant, one group per workload, with ids
//! `workload/backend/variant/phase/size`. Phases: `kernel` (the backend's device timer around launches back to back,
//! through `iter_custom`), `end_to_end` (upload, kernel and download, synchronised), `end_to_end_pipelined` (the same
//! through the device's pipelined path, where it has one: CUDA), `first_call` (a fresh backend:
//! compilation and the first run), and `upload` and `download`, which do not depend on the variant and are benched
//! once per workload, backend and size (under the backend's first variant). Throughput is the workload's cost in
//! decimal bytes. The run ends with a table per workload and size (each backend's best time, the winner), read from
//! criterion's own estimates; criterion's HTML reports, with its charts, are in `target/criterion/report/index.html`.
//!
//! The plain command is the short run: the smallest and largest sizes of each workload's short ladder (at most
//! [`SHORT_MAX_FLOPS`] of work) with short measurement times, flat sampling and fewer bootstrap resamples: minutes rather than hours.
//! `GPUWORTHY_BENCH_FULL=1` is the long run: every size of the ladder, criterion's default times, 20 samples.
//! `GPUWORTHY_BENCH_BACKENDS=cpu,wgpu` limits the devices (any device as `gpuworthy run --backend` takes it:
//! `cuda:1`, `wgpu:vulkan`). The benchmarks of each workload are generated from the one list of workloads, and each
//! runs on the backend's own type (through [`Device::with_backend`]), so no dynamic dispatch enters a timed loop.
//! Inputs are made when a benchmark first runs, so `cargo bench -p bench-suite -- --list` and filters cost nothing.
//! Beside the workloads, the expressions of the peers' table (`expr_axpb`, `expr_damped_sine`, `expr_horner8`,
//! `expr_rotation`, `expr_sum_squares`) are benched the same way, each a group of its own, and join the closing table.

use std::cell::OnceCell;
use std::time::{Duration, Instant};

use std::sync::Arc;

use std::path::PathBuf;
use std::time::SystemTime;

use bench_suite::criterion_summary::{PIPELINED_PHASE, read_estimates, table};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use gpuworthy::core::expr::{Expr, ExprParams, Expression};
use gpuworthy::core::{Backend, BackendKind, Implements, MAX_LAUNCHES_PER_TIMING, Workload};
use gpuworthy::device::{ImplementsEveryWorkload, WithBackend};
use gpuworthy::{Device, DeviceSpec, DeviceWorkload};

/// The most work one size of the short run may cost.
const SHORT_MAX_FLOPS: u64 = 150_000_000;

/// Ends the bench run with a message naming a bad environment variable (exit code 2), rather than a panic.
fn bad_environment(e: gpuworthy::core::Error) -> ! {
    eprintln!("workloads bench: {e}");
    std::process::exit(2)
}

/// Whether this is the long run (`GPUWORTHY_BENCH_FULL=1`).
fn full() -> bool {
    gpuworthy::core::env::read_flag("GPUWORTHY_BENCH_FULL").unwrap_or_else(|e| bad_environment(e)).unwrap_or(false)
}

fn device_specs() -> Vec<DeviceSpec> {
    const NAME: &str = "GPUWORTHY_BENCH_BACKENDS";
    match gpuworthy::core::env::read(NAME).unwrap_or_else(|e| bad_environment(e)) {
        Some(list) => DeviceSpec::parse_list(&list).unwrap_or_else(|_| {
            bad_environment(gpuworthy::core::env::invalid_value(
                NAME,
                &list,
                &format!("a comma-separated list of {}", DeviceSpec::FORMS),
            ))
        }),
        None => BackendKind::ALL.map(DeviceSpec::from).to_vec(),
    }
}

/// The CPU's `naive` matmul stops at 2048: beyond, one run takes minutes.
fn skipped(backend: BackendKind, workload: &str, variant: &str, params: &str) -> bool {
    let side: usize = params.split('x').next().and_then(|s| s.parse().ok()).unwrap_or(0);
    backend == BackendKind::Cpu && workload == "matmul" && variant == "naive" && side > 2048
}

/// `iters` uploads of `input` to `backend`, each timed from a synchronised device to the upload's end.
fn time_uploads<W: DeviceWorkload, B: Implements<W>>(backend: &B, input: &W::Input, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        backend.synchronize().expect("synchronize");
        let start = Instant::now();
        let r = backend.upload(input).expect("upload");
        backend.synchronize().expect("synchronize");
        total += start.elapsed();
        drop(r);
    }
    total
}

/// `iters` whole runs of `variant` on `input`, back to back.
fn time_runs<W: DeviceWorkload, B: Implements<W>>(
    backend: &B,
    variant: &str,
    input: &W::Input,
    iters: u64,
) -> Duration {
    backend.synchronize().expect("synchronize");
    let start = Instant::now();
    for _ in 0..iters {
        backend.run(variant, input).expect("run");
    }
    start.elapsed()
}

/// `iters` first calls: each on a device opened afresh by `fresh`, compiling `variant` and running it once.
fn time_first_calls<W: DeviceWorkload>(
    fresh: &dyn Fn() -> Device,
    variant: &str,
    input: &W::Input,
    iters: u64,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let new = fresh();
        let start = Instant::now();
        new.prepare::<W>(variant).expect("prepare");
        new.run::<W>(variant, input).expect("run");
        total += start.elapsed();
    }
    total
}

/// Registers every benchmark of `W` on `backend` (opened again by `fresh` for the first-call phase), in the group
/// `name`, at the sizes of `ladder`.
fn bench_backend<W, B>(c: &mut Criterion, backend: &B, fresh: &dyn Fn() -> Device, name: &str, ladder: &[W::Params])
where
    W: DeviceWorkload,
    B: Implements<W>,
{
    let kind = backend.kind();
    let mut group = group(c, name);
    for params in ladder {
        if let Err(e) = backend.check_size(params) {
            eprintln!("{}/{kind}: not benchmarked at {params}: {e}", W::NAME);
            continue;
        }
        group.throughput(Throughput::Bytes(W::cost(params).bytes));
        let input: OnceCell<W::Input> = OnceCell::new();
        let input = || input.get_or_init(|| W::generate(params, 1).expect("ladder sizes are valid"));
        for (index, variant) in backend.variants().into_iter().enumerate() {
            if skipped(kind, W::NAME, variant, &params.to_string()) {
                eprintln!("{}/{kind}/{variant}: stops at 2048 (one run beyond takes minutes)", W::NAME);
                continue;
            }
            let id = |phase: &str| BenchmarkId::new(format!("{kind}/{variant}/{phase}"), params);
            let resident = std::cell::RefCell::new(None);
            let with_resident = |f: &mut dyn FnMut(&mut B::Resident)| {
                let mut slot = resident.borrow_mut();
                let r = slot.get_or_insert_with(|| {
                    let mut r = backend.upload(input()).expect("upload");
                    backend.launch(variant, &mut r).expect("launch");
                    r
                });
                f(r);
            };
            group.bench_function(id("kernel"), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    with_resident(&mut |r| {
                        // Launches back to back, up to MAX_LAUNCHES_PER_TIMING per device timing window, so that a
                        // GPU is busy while it is timed and keeps its clocks up (see gpuworthy::measure).
                        let mut left = iters;
                        while left > 0 {
                            let batch = left.min(MAX_LAUNCHES_PER_TIMING as u64);
                            total += backend
                                .time_on_device(&mut || (0..batch).try_for_each(|_| backend.launch(variant, r)))
                                .expect("launch");
                            left -= batch;
                        }
                    });
                    total
                });
            });
            // Transfers move the same bytes whatever the variant: benched with the first one only.
            let transfers = index == 0;
            if transfers {
                group.bench_function(id("upload"), |b| b.iter_custom(|iters| time_uploads(backend, input(), iters)));
                group.bench_function(id("download"), |b| {
                    b.iter_custom(|iters| {
                        let mut total = Duration::ZERO;
                        with_resident(&mut |r| {
                            backend.synchronize().expect("synchronize");
                            let start = Instant::now();
                            for _ in 0..iters {
                                backend.download(r).expect("download");
                            }
                            total = start.elapsed();
                        });
                        total
                    });
                });
            }
            group.bench_function(id("end_to_end"), |b| {
                b.iter_custom(|iters| time_runs(backend, variant, input(), iters));
            });
            group.bench_function(id("first_call"), |b| {
                b.iter_custom(|iters| time_first_calls::<W>(fresh, variant, input(), iters));
            });
            *resident.borrow_mut() = None;
        }
    }
    group.finish();
}

/// The sizes benched: every size of the ladder in the long run; in the short run, the smallest size of the short
/// ladder (where launch overhead rules) and its largest of at most SHORT_MAX_FLOPS (where bandwidth or arithmetic
/// does, and a naive kernel on a software rasteriser still runs in well under a second).
fn ladder<W: Workload>() -> Vec<W::Params> {
    if full() {
        return W::ladder();
    }
    let short: Vec<_> = W::quick_ladder().into_iter().filter(|p| W::cost(p).flops <= SHORT_MAX_FLOPS).collect();
    match (short.first(), short.last()) {
        (Some(first), Some(last)) if first != last => vec![first.clone(), last.clone()],
        _ => short,
    }
}

/// The benchmark group `name`, with the run's sampling.
fn group<'c>(c: &'c mut Criterion, name: &str) -> criterion::BenchmarkGroup<'c, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    if full() {
        group.sample_size(20);
    } else {
        // Flat sampling: every sample runs the same number of iterations, so a slow benchmark (a first call that
        // creates a context and compiles) runs 10 times, not the 55 of criterion's linear sampling.
        group
            .warm_up_time(Duration::from_millis(50))
            .measurement_time(Duration::from_millis(150))
            .sample_size(10)
            .sampling_mode(SamplingMode::Flat);
    }
    group
}

/// The whole run of every variant of `W` through `backend`'s pipelined path (a CUDA backend opened with
/// `HostMemory::Pipelined`), as the phase `end_to_end_pipelined`.
fn bench_pipelined<W, B>(c: &mut Criterion, backend: &B)
where
    W: Workload,
    B: Implements<W>,
{
    let kind = backend.kind();
    let mut group = group(c, W::NAME);
    for params in &ladder::<W>() {
        if backend.check_size(params).is_err() {
            continue; // said once by the phased benchmarks
        }
        group.throughput(Throughput::Bytes(W::cost(params).bytes));
        let input: OnceCell<W::Input> = OnceCell::new();
        let input = || input.get_or_init(|| W::generate(params, 1).expect("ladder sizes are valid"));
        for variant in backend.variants() {
            let id = BenchmarkId::new(format!("{kind}/{variant}/{PIPELINED_PHASE}"), params);
            group.bench_function(id, |b| {
                b.iter_custom(|iters| {
                    backend.synchronize().expect("synchronize");
                    let start = Instant::now();
                    for _ in 0..iters {
                        backend.run(variant, input()).expect("pipelined run");
                    }
                    start.elapsed()
                });
            });
        }
    }
    group.finish();
}

/// Every workload's pipelined runs on one backend.
struct BenchEveryPipelined<'a> {
    criterion: &'a mut Criterion,
}

macro_rules! bench_each_pipelined {
    ([$criterion:expr, $backend:expr] $($name:ident: $workload:ty),* $(,)?) => {
        $(bench_pipelined::<$workload, _>($criterion, $backend);)*
    };
}

impl WithBackend for BenchEveryPipelined<'_> {
    type Output = ();

    fn call<B: ImplementsEveryWorkload + 'static>(self, backend: &Arc<B>) {
        gpuworthy::core::for_each_workload!(bench_each_pipelined; self.criterion, &**backend);
    }
}

/// Every workload's benchmarks on one backend.
struct BenchEveryWorkload<'a> {
    criterion: &'a mut Criterion,
    spec: &'a DeviceSpec,
}

macro_rules! bench_each_workload {
    ([$criterion:expr, $backend:expr, $fresh:expr] $($name:ident: $workload:ty),* $(,)?) => {
        $(bench_backend::<$workload, _>($criterion, $backend, $fresh, <$workload>::NAME, &ladder::<$workload>());)*
    };
}

/// An expression's scalars and their values.
type Scalars = &'static [(&'static str, f32)];

/// The expressions of the peers' table (EXPRESSIONS.md, `bench-suite/peers/expr_peers.py`): each benchmark group's
/// name, the expression, and its scalars' values.
const EXPRESSIONS: [(&str, &str, Scalars); 5] = [
    ("expr_axpb", "y = a*x + b", &[("a", 2.0), ("b", 1.0)]),
    ("expr_damped_sine", "y = exp(-x*x) * sin(3*x)", &[]),
    (
        "expr_horner8",
        "y = ((((((0.0078125*x + 0.015625)*x + 0.03125)*x + 0.0625)*x + 0.125)*x + 0.25)*x + 0.5)*x + 1",
        &[],
    ),
    ("expr_rotation", "u = x*c - y*s; v = x*s + y*c", &[("c", 0.955_336_5), ("s", 0.295_520_2)]),
    ("expr_sum_squares", "s = sum(x*x)", &[]),
];

/// The lengths an expression is benched at: 2^16 and 2^22 in the short run, its whole ladder in the long one.
fn expression_ladder(source: &str, scalars: &[(&str, f32)]) -> Vec<ExprParams> {
    let names: Vec<&str> = scalars.iter().map(|(n, _)| *n).collect();
    let program = Expr::parse(source).and_then(|e| e.bind(&names)).expect("the benched expressions are valid");
    let values =
        program.scalars.iter().map(|s| scalars.iter().find(|(n, _)| n == s).map_or(0.0, |(_, v)| *v)).collect();
    let template = ExprParams::new(Arc::new(program), 0, values);
    if full() {
        gpuworthy::core::expr::expression_ladder(&template, false)
    } else {
        vec![template.with_len(1 << 16), template.with_len(1 << 22)]
    }
}

impl WithBackend for BenchEveryWorkload<'_> {
    type Output = ();

    fn call<B: ImplementsEveryWorkload + 'static>(self, backend: &Arc<B>) {
        let spec = self.spec;
        let fresh = || Device::open(spec.clone()).expect("opened once already");
        gpuworthy::core::for_each_workload!(bench_each_workload; self.criterion, &**backend, &fresh);
        for (name, source, scalars) in EXPRESSIONS {
            let ladder = expression_ladder(source, scalars);
            bench_backend::<Expression, _>(self.criterion, &**backend, &fresh, name, &ladder);
        }
    }
}

thread_local! {
    /// Each backend benchmarked in this run, with its device's label (`wgpu(cpu)` for lavapipe), for the table.
    static BENCHED: std::cell::RefCell<Vec<(BackendKind, String)>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn benches(c: &mut Criterion) {
    for spec in device_specs() {
        match Device::open(spec.clone()) {
            Ok(device) => {
                BENCHED.with(|b| b.borrow_mut().push((device.kind(), device.label().to_string())));
                device.with_backend(BenchEveryWorkload { criterion: c, spec: &spec });
                if let Some(pipelined) = device.pipelined() {
                    pipelined.with_backend(BenchEveryPipelined { criterion: c });
                }
            }
            Err(e) if e.is_unavailable() => eprintln!("not benchmarking {spec}: {e}"),
            Err(e) => bad_environment(e),
        }
    }
}

/// Where criterion writes (as it chooses by default: `CRITERION_HOME`, else `CARGO_TARGET_DIR`, else the target
/// folder this bench binary was built into, else `target/criterion` under the working directory).
fn criterion_directory() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    let built_in = std::env::current_exe().ok().and_then(|exe| {
        let deps = exe.parent()?;
        (deps.file_name()? == "deps").then(|| deps.parent()?.parent().map(|target| target.join("criterion")))?
    });
    built_in.unwrap_or_else(|| PathBuf::from("target/criterion"))
}

fn main() {
    let started = SystemTime::now();
    let directory = criterion_directory();
    // The short run bootstraps 10 000 resamples instead of 100 000: with 100 000, criterion's analysis and charts take
    // far longer than the measurement itself (measured:
    // docs/results/cpu-2-core-lavapipe/README.md#why-the-code-is-shaped-so).
    let criterion = Criterion::default().output_directory(&directory);
    let criterion = if full() { criterion } else { criterion.nresamples(10_000) };
    let mut criterion = criterion.configure_from_args();
    benches(&mut criterion);
    criterion.final_summary();
    let estimates = read_estimates(&directory, started);
    if estimates.is_empty() {
        return;
    }
    // The columns: each backend benchmarked, in the order of `BackendKind::ALL`, labelled as every report labels it.
    let labels = BENCHED.with(|b| b.borrow().clone());
    let backends: Vec<(BackendKind, String)> = BackendKind::ALL
        .iter()
        .filter(|k| estimates.iter().any(|e| e.backend == k.name()))
        .map(|k| {
            let label =
                labels.iter().find(|(kind, _)| kind == k).map_or_else(|| k.name().to_owned(), |(_, l)| l.clone());
            (*k, label)
        })
        .collect();
    println!("{}", table(&estimates, &backends));
    println!("\nHTML reports: {}", directory.join("report").join("index.html").display());
}
