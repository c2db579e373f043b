//! Conformance: every workload × available backend × variant, at every conformance size of the specification and
//! on its special values, checked against the scalar reference. Run with a filter to pick a part, e.g.
//! `cargo test -p gpuworthy-tests --test conformance -- conformance::cpu::matmul`.
//!
//! Each backend runs through the facade's run-time [`Device`], so the dispatch users rely on is what is tested, and
//! the trials of each workload are generated from the one list of workloads: a workload added to the list is tested
//! on every backend, and a backend that lacks it does not compile.

use std::sync::Arc;

use gpuworthy::Device;
use gpuworthy_core::BackendKind;
use gpuworthy_tests::random::random_trials;
use gpuworthy_tests::threads::eight_threads_trial;
use gpuworthy_tests::{invalid_input_trial, unavailable_trial, unknown_variant_trial, variant_trials};
use libtest_mimic::{Arguments, Trial};

/// The trials of every workload of the list on one device, named with `label`.
macro_rules! workload_trials {
    ([$device:expr, $label:expr, $trials:expr] $($name:ident: $workload:ty),* $(,)?) => {
        $(
            $trials.extend(variant_trials::<$workload, _>($device, $label));
            $trials.extend(random_trials::<$workload, _>($device, $label));
            $trials.extend(invalid_input_trial::<$workload, _>($device, $label));
        )*
    };
}

/// Every trial for one backend's first device, or the trial that reports it unavailable. A device with a pipelined
/// path (CUDA) is tried through it too, as `<backend>-pipelined`: every workload's whole runs in overlapping chunks.
fn backend_trials(kind: BackendKind, required: &[BackendKind]) -> Vec<Trial> {
    match Device::open(kind) {
        Ok(device) => {
            let mut trials = Vec::new();
            if let Some(pipelined) = device.pipelined() {
                let pipelined = Arc::new(pipelined);
                let label = format!("{kind}-pipelined");
                gpuworthy_core::for_each_workload!(workload_trials; &pipelined, &label, trials);
                trials.push(eight_threads_trial(&pipelined, &label));
            }
            let device = Arc::new(device);
            let label = kind.to_string();
            gpuworthy_core::for_each_workload!(workload_trials; &device, &label, trials);
            trials.push(unknown_variant_trial(&device));
            trials.push(eight_threads_trial(&device, &label));
            trials
        }
        Err(error) => vec![unavailable_trial(kind, &error, required)],
    }
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
    let trials: Vec<Trial> = BackendKind::ALL.into_iter().flat_map(|kind| backend_trials(kind, &required)).collect();
    libtest_mimic::run(&args, trials).exit();
}
