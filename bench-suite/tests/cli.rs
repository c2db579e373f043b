//! The command-line tool's handling of bad input: a one-line error and exit code 2, never a panic.

use std::process::{Command, Output};

/// The binary cargo built for these tests, or, where the tests were copied elsewhere with the binary in a sibling
/// `bin/` folder, that one.
fn binary() -> std::path::PathBuf {
    let built = std::path::PathBuf::from(env!("CARGO_BIN_EXE_gpuworthy"));
    if built.exists() {
        return built;
    }
    let here = std::env::current_exe().expect("the test binary has a path");
    here.parent().and_then(|d| d.parent()).map(|d| d.join("bin").join("gpuworthy")).unwrap_or(built)
}

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
