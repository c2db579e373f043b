//! Conformance: every workload × available backend × variant, at every conformance size of the specification and
//! on its special values, checked against the scalar reference. Run with a filter to pick a part, e.g.
//! `cargo test -p gpuworthy-tests --test conformance -- conformance::cpu::matmul`.

use std::sync::Arc;

use gpuworthy_core::workloads::{Histogram, Mandelbrot, Matmul, Saxpy, Softmax, Square, Stencil, Sum};
use gpuworthy_core::{BackendKind, Result};
use gpuworthy_cpu::CpuBackend;
use gpuworthy_cuda::CudaBackend;
use gpuworthy_tests::random::random_trials;
use gpuworthy_tests::threads::eight_threads_trial;
use gpuworthy_tests::{invalid_input_trial, unavailable_trial, variant_trials};
use gpuworthy_wgpu::WgpuBackend;
use libtest_mimic::{Arguments, Trial};

/// Every trial for one backend, or the trial that reports it unavailable.
macro_rules! backend_trials {
    ($kind:expr, $make:expr, $required:expr) => {{
        let made: Result<_> = $make;
        match made {
            Ok(backend) => {
                let backend = Arc::new(backend);
                let mut trials = Vec::new();
                trials.extend(variant_trials::<Square, _>(&backend));
                trials.extend(random_trials::<Square, _>(&backend));
                trials.extend(variant_trials::<Saxpy, _>(&backend));
                trials.extend(random_trials::<Saxpy, _>(&backend));
                trials.extend(variant_trials::<Sum, _>(&backend));
                trials.extend(random_trials::<Sum, _>(&backend));
                trials.extend(variant_trials::<Softmax, _>(&backend));
                trials.extend(random_trials::<Softmax, _>(&backend));
                trials.extend(variant_trials::<Matmul, _>(&backend));
                trials.extend(random_trials::<Matmul, _>(&backend));
                trials.extend(variant_trials::<Mandelbrot, _>(&backend));
                trials.extend(random_trials::<Mandelbrot, _>(&backend));
                trials.extend(variant_trials::<Histogram, _>(&backend));
                trials.extend(random_trials::<Histogram, _>(&backend));
                trials.extend(variant_trials::<Stencil, _>(&backend));
                trials.extend(random_trials::<Stencil, _>(&backend));
                trials.push(invalid_input_trial(&backend));
                trials.push(eight_threads_trial(&backend));
                trials
            }
            Err(error) => vec![unavailable_trial($kind, &error, $required)],
        }
    }};
}

fn main() {
    let args = Arguments::from_args();
    let required = match BackendKind::required_by_env() {
        Ok(required) => required,
        Err(e) => {
            eprintln!("conformance: {e}");
            std::process::exit(2);
        }
    };
    let mut trials: Vec<Trial> = Vec::new();
    trials.extend(backend_trials!(BackendKind::Cpu, CpuBackend::new(), &required));
    trials.extend(backend_trials!(BackendKind::Cuda, CudaBackend::new(0), &required));
    trials.extend(backend_trials!(BackendKind::Wgpu, WgpuBackend::new(), &required));
    libtest_mimic::run(&args, trials).exit();
}
