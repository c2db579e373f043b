//! The command-line tool's handling of bad input: a one-line error and exit code 2, never a panic.

mod common;

use std::process::{Command, Output};

use common::binary;

/// Runs the tool with `args`.
fn gpuworthy(args: &[&str]) -> Output {
    Command::new(binary()).args(args).output().expect("the binary runs")
}

/// Exit code 2, a message on stderr naming `needle`, and no panic.
fn rejected(args: &[&str], needle: &str) {
    let out = gpuworthy(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?} exited with {:?}: {stderr}", out.status.code());
    assert!(stderr.contains(needle), "{args:?}: stderr does not mention `{needle}`: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
}

#[test]
fn an_unknown_workload_is_a_usage_error() {
    rejected(&["run", "fft"], "fft");
}

#[test]
fn an_unknown_backend_is_a_usage_error() {
    rejected(&["run", "square", "--backend", "opencl"], "unknown backend `opencl`");
    rejected(&["sweep", "square", "--backends", "cpu,tpu"], "unknown backend `tpu`");
    rejected(&["run", "square", "--backend", "cuda:first"], "cuda:<ordinal>");
    rejected(&["sweep", "square", "--backends", "cpu,cuda:0,cuda:1"], "two cuda devices");
    rejected(&["run", "square", "--backend", "cpu", "--pinned"], "--pinned applies to CUDA");
    rejected(&["run", "square", "--backend", "cpu", "--block-size", "128"], "--block-size applies to CUDA");
    rejected(&["run", "sum", "--backend", "cuda", "--block-size", "128"], "elementwise workloads");
    rejected(&["run", "square", "--backend", "auto", "--block-size", "128"], "not auto");
}

#[test]
fn workload_parameters_are_checked_and_belong_to_their_workload() {
    rejected(&["run", "square", "--size", "1K", "--bins", "16"], "--bins does not apply to this workload");
    rejected(&["run", "mandelbrot", "--size", "64", "--bins", "16"], "--bins does not apply to mandelbrot");
    rejected(&["run", "histogram", "--bins", "0"], "expected 1 to 65536");
    rejected(&["run", "histogram", "--distribution", "normal"], "uniform or skewed");
    rejected(&["run", "mandelbrot", "--region", "1,0,0,1"], "each minimum below its maximum");
    rejected(&["run", "mandelbrot", "--max-iter", "2^30"], "expected 1 to");
    rejected(&["sweep", "--bins", "16"], "--bins needs exactly one workload");
    rejected(&["run", "square", "--launches", "0"], "--launches");
}

#[test]
fn the_timing_lessons_run_on_the_cpu() {
    let out = gpuworthy(&[
        "run",
        "mandelbrot",
        "--size",
        "64",
        "--region",
        "-0.76,-0.74,0.09,0.11",
        "--max-iter",
        "100",
        "--no-sync",
        "--launches",
        "4",
        "--no-spin-up",
        "--quick",
    ]);
    expect(&out, "run mandelbrot with the lessons", 0, "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("host, no synchronise") && stdout.contains("4 per transfer"), "{stdout}");
    let out = gpuworthy(&["run", "histogram", "--size", "64K", "--bins", "16", "--distribution", "skewed", "--quick"]);
    expect(&out, "run histogram with bins", 0, "");
    assert!(String::from_utf8_lossy(&out.stdout).contains("(16 bins) skewed"));
}

#[test]
fn a_run_into_a_reused_output_is_checked_and_says_so() {
    let out = gpuworthy(&["run", "softmax", "--size", "33x1000", "--backend", "cpu", "--quick", "--reuse-output"]);
    expect(&out, "run softmax --reuse-output", 0, "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("into the previous run's output vector"), "{stdout}");
    // The variants' rows: between the table's header and its first note.
    let rows: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("variant"))
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with("kernel clock"))
        .collect();
    assert!(!rows.is_empty() && rows.iter().all(|l| l.trim_end().ends_with("ok")), "{stdout}");
}

#[test]
fn the_help_names_the_tool_and_the_device_forms() {
    let version = gpuworthy(&["--version"]);
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), format!("gpuworthy {}", env!("CARGO_PKG_VERSION")));
    let help = String::from_utf8_lossy(&gpuworthy(&["--help"]).stdout).into_owned();
    assert!(help.contains("Is this work worth sending to the GPU?") && help.contains("Usage: gpuworthy"), "{help}");
    let run_help = String::from_utf8_lossy(&gpuworthy(&["run", "--help"]).stdout).into_owned();
    assert!(run_help.contains("cuda:N") && run_help.contains("wgpu:ADAPTER"), "{run_help}");
}

#[test]
fn a_device_that_is_not_here_is_refused_with_its_reason() {
    // No machine has a 1000th CUDA device: unavailable (exit 1) with the reason, never a panic.
    let out = gpuworthy(&["run", "square", "--size", "1K", "--backend", "cuda:999"]);
    expect(&out, "cuda:999", 1, "cuda backend unavailable");
}

#[test]
fn a_wgpu_adapter_on_the_cpu_is_labelled_so_in_the_table() {
    let devices = String::from_utf8_lossy(&gpuworthy(&["devices"]).stdout).into_owned();
    if !devices.lines().any(|l| l.starts_with("wgpu") && l.contains("a CPU adapter")) {
        println!("no wgpu CPU adapter here: not exercised");
        return;
    }
    let out = gpuworthy(&["sweep", "square", "--backends", "cpu,wgpu", "--sizes", "1K", "--budget", "1"]);
    expect(&out, "a sweep on a CPU adapter", 0, "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("wgpu(cpu) kernel"), "{stdout}");
}

#[test]
fn an_unknown_variant_is_a_usage_error() {
    rejected(&["run", "square", "--backend", "cpu", "--variant", "turbo"], "turbo");
}

#[test]
fn a_malformed_size_is_a_usage_error() {
    rejected(&["run", "square", "--size", "lots"], "malformed size `lots`");
    rejected(&["run", "matmul", "--size", "3x3"], "MxKxN");
    rejected(&["sweep", "square", "--sizes", "1M,2^"], "malformed size");
}

#[test]
fn a_size_beyond_a_device_limit_is_a_usage_error() {
    // A mandelbrot row of two billion counts (8 GB) exceeds every wgpu binding limit (at most 4 GiB) and needs no
    // input data.
    let devices = String::from_utf8_lossy(&gpuworthy(&["devices"]).stdout).into_owned();
    if devices.lines().any(|l| l.starts_with("wgpu  available") || l.starts_with("wgpu available")) {
        rejected(&["run", "mandelbrot", "--size", "2000000000x1", "--backend", "wgpu"], "limit");
    } else {
        println!("wgpu unavailable here: the device-limit case is not exercised");
    }
}

#[test]
fn a_shape_with_too_many_dimensions_is_a_usage_error() {
    rejected(&["run", "stencil", "--size", "0x5x3"], "malformed size");
}

#[test]
fn devices_lists_every_backend() {
    let out = gpuworthy(&["devices"]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    for kind in ["cpu", "cuda", "wgpu"] {
        assert!(stdout.lines().any(|l| l.starts_with(kind)), "no line for {kind}: {stdout}");
    }
}

/// Runs the tool with `env` set, returning the output.
fn gpuworthy_with(env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(binary()).envs(env.iter().copied()).args(args).output().expect("the binary runs")
}

/// Whether this machine has the backend, as `gpuworthy devices` reports it.
fn available(kind: &str) -> bool {
    let devices = String::from_utf8_lossy(&gpuworthy(&["devices"]).stdout).into_owned();
    devices.lines().any(|l| {
        let mut words = l.split_whitespace();
        words.next() == Some(kind) && words.next() == Some("available:")
    })
}

/// One row of the bad-input table: environment, arguments, the exit code, and what stderr must name.
type BadInput<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str], i32, &'a str);

/// Asserts the exit code, that stderr names the problem, and that nothing panicked.
fn expect(out: &Output, what: &str, code: i32, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{what}: exit code {:?}, stderr: {stderr}", out.status.code());
    assert!(stderr.contains(needle), "{what}: stderr does not mention `{needle}`: {stderr}");
    assert!(!stderr.contains("panicked"), "{what} panicked: {stderr}");
}

#[test]
fn bad_inputs_are_refused_with_a_message_and_the_right_exit_code() {
    let dir = std::env::temp_dir().join(format!("gpuworthy-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let blocker = dir.join("a-file");
    std::fs::write(&blocker, b"").unwrap();
    let under_a_file = blocker.join("out.json");
    let under_a_file = under_a_file.to_str().unwrap();
    let plot_under_a_file = blocker.join("plots");
    let plot_under_a_file = plot_under_a_file.to_str().unwrap();
    // (environment, arguments, exit code, what stderr must name). Sizes are past the memory of any machine these
    // tests run on, and every one is refused before anything is allocated.
    let cases: &[BadInput] = &[
        (&[], &["run", "sum", "--size", "2^40"], 2, "too large"),
        (&[], &["run", "sum", "--size", "2^62"], 2, "too large"),
        (&[], &["run", "sum", "--size", "2^62", "--tolerance", "1e-2"], 2, "too large"),
        (
            &[],
            &["run", "matmul", "--size", "1000000x1000000x1000000", "--backend", "auto", "--precision", "bf16"],
            2,
            "too large",
        ),
        (&[], &["run", "matmul", "--size", "64", "--tolerance", "0"], 2, "between 0 and 1"),
        (&[], &["explain", "matmul", "--size", "64", "--tolerance", "nan"], 2, "between 0 and 1"),
        (
            &[],
            &["run", "matmul", "--size", "64", "--precision", "bf16", "--tolerance", "1e-3"],
            2,
            "within the tolerance",
        ),
        (
            &[],
            &["run", "matmul", "--size", "64", "--backend", "cpu+wgpu", "--tolerance", "1e-2"],
            2,
            "best f32 variant",
        ),
        (&[], &["run", "square", "--size", "99999999999999"], 2, "too large"),
        (&[], &["run", "sum", "--size", "64G"], 2, "too large"),
        (&[], &["run", "mandelbrot", "--size", "10000000x10000000"], 2, "too large"),
        (&[], &["run", "matmul", "--size", "4000000000"], 2, "too large"),
        (&[], &["run", "sum", "--size", "2^99"], 2, "overflows"),
        (&[], &["sweep", "sum", "--sizes", "1K", "--budget=0"], 2, "--budget"),
        (&[], &["sweep", "sum", "square", "--sizes", "1K"], 2, "exactly one workload"),
        (&[("GPUWORTHY_CPU_SIMD", "bogus")], &["devices"], 2, "GPUWORTHY_CPU_SIMD=bogus"),
        (&[("GPUWORTHY_BACKEND", "bogus")], &["explain", "sum", "--size", "1K"], 2, "GPUWORTHY_BACKEND=bogus"),
        (&[("GPUWORTHY_CPU_SIMD", "bogus")], &["run", "square", "--size", "1K"], 2, "GPUWORTHY_CPU_SIMD"),
        (
            &[("GPUWORTHY_CPU_SIMD", "bogus")],
            &["run", "square", "--size", "1K", "--backend", "auto"],
            2,
            "GPUWORTHY_CPU_SIMD",
        ),
        (
            &[("GPUWORTHY_CPU_SIMD", "bogus")],
            &["run", "--expr", "y = 2*x", "--size", "1K", "--backend", "auto"],
            2,
            "GPUWORTHY_CPU_SIMD",
        ),
        (&[("GPUWORTHY_WGPU_UNCHECKED", "maybe")], &["devices"], 2, "GPUWORTHY_WGPU_UNCHECKED=maybe"),
        (&[("GPUWORTHY_WGPU_CHECKS", "speed")], &["devices"], 2, "GPUWORTHY_WGPU_CHECKS=speed"),
        (&[("GPUWORTHY_WGPU_MAX_BINDING", "1K")], &["devices"], 2, "GPUWORTHY_WGPU_MAX_BINDING=1K"),
        (&[("GPUWORTHY_WGPU_SUM_ORDER", "sideways")], &["devices"], 2, "GPUWORTHY_WGPU_SUM_ORDER=sideways"),
        (&[("GPUWORTHY_REQUIRE", "cpu,tpu")], &["devices"], 2, "GPUWORTHY_REQUIRE=cpu,tpu"),
        (&[], &["sweep", "sum", "--sizes", "1K", "--json", under_a_file], 2, "--json"),
        (&[], &["sweep", "sum", "--sizes", "1K", "--csv", under_a_file], 2, "--csv"),
        (&[], &["sweep", "sum", "--sizes", "1K", "--plot", plot_under_a_file], 2, "--plot"),
        (&[], &["explain", "square", "--size", "2^50"], 2, "too large"),
        (&[], &["explain", "--on", "a-toaster", "square", "--size", "1K"], 2, "nvidia-h100"),
        (&[], &["explain", "--on", "nvidia-h100", "square", "--size", "2^50"], 2, "too large"),
        (&[], &["sweep", "square", "--sizes", "2^40", "--backends", "cpu"], 2, "no size could be measured"),
        (&[], &["explain", "square", "--size", "1K", "--unified"], 2, "--on"),
        (&[], &["explain", "--on", "nvidia-h100", "square", "--size", "1K", "--gpu-memory", "0"], 2, "positive number"),
        (
            &[],
            &["explain", "--on", "nvidia-h100", "square", "--size", "1K", "--link", "12", "--unified"],
            2,
            "--unified",
        ),
        (&[], &["explain", "--on", "nvidia-h100", "--expr", "y = 2*x", "--size", "1K", "--unified"], 2, "built-in"),
        (&[], &["roofline", "no-such-sweep.json"], 2, "cannot read the sweep no-such-sweep.json"),
        (&[], &["roofline", "Cargo.toml"], 2, "Cargo.toml is not a sweep's JSON"),
        (&[], &["roofline"], 2, "FILES"),
    ];
    for (env, args, code, needle) in cases {
        let out = gpuworthy_with(env, args);
        expect(&out, &format!("{env:?} {args:?}"), *code, needle);
        if args[0] == "sweep" {
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(!stdout.contains("=="), "{args:?} measured before refusing: {stdout}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn environment_variables_follow_one_rule_and_devices_shows_them() {
    // Empty means the default; values are read in any case.
    let out = gpuworthy_with(&[("GPUWORTHY_WGPU_CHECKS", ""), ("GPUWORTHY_CPU_SIMD", "PORTABLE")], &["devices"]);
    expect(&out, "empty GPUWORTHY_WGPU_CHECKS", 0, "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("GPUWORTHY_WGPU_CHECKS unset"), "{stdout}");
    assert!(stdout.contains("GPUWORTHY_CPU_SIMD=PORTABLE") && stdout.contains("simd: portable"), "{stdout}");
    if available("wgpu") {
        assert!(stdout.contains("shader_checks: bounds, division"), "empty must mean the default: {stdout}");
        let out = gpuworthy_with(&[("GPUWORTHY_WGPU_UNCHECKED", "yes")], &["devices"]);
        assert!(String::from_utf8_lossy(&out.stdout).contains("shader_checks: none"), "`yes` is ignored");
    }
    let out = gpuworthy_with(&[("GPUWORTHY_WGPU_CHECK", "none")], &["devices"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("GPUWORTHY_WGPU_CHECK is set but gpuworthy reads no such variable"), "{stdout}");
}

#[test]
fn a_closed_pipe_ends_the_tool_quietly() {
    use std::process::Stdio;
    for args in [
        &["devices"][..],
        &["run", "square", "--size", "4K", "--quick", "--backend", "cpu"],
        &["sweep", "square", "--backends", "cpu", "--sizes", "1K,4K"],
    ] {
        let mut child = Command::new(binary())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        drop(child.stdout.take()); // the reader goes away, as `| head -0` would
        let out = child.wait_with_output().unwrap();
        expect(&out, &format!("{args:?} into a closed pipe"), 0, "");
    }
}

/// An empty size of every workload: no elements, though a matrix or image may keep one side.
const EMPTY_SIZES: [(&str, &str); 9] = [
    ("square", "0"),
    ("saxpy", "0"),
    ("sum", "0"),
    ("softmax", "0x5"),
    ("matmul", "0x5x3"),
    ("mandelbrot", "0x7"),
    ("histogram", "0"),
    ("stencil", "0x5"),
    ("scan", "0"),
];

#[test]
fn every_workload_has_an_empty_size_to_try() {
    let mut listed: Vec<&str> = EMPTY_SIZES.iter().map(|(w, _)| *w).collect();
    let mut workloads = gpuworthy::core::WORKLOAD_NAMES.to_vec();
    listed.sort_unstable();
    workloads.sort_unstable();
    assert_eq!(listed, workloads, "the empty-input test must try every workload");
}

#[test]
fn empty_inputs_give_empty_results_on_every_backend() {
    for backend in ["cpu", "wgpu", "cuda"] {
        if !available(backend) {
            println!("{backend} unavailable here: not exercised");
            continue;
        }
        for (workload, size) in EMPTY_SIZES {
            let out = gpuworthy(&["run", workload, "--size", size, "--backend", backend, "--quick"]);
            expect(&out, &format!("{workload} {size} on {backend}"), 0, "");
        }
    }
}

#[test]
fn a_sweep_where_no_backend_can_run_fails() {
    let missing = ["cuda", "wgpu"].into_iter().find(|b| !available(b));
    match missing {
        Some(backend) => {
            let out = gpuworthy(&["sweep", "square", "--backends", backend, "--sizes", "1K"]);
            expect(&out, "a sweep with no backend", 1, "none of the requested backends");
        }
        None => println!("every backend is available here: not exercised"),
    }
}

#[test]
fn explain_without_a_trusted_calibration_warns_and_uses_the_default() {
    let dir = std::env::temp_dir().join(format!("gpuworthy-cli-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let corrupt = dir.join("corrupt.json");
    std::fs::write(&corrupt, "{ not json").unwrap();
    let missing = dir.join("missing.json");
    for (file, needle) in [(&corrupt, "corrupt"), (&missing, "not calibrated")] {
        let path = file.to_str().unwrap();
        let out = gpuworthy_with(&[("GPUWORTHY_CALIBRATION", path)], &["explain", "square", "--size", "2^20"]);
        expect(&out, &format!("explain with {path}"), 0, needle);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("auto: cpu") && stdout.contains("the default"), "{stdout}");
        let out = gpuworthy_with(&[("GPUWORTHY_CALIBRATION", path)], &["explain", "sum", "--size", "4K", "--pinned"]);
        expect(&out, &format!("explain --pinned with {path}"), 0, needle);
        assert!(String::from_utf8_lossy(&out.stdout).contains("moved through pinned memory"));
        let out =
            gpuworthy_with(&[("GPUWORTHY_CALIBRATION", path)], &["run", "sum", "--size", "4K", "--backend", "auto"]);
        expect(&out, &format!("run --backend auto with {path}"), 0, needle);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_a_gpu_the_reference_machine_answers_and_says_it_is_a_prediction() {
    let missing = std::env::temp_dir().join(format!("gpuworthy-cli-on-{}.json", std::process::id()));
    let env = [("GPUWORTHY_CALIBRATION", missing.to_str().unwrap())];
    let out = gpuworthy_with(&env, &["explain", "--on", "nvidia-h100", "square", "--size", "2^20", "--resident"]);
    expect(&out, "explain --on nvidia-h100", 0, "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("beside nvidia-h100")
            && stdout.contains("NVIDIA H100")
            && stdout.contains("  cuda ")
            && stdout.contains("  cpu ")
            && stdout.contains("a prediction, not a measurement"),
        "{stdout}"
    );
    // A sweep that measured no GPU adds the reference machine's crossovers under its table.
    let out = gpuworthy_with(&[], &["sweep", "square", "--sizes", "1K,64K,1M", "--backends", "cpu"]);
    expect(&out, "sweep --backends cpu", 0, "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("no GPU here; predicted on nvidia-h100") && stdout.contains("crossover, data resident"),
        "{stdout}"
    );
}

#[test]
fn calibrate_refuses_what_it_cannot_do() {
    rejected(&["calibrate", "--json", "x.json"], "--json goes with --evaluate");
    rejected(&["explain", "square", "--size", "1K", "--resident", "--pinned"], "cannot be used with");
    let missing = std::env::temp_dir().join(format!("gpuworthy-cli-none-{}.json", std::process::id()));
    let out = gpuworthy_with(&[("GPUWORTHY_CALIBRATION", missing.to_str().unwrap())], &["calibrate", "--evaluate"]);
    expect(&out, "calibrate --evaluate without a calibration", 1, "run `gpuworthy calibrate` first");
    rejected(&["calibrate", "--sets"], "--evaluate");
    rejected(&["calibrate", "--evaluate", "--sets", "--expressions"], "cannot be used with");
    let out =
        gpuworthy_with(&[("GPUWORTHY_CALIBRATION", missing.to_str().unwrap())], &["calibrate", "--evaluate", "--sets"]);
    expect(&out, "calibrate --evaluate --sets without a calibration", 1, "run `gpuworthy calibrate` first");
    let env = [("GPUWORTHY_CALIBRATION", missing.to_str().unwrap())];
    let out = gpuworthy_with(&env, &["calibrate", "--expr", "y = 2*x"]);
    expect(&out, "calibrate --expr without a calibration", 1, "run `gpuworthy calibrate` first");
    let out = gpuworthy_with(&env, &["calibrate", "--expr", "y = 2*x", "--evaluate"]);
    expect(&out, "calibrate --expr --evaluate", 2, "drop --expr");
    let out = gpuworthy_with(&env, &["calibrate", "--expr", "y = 2*"]);
    expect(&out, "calibrate --expr of a malformed expression", 2, "^");
}

/// Mandelbrot's boundary region at 1000 iterations, where llvmpipe's counts differ from the CPU's at many of the
/// pixels (chapter 14), all past the iteration where those pixels' `f32` and `f64` orbits part: the sweep passes on
/// every adapter, and the JSON and CSV hold every row. (A failed check's FAILED row and its reason are checked by the
/// unit tests of `bench-suite/src/report.rs` and `gpuworthy/src/model/sweep.rs`.)
#[test]
fn a_boundary_sweep_passes_everywhere_and_the_exports_keep_every_row() {
    if !available("wgpu") {
        println!("wgpu unavailable here: not exercised");
        return;
    }
    let dir = std::env::temp_dir().join(format!("gpuworthy-cli-boundary-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, csv) = (dir.join("sweep.json"), dir.join("sweep.csv"));
    let sweep = [
        "sweep",
        "mandelbrot",
        "--sizes",
        "64",
        "--region",
        "boundary",
        "--max-iter",
        "1000",
        "--backends",
        "cpu,wgpu",
        "--quick",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ];
    let out = gpuworthy(&sweep);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let csv_text = std::fs::read_to_string(&csv).expect("the CSV is written whatever the checks say");
    let json_text = std::fs::read_to_string(&json).expect("the JSON is written whatever the checks say");
    // The CPU's variants and wgpu's, each a row of the CSV after its header.
    let rows: Vec<&str> = csv_text.lines().filter(|l| l.starts_with("mandelbrot,")).collect();
    assert!(rows.iter().any(|r| r.contains(",cpu,")) && rows.iter().any(|r| r.contains(",wgpu,")), "{csv_text}");
    expect(&out, "the boundary sweep", 0, "");
    assert!(!stdout.contains("FAILED") && !json_text.contains("FAILED"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// wgpu takes `--block-size` as the elementwise shaders' workgroup size: each size is a row of its own, and a size
/// the adapter cannot run is a usage error naming the limit.
#[test]
fn a_wgpu_workgroup_size_is_swept_and_a_bad_one_refused() {
    if !available("wgpu") {
        println!("wgpu unavailable here: not exercised");
        return;
    }
    let out =
        gpuworthy(&["run", "square", "--size", "100003", "--backend", "wgpu", "--quick", "--block-size", "32,256"]);
    expect(&out, "a workgroup-size sweep on wgpu", 0, "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for row in ["naive wg32", "vec4 wg32", "naive wg256", "vec4 wg256"] {
        let line =
            stdout.lines().find(|l| l.trim_start().starts_with(row)).unwrap_or_else(|| panic!("{row}: {stdout}"));
        assert!(line.trim_end().ends_with("ok"), "{line}");
    }
    rejected(&["run", "square", "--size", "1K", "--backend", "wgpu", "--block-size", "48"], "workgroup size");
}

/// An expression of one's own through `run`: checked and measured on every available device in the table of `run`;
/// a malformed one, or a value for a name it does not read, is a usage error with the caret under the text.
#[test]
fn run_measures_an_expression_on_every_device_and_refuses_bad_ones_with_a_caret() {
    let out = gpuworthy(&["run", "--expr", "y = a*x + b", "--set", "a=2,b=1", "--size", "2^14", "--quick"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("`y = a*x + b` at 16384 on cpu"), "{stdout}");
    assert!(stdout.contains("blocks") && stdout.contains(" ok"), "{stdout}");
    let out = gpuworthy(&["run", "--expr", "y = 2 * sinc(x)", "--quick"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown function `sinc`") && stderr.contains("^^^^"), "{stderr}");
    rejected(&["run", "--expr", "y = a * x", "--set", "a=2,b=1"], "does not read it");
    rejected(&["run", "--expr", "y = a * x", "--set", "a"], "NAME=VALUE");
    rejected(&["run", "--expr", "y = a * x", "--set", "a=two"], "not a number");
    rejected(&["run", "--expr", "y = x", "--size", "2^60"], "too large");
}

/// The first screen on a machine without a display has no false error: Mesa's Vulkan device-selection layer asks the
/// Wayland client library for a display while wgpu starts, and with `XDG_RUNTIME_DIR` unset (or not an absolute
/// path) that library would print `error: XDG_RUNTIME_DIR is invalid or not set in the environment.` before anything
/// else. Whatever the variable holds, a run prints no `error:` line of a driver's.
#[test]
fn a_machine_without_a_display_prints_no_false_error() {
    for xdg in [None, Some("relative/dir")] {
        let mut command = Command::new(binary());
        command.args(["run", "square", "--size", "4096", "--backend", "auto", "--quick"]);
        match xdg {
            None => command.env_remove("XDG_RUNTIME_DIR"),
            Some(dir) => command.env("XDG_RUNTIME_DIR", dir),
        };
        command.env_remove("WAYLAND_DISPLAY");
        let out = command.output().expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "XDG_RUNTIME_DIR={xdg:?}: {stderr}");
        assert!(!stderr.contains("error:"), "XDG_RUNTIME_DIR={xdg:?}: a false error on the first screen: {stderr}");
    }
    let devices = Command::new(binary()).arg("devices").env_remove("XDG_RUNTIME_DIR").output().expect("runs");
    let all = format!("{}{}", String::from_utf8_lossy(&devices.stdout), String::from_utf8_lossy(&devices.stderr));
    assert!(!all.contains("error: XDG_RUNTIME_DIR"), "{all}");
}

/// NaN and infinite scalars compute as IEEE arithmetic gives them, as they do in Python, and are checked against the
/// reference (NaN where it gives NaN); a range's ends stay finite, since inputs are drawn between them.
#[test]
fn nan_and_infinite_scalars_are_computed_and_checked() {
    for value in ["nan", "inf", "-inf"] {
        let set = format!("a={value},b=1");
        let out =
            gpuworthy(&["run", "--expr", "y = a*x + b", "--set", &set, "--size", "1K", "--backend", "cpu", "--quick"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{value}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains(" ok"), "{value}: the check did not pass: {stdout}");
    }
    rejected(&["run", "--expr", "y = log(x)", "--range", "x=0:inf"], "not a finite number");
}

/// The expression's bad-input table: every mistake in `--expr`, `--expr-file`, `--set` and `--range`, through `run`
/// and `sweep`, exits 2 with a message that names it, before anything is measured.
#[test]
fn every_bad_expression_input_is_a_usage_error_that_names_it() {
    for (args, needle) in [
        (&["run", "--expr-file", "/no/such/expression.txt"][..], "--expr-file /no/such/expression.txt"),
        (&["run", "square", "--range", "x=0:1"][..], "--range applies to an expression"),
        (&["run", "square", "--set", "a=1"][..], "--set applies to an expression"),
        (&["run", "--expr", "y = log(x)", "--range", "x=1:0"][..], "low end must be below"),
        (&["run", "--expr", "y = log(x)", "--range", "x=0..1"][..], "LOW:HIGH"),
        (&["run", "--expr", "y = log(x)", "--range", "z=0:1"][..], "not an input of the expression"),
        (&["run", "--expr", "y = a * x", "--set", "a=1", "--range", "a=0:1"][..], "is a scalar"),
        (&["run", "--expr", "y = a * x", "--set", "a=1", "--set", "a=2"][..], "given twice"),
        (&["run", "--expr", "y = x", "--expr-file", "-"][..], "cannot be used with"),
        (&["run", "--expr", "y = f64(x)"][..], "^"),
        (&["sweep", "--expr", "y = x +"][..], "^"),
        (&["sweep", "square", "--expr", "y = x"][..], "cannot be used with"),
        (&["sweep", "--expr", "y = x", "--sizes", "lots"][..], "malformed size"),
        (&["sweep", "--expr", "y = x", "--bins", "16"][..], "--bins does not apply to expr"),
        (&["sweep", "--expr", "y = a * x", "--set", "b=1"][..], "does not read it"),
        (&["explain", "--expr", "y = x", "--size", "2^50"][..], "too large"),
        (&["explain", "--expr", "y = x +", "--size", "1K"][..], "^"),
        (&["explain", "square", "--expr", "y = x", "--size", "1K"][..], "cannot be used with"),
    ] {
        rejected(args, needle);
    }
}

/// A range that puts a function outside its domain everywhere is warned about, naming the function; the run goes on.
#[test]
fn a_range_that_makes_a_function_nan_everywhere_is_warned_about() {
    let out = gpuworthy(&["run", "--expr", "y = log(x - 2)", "--size", "1K", "--backend", "cpu", "--quick"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: `log` gives NaN at every element tried") && stderr.contains("--range"),
        "{stderr}"
    );
    let out = gpuworthy(&["run", "--expr", "y = log(x - 2)", "--range", "x=3:4", "--size", "1K", "--backend", "cpu"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"), "{}", String::from_utf8_lossy(&out.stderr));
    // A function that is well defined on the default range but not on the one given.
    let out = gpuworthy(&["run", "--expr", "y = sqrt(x)", "--range", "x=-3:-1", "--size", "1K", "--backend", "cpu"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("warning: `sqrt` gives NaN at every element tried"), "{stderr}");
}

/// An expression read from a file (several statements, a range for `log`), and swept: the table names it, and its
/// JSON is written.
#[test]
fn an_expression_file_runs_and_an_expression_sweeps() {
    let dir = std::env::temp_dir().join(format!("gpuworthy-cli-expr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("expression.txt");
    std::fs::write(&file, "let t = log(x) - m\ny = t * t\n").unwrap();
    let file = file.to_str().unwrap();
    let out = gpuworthy(&[
        "run",
        "--expr-file",
        file,
        "--set",
        "m=0.5",
        "--range",
        "x=0.5:2",
        "--size",
        "4096",
        "--backend",
        "cpu",
        "--quick",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(" ok"), "{stdout}");
    let json = dir.join("sweep.json");
    let out = gpuworthy(&[
        "sweep",
        "--expr",
        "s = sum(x*x)",
        "--backends",
        "cpu",
        "--sizes",
        "1024,4096",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("== expr: s = sum(x*x)") && stdout.contains("4096"), "{stdout}");
    assert!(std::fs::read_to_string(&json).unwrap().contains("\"expr\""));
    let _ = std::fs::remove_dir_all(dir);
}

/// A sweep that measured some sizes and could not make the input of another shows its table, says which size, and
/// exits 4.
#[test]
fn a_sweep_with_a_size_that_could_not_be_measured_shows_the_rest_and_exits_4() {
    let out = gpuworthy(&["sweep", "square", "--sizes", "1K,2^40", "--backends", "cpu"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    expect(&out, "a sweep with one size past memory", 4, "nothing could be measured at square 1099511627776");
    assert!(stdout.contains("== square") && stdout.contains("1024"), "the measured size is shown: {stdout}");
    assert!(stdout.contains("could not generate the input"), "the table's note says why: {stdout}");
}

/// Without a GPU among the swept devices, a sweep sets the reference machines' GPUs beside this CPU through a curve
/// fitted to the CPU's times: with one size there is none, and the sweep says so rather than predict a crossover
/// that compares a GPU with nothing; with two sizes the predictions appear.
#[test]
fn a_sweep_of_one_size_predicts_no_crossover_beside_the_cpu() {
    let one = gpuworthy(&["sweep", "saxpy", "--sizes", "2^16", "--backends", "cpu"]);
    expect(&one, "a one-size sweep", 0, "");
    let stdout = String::from_utf8_lossy(&one.stdout);
    assert!(stdout.contains("one size was swept") && !stdout.contains("predicted on"), "{stdout}");
    let two = gpuworthy(&["sweep", "saxpy", "--sizes", "2^16,2^18", "--backends", "cpu"]);
    expect(&two, "a two-size sweep", 0, "");
    let stdout = String::from_utf8_lossy(&two.stdout);
    assert!(stdout.contains("predicted on nvidia-h200") && stdout.contains("crossover, data resident"), "{stdout}");
}

/// Calibration piped to a file draws no bar, so it says where it is: a line each time it moves to another workload or
/// device. `calibrate --expressions` stores the base expressions and the special-function rates.
#[test]
fn a_piped_calibration_says_where_it_is() {
    let path = std::env::temp_dir().join(format!("gpuworthy-cli-calibration-{}.json", std::process::id()));
    let path_text = path.to_str().unwrap().to_owned();
    let out = gpuworthy_with(&[("GPUWORTHY_CALIBRATION", &path_text)], &["calibrate", "--expressions"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("gpuworthy: [") && stderr.contains("cpu: special-function rates"), "{stderr}");
    let saved = std::fs::read_to_string(&path).unwrap();
    assert!(saved.contains("\"per_call_s\"") && saved.contains("expr: s = sum((x * x))"), "{saved:.300}");

    // An expression calibration never saw is predicted from its cost until `calibrate --expr` measures it; from then
    // on explain predicts it from its own curves.
    let env = [("GPUWORTHY_CALIBRATION", path_text.as_str())];
    let explain = &["explain", "--expr", "y = tanh(x) * 3 + 1", "--size", "2^16"];
    let before = gpuworthy_with(&env, explain);
    expect(&before, "explain before calibrate --expr", 0, "");
    let before = String::from_utf8_lossy(&before.stdout);
    assert!(before.contains("never measured here") && !before.contains("own calibration"), "{before}");
    let out = gpuworthy_with(&env, &["calibrate", "--expr", "y = tanh(x) * 3 + 1"]);
    expect(&out, "calibrate --expr", 0, "");
    assert!(String::from_utf8_lossy(&out.stdout).contains("now predict it from its own curves"));
    let after = gpuworthy_with(&env, explain);
    expect(&after, "explain after calibrate --expr", 0, "");
    let after = String::from_utf8_lossy(&after.stdout);
    assert!(after.contains("this expression's own calibration") && !after.contains("never measured"), "{after}");
    std::fs::remove_file(&path).ok();
}

/// `roofline` places a committed sweep's workloads under its devices' measured roofs, and draws the chart.
#[test]
fn roofline_of_a_committed_sweep() {
    let sweep = format!("{}/../docs/results/nvidia-h200/baseline/run-2/sweep.json", env!("CARGO_MANIFEST_DIR"));
    let chart = std::env::temp_dir().join(format!("gpuworthy-roofline-cli-{}.svg", std::process::id()));
    let out = gpuworthy_with(&[], &["roofline", &sweep, "--plot", chart.to_str().unwrap()]);
    expect(&out, "roofline", 0, "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("cuda: memory roof") && stdout.contains("matmul") && stdout.contains("compute"),
        "{stdout}"
    );
    let svg = std::fs::read_to_string(&chart).expect("the chart is written");
    std::fs::remove_file(&chart).ok();
    assert!(svg.contains("<svg") && svg.contains("stencil"), "a chart with the workloads' labels");
}

/// `explain --on` with a GPU that was never measured says so, and predicts it slower where its memory is slower.
#[test]
fn explain_on_a_what_if_gpu_is_labelled_and_bounded_by_its_memory() {
    let args = ["explain", "--on", "nvidia-h100", "square", "--size", "2^24", "--resident"];
    let reference = gpuworthy_with(&[], &args);
    expect(&reference, "explain --on nvidia-h100", 0, "");
    let slower: Vec<&str> = args.iter().copied().chain(["--gpu-memory", "100"]).collect();
    let out = gpuworthy_with(&[], &slower);
    expect(&out, "explain --on nvidia-h100 --gpu-memory 100", 0, "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("a what-if GPU") && stdout.contains("memory 100 GB/s"), "{stdout}");
    assert!(stdout.contains("what-if: no such GPU was measured"), "{stdout}");
    // 2^24 squares move 128 MiB: at 100 GB/s that is at least 1.34 ms on either GPU.
    let cuda = stdout.lines().find(|l| l.trim_start().starts_with("cuda")).expect("a cuda row");
    assert!(cuda.contains(" ms"), "{cuda}");
}

/// `explain --on MACHINE --gpus 2` predicts the reference machine's GPUs two at a time and with the CPU, and four
/// and eight as what-ifs, on a machine without GPUs.
#[test]
fn explain_on_a_reference_machine_predicts_its_gpus_as_a_group() {
    let out = gpuworthy_with(&[], &["explain", "--on", "nvidia-h200", "--gpus", "2", "square", "--size", "2^28"]);
    expect(&out, "explain --on nvidia-h200 --gpus 2", 0, "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = |start: &str| stdout.lines().find(|l| l.trim_start().starts_with(start)).map(str::to_owned);
    let two = line("cuda×2 ").unwrap_or_else(|| panic!("a two-GPU line: {stdout}"));
    assert!(two.contains("50% / 50%") && !two.contains("what-if"), "{two}");
    assert!(line("cuda×4 ").is_some_and(|l| l.contains("what-if")), "{stdout}");
    assert!(line("cpu+cuda ").is_some() && stdout.contains("2 GPUs against one: pays"), "{stdout}");
    assert!(stdout.contains("fastest set: ") && stdout.contains("cuda×2"), "{stdout}");
    // One H200 on its host: the contention of the host with two of them, said where it comes from.
    assert!(
        stdout.contains("cuda×2: each GPU's transfers") && stdout.contains("measured on nvidia-h200-x2"),
        "{stdout}"
    );
    // The two-H200 host's own calibration: its two GPUs without --gpus, and its own contention.
    let x2 = gpuworthy_with(&[], &["explain", "--on", "nvidia-h200-x2", "square", "--size", "2^28"]);
    expect(&x2, "explain --on nvidia-h200-x2", 0, "");
    let x2 = String::from_utf8_lossy(&x2.stdout);
    assert!(x2.lines().any(|l| l.trim_start().starts_with("cuda×2 ") && !l.contains("what-if")), "{x2}");
    assert!(x2.contains("members slow one another") && !x2.contains("measured on nvidia-h200-x2,"), "{x2}");
    // Its model's error, measured by `calibrate --evaluate` on that host, ships with it and is said.
    assert!(x2.contains("the model's error (calibrate --evaluate") && x2.contains("(on nvidia-h200-x2)"), "{x2}");
    let refused = gpuworthy_with(&[], &["explain", "--gpus", "2", "square", "--size", "2^20"]);
    assert_eq!(refused.status.code(), Some(2), "--gpus without --on: {}", String::from_utf8_lossy(&refused.stderr));
}

/// Whether a `cpu+wgpu` group's command found no wgpu adapter (exit 1): skipped loudly, and a failure where
/// `GPUWORTHY_REQUIRE` lists wgpu.
fn skipped_without_wgpu(out: &Output, what: &str) -> bool {
    if out.status.code() != Some(1) {
        return false;
    }
    let required = gpuworthy::core::BackendKind::required_by_env().unwrap_or_default();
    assert!(!required.contains(&gpuworthy::core::BackendKind::Wgpu), "{}", String::from_utf8_lossy(&out.stderr));
    eprintln!("SKIPPING {what}: {}", String::from_utf8_lossy(&out.stderr));
    true
}

/// `sweep --backends` with a group sweeps it against its members alone and says from which size it pays; a group
/// with an expression or the devices' files is refused.
#[test]
fn a_sweep_with_a_group_says_from_which_size_it_pays() {
    let out = gpuworthy(&["sweep", "square", "--backends", "cpu+wgpu", "--sizes", "1K,64K"]);
    if !skipped_without_wgpu(&out, "the group sweep") {
        expect(&out, "sweep with a group", 0, "");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("square on the group cpu+wgpu") && stdout.contains("the group pays"), "{stdout}");
        assert_eq!(stdout.lines().filter(|l| l.trim_start().starts_with("1024 ")).count(), 1, "{stdout}");
    }
    for (args, what) in [
        (&["sweep", "--expr", "y = 2 * x", "--backends", "cpu+wgpu"][..], "built-in workloads"),
        (&["sweep", "square", "--backends", "cpu,cpu+wgpu", "--json", "out.json"], "prints its table"),
        (&["sweep", "square", "--backends", "cpu+tpu"], "unknown backend"),
    ] {
        let out = gpuworthy(args);
        assert_eq!(out.status.code(), Some(2), "{what}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains(what), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// Two processes with ranks run one computation: each its share on its own device, rank 0 joining and checking the
/// parts (a planted lost part: rank 0 alone in a world of two names the missing rank); bad rank variables are
/// refused by name.
#[test]
fn two_processes_with_ranks_run_one_computation() {
    let dir = std::env::temp_dir().join(format!("gpuworthy-ranks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dir_text = dir.display().to_string();
    let start = |rank: &str, workload: &str, size: &str| {
        Command::new(binary())
            .envs([("GPUWORTHY_RANK", rank), ("GPUWORTHY_WORLD_SIZE", "2"), ("GPUWORTHY_RENDEZVOUS", &dir_text)])
            .args(["run", workload, "--size", size, "--backend", "cpu"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the binary starts")
    };
    for (workload, size) in [("square", "100003"), ("mandelbrot", "97"), ("sum", "2^20")] {
        let (zero, one) = (start("0", workload, size), start("1", workload, size));
        let (zero, one) = (zero.wait_with_output().unwrap(), one.wait_with_output().unwrap());
        expect(&one, "rank 1", 0, "");
        expect(&zero, "rank 0", 0, "");
        let stdout = String::from_utf8_lossy(&zero.stdout);
        assert!(stdout.contains("over 2 ranks") && stdout.contains("ok: the ranks' joined result"), "{stdout}");
        assert!(String::from_utf8_lossy(&one.stdout).contains("rank 1 of 2"));
    }
    let alone = gpuworthy_with(
        &[
            ("GPUWORTHY_RANK", "0"),
            ("GPUWORTHY_WORLD_SIZE", "2"),
            ("GPUWORTHY_RENDEZVOUS", &dir_text),
            ("GPUWORTHY_RENDEZVOUS_TIMEOUT", "0.3"),
        ],
        &["run", "square", "--size", "1000", "--backend", "cpu"],
    );
    assert_ne!(alone.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&alone.stderr).contains("ranks [1] of 2 never published"), "{alone:?}");
    let _ = std::fs::remove_dir_all(&dir);
    for (env, needle) in [
        (&[("GPUWORTHY_RANK", "0")][..], "GPUWORTHY_WORLD_SIZE is not set"),
        (&[("GPUWORTHY_RANK", "3"), ("GPUWORTHY_WORLD_SIZE", "2"), ("GPUWORTHY_RENDEZVOUS", "d")], "is not below"),
    ] {
        let out = gpuworthy_with(env, &["run", "square", "--size", "1000"]);
        assert_eq!(out.status.code(), Some(2), "{env:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains(needle), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn a_workload_runs_split_over_a_device_group_and_a_group_that_cannot_is_refused() {
    // The CPU and the wgpu adapter (lavapipe in CI) together; where no adapter opens, the group cannot either.
    let out = gpuworthy(&["run", "square", "--size", "100003", "--backend", "cpu+wgpu", "--quick"]);
    if !skipped_without_wgpu(&out, "the group run") {
        expect(&out, "square on cpu+wgpu", 0, "");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("on the group cpu+wgpu") && stdout.contains("ok: the joined result"), "{stdout}");
        // An expression's reduction, and Mandelbrot's rows split where their cost divides.
        for args in [
            &["run", "--expr", "s = sqrt(sum(x * x))", "--size", "2^20", "--backend", "cpu+wgpu", "--quick"][..],
            &["run", "mandelbrot", "--size", "256", "--backend", "cpu+wgpu", "--quick"],
        ] {
            let out = gpuworthy(args);
            expect(&out, &args.join(" "), 0, "");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains("ok: the joined result"), "{stdout}");
        }
    }
    let twice = gpuworthy(&["run", "square", "--backend", "cpu+cpu"]);
    let variant = gpuworthy(&["run", "--expr", "y = 2 * x", "--backend", "cpu+wgpu", "--variant", "simd"]);
    let pinned = gpuworthy(&["run", "square", "--backend", "cpu+wgpu", "--pinned"]);
    let locked = gpuworthy(&["run", "square", "--backend", "cpu", "--page-locked"]);
    let locked_sum = gpuworthy(&["run", "sum", "--size", "4096", "--backend", "cpu:*", "--page-locked", "--quick"]);
    for (out, what) in [
        (&twice, "named twice"),
        (&variant, "each run their best"),
        (&pinned, "the group cpu+wgpu has none"),
        (&locked, "applies to a device group's run"),
        (&locked_sum, "sum is not written in place"),
    ] {
        assert_eq!(out.status.code(), Some(2), "{what}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains(what), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn sixteen_bit_arrays_apply_to_expressions_and_to_the_workloads_one_expression_states() {
    rejected(&["run", "softmax", "--dtype", "bf16"], "square, saxpy, sum");
    rejected(&["sweep", "square", "sum", "--dtype", "f16"], "name one workload");
    rejected(&["run", "square", "--dtype", "int8"], "bf16");
    for (workload, expression) in [("square", "`y = x*x` on bf16 arrays"), ("saxpy", "`y = a*x + y` on bf16 arrays")] {
        let out = gpuworthy(&["run", workload, "--size", "4096", "--backend", "cpu", "--dtype", "bf16", "--quick"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{workload}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("runs as the expression") && stdout.contains(expression), "{stdout}");
        let checked =
            stdout.lines().filter(|l| ["scalar", "blocks"].iter().any(|v| l.trim_start().starts_with(v))).count();
        assert!(checked == 2 && !stdout.contains("FAILED"), "{stdout}");
        assert!(stdout.lines().filter(|l| l.ends_with(" ok")).count() == 2, "{stdout}");
    }
}

/// `collectives` refuses anything but CUDA devices (a group in one process, one device as a rank) before probing a
/// library; without CUDA or NCCL it names what is missing; on a host with two CUDA GPUs it measures and checks NCCL's
/// all-reduce and the peer copies, in one process and as two ranks of a world of two processes.
#[test]
fn collectives_run_over_cuda_gpus_in_one_process_and_as_ranks() {
    let refused: [BadInput; 5] = [
        (&[], &["collectives", "--backend", "cpu+wgpu"], 2, "group of CUDA devices"),
        (&[], &["collectives", "--backend", "cuda:0"], 2, "group of CUDA devices"),
        (&[], &["collectives", "--size", "0"], 2, "at least one byte"),
        (&[], &["collectives", "--repeats", "0"], 2, "at least 1"),
        (
            &[("GPUWORTHY_RANK", "0"), ("GPUWORTHY_WORLD_SIZE", "2"), ("GPUWORTHY_RENDEZVOUS", "/nonexistent")],
            &["collectives", "--backend", "cuda:0,1"],
            2,
            "one CUDA device",
        ),
    ];
    for (env, args, code, needle) in refused {
        expect(&gpuworthy_with(env, args), &args.join(" "), code, needle);
    }
    let devices = String::from_utf8_lossy(&gpuworthy(&["devices"]).stdout).into_owned();
    let two_gpus = available("cuda") && devices.contains("[--backend cuda:1]");
    let small = ["collectives", "--backend", "cuda:0,1", "--size", "16M", "--repeats", "3"];
    let out = gpuworthy(&small);
    if !two_gpus {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "collectives ran without two CUDA GPUs");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(stderr.contains("NCCL") || stderr.contains("CUDA") || stderr.contains("libcuda"), "{stderr}");
        eprintln!("SKIPPED: collectives need two CUDA GPUs and NCCL; refused with: {}", stderr.trim());
        return;
    }
    expect(&out, "collectives over cuda:0,1", 0, "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in ["all-reduce (sum) of 4 B", "all-reduce (sum) of 16.0 MiB", "peer copy cuda:0 -> cuda:1", "ok:"] {
        assert!(stdout.contains(needle), "collectives: no `{needle}` in {stdout}");
    }
    let rendezvous = std::env::temp_dir().join(format!("gpuworthy-collective-{}", std::process::id()));
    std::fs::create_dir_all(&rendezvous).unwrap();
    let ranks: Vec<_> = (0..2)
        .map(|rank| {
            Command::new(binary())
                .env("GPUWORTHY_RANK", rank.to_string())
                .env("GPUWORTHY_WORLD_SIZE", "2")
                .env("GPUWORTHY_RENDEZVOUS", &rendezvous)
                .args(["collectives", "--backend", &format!("cuda:{rank}"), "--size", "16M", "--repeats", "3"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("a rank starts")
        })
        .collect();
    for (rank, child) in ranks.into_iter().enumerate() {
        let out = child.wait_with_output().expect("a rank ends");
        expect(&out, &format!("collectives as rank {rank}"), 0, "");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(&format!("rank {rank} of 2")) && stdout.contains("ok:"), "rank {rank}: {stdout}");
    }
    std::fs::remove_dir_all(&rendezvous).ok();
}
