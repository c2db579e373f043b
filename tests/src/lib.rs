//! # gpuworthy-tests
//!
//! Cross-backend conformance. The test bodies are written once, generic over the workload and the backend, and the
//! `conformance` test binary instantiates them for every backend, workload and variant as separate named trials
//! (`conformance::cpu::square::simd`), so that the output names every combination it checked and a filter can pick
//! any of them.
//!
//! A backend that cannot run on this machine is skipped loudly, with its reason; when the environment variable
//! `GPUWORTHY_REQUIRE` lists it (e.g. `GPUWORTHY_REQUIRE=cpu,wgpu`), the skip becomes a failure, so that a CI run
//! cannot pass by skipping.

#![deny(missing_docs)]

pub mod random;
pub mod source;
pub mod threads;

use std::sync::Arc;

use gpuworthy_core::workloads::Square;
use gpuworthy_core::{BackendKind, Error, Implements, Workload};
use libtest_mimic::{Failed, Trial};

/// Every device that opens here, for the test binaries that run user computations on each; a backend that cannot
/// open is skipped with its reason on standard error, and a failure where `GPUWORTHY_REQUIRE` lists it.
pub fn available_devices() -> Vec<gpuworthy::Device> {
    let required = BackendKind::required_by_env().expect("GPUWORTHY_REQUIRE is a list of backends");
    let opened = gpuworthy::Device::all_available();
    for (spec, why) in &opened.unavailable {
        assert!(!required.contains(&spec.kind()), "{spec} is required by GPUWORTHY_REQUIRE but: {why}");
        eprintln!("SKIPPING {spec}: {why}");
    }
    opened.devices
}

/// The seed of every conformance input.
pub const SEED: u64 = 0x6770_7577;

/// Spoils a result kept for reuse, so that a backend that writes into it ([`Implements::run_into`]) and leaves any
/// element unwritten fails its check: every element becomes a finite value far from any workload's result (a NaN
/// would be a special value the checks treat by its own rules). Implemented for the workloads' output types, so that
/// every workload of the list is covered by its output's type alone.
pub trait SpoilOutput {
    /// Overwrites every element with a wrong value.
    fn spoil(&mut self);
}

impl SpoilOutput for Vec<f32> {
    fn spoil(&mut self) {
        self.fill(1.0e30);
    }
}

impl SpoilOutput for Vec<u32> {
    fn spoil(&mut self) {
        self.fill(u32::MAX);
    }
}

impl SpoilOutput for f64 {
    fn spoil(&mut self) {
        *self = 1.0e300;
    }
}

/// Runs `variant` of `W` on `backend` at every conformance size and on every special input, checking each output
/// against the reference; at each conformance size it also runs into reused outputs ([`Implements::run_into`]): one
/// of the result's length holding wrong values, and the previous size's result. Returns how many inputs passed, or
/// the first failure with its input named.
pub fn conform<W, B>(backend: &B, variant: &str) -> Result<usize, String>
where
    W: Workload,
    W::Output: SpoilOutput,
    B: Implements<W>,
{
    conform_at::<W, B>(backend, variant, W::conformance_params(), W::special_inputs(), true)
}

/// Runs `variant` of `W` on `backend` for generated inputs of each of `params` and for `special` inputs, checking
/// each output against the reference, and where `into_reused`, each generated input into reused outputs too (see
/// [`conform`]).
pub fn conform_at<W, B>(
    backend: &B,
    variant: &str,
    params: Vec<W::Params>,
    special: Vec<(&'static str, W::Input)>,
    into_reused: bool,
) -> Result<usize, String>
where
    W: Workload,
    W::Output: SpoilOutput,
    B: Implements<W>,
{
    let generated = params.into_iter().map(|p| {
        let input = W::generate(&p, SEED).map_err(|e| format!("generating {p}: {e}"))?;
        Ok::<_, String>((p.to_string(), input, into_reused))
    });
    let special = special.into_iter().map(|(label, input)| Ok::<_, String>((label.to_owned(), input, false)));
    let precision = backend.precision(variant);
    let mut passed = 0;
    let mut previous: Option<W::Output> = None;
    for case in generated.chain(special) {
        let (label, input, into_reused) = case?;
        let expected = W::reference(&input).map_err(|e| format!("reference for {label}: {e}"))?;
        let actual = backend.run(variant, &input).map_err(|e| format!("{label}: {e}"))?;
        W::check(&input, &expected, &actual, precision).map_err(|m| format!("{label}: {m}"))?;
        if into_reused {
            let mut reused = actual.clone();
            reused.spoil();
            let what = format!("{label} into a reused output of its length holding wrong values");
            backend.run_into(variant, &input, &mut reused).map_err(|e| format!("{what}: {e}"))?;
            W::check(&input, &expected, &reused, precision).map_err(|m| format!("{what}: {m}"))?;
            if let Some(mut other) = previous.take() {
                let what = format!("{label} into the previous size's output");
                backend.run_into(variant, &input, &mut other).map_err(|e| format!("{what}: {e}"))?;
                W::check(&input, &expected, &other, precision).map_err(|m| format!("{what}: {m}"))?;
            }
            previous = Some(actual);
        }
        passed += 1;
    }
    Ok(passed)
}

/// One trial per variant the backend offers for `W`, named `conformance::<label>::<workload>::<variant>`, and one
/// per variant for the sizes beyond 128 MiB, named `…::<variant>::beyond_128_mib`. The label is the backend's name, or
/// names a mode of it (`cuda-pipelined`).
pub fn variant_trials<W, B>(backend: &Arc<B>, label: &str) -> Vec<Trial>
where
    W: Workload,
    W::Output: SpoilOutput,
    B: Implements<W> + 'static,
{
    let mut trials = Vec::new();
    for variant in backend.variants() {
        let name = format!("conformance::{label}::{}::{variant}", W::NAME);
        let b = Arc::clone(backend);
        let kind = label.to_owned();
        trials.push(Trial::test(name, move || {
            let passed = conform::<W, B>(&b, variant)?;
            println!("    {kind} {} {variant}: {passed} inputs match the reference", W::NAME);
            Ok(())
        }));
        let large = W::large_params();
        if !large.is_empty() {
            let name = format!("conformance::{label}::{}::{variant}::beyond_128_mib", W::NAME);
            let b = Arc::clone(backend);
            let kind = label.to_owned();
            trials.push(Trial::test(name, move || {
                let sizes: Vec<String> = large.iter().map(ToString::to_string).collect();
                conform_at::<W, B>(&b, variant, large, Vec::new(), false)?;
                println!("    {kind} {} {variant}: {} matches the reference", W::NAME, sizes.join(", "));
                Ok(())
            }));
        }
    }
    trials
}

/// Asserts that `result` is an [`Error::InvalidInput`] whose message contains `needle`.
fn expect_invalid<T>(what: &str, result: gpuworthy_core::Result<T>, needle: &str) -> Result<(), Failed> {
    match result {
        Err(Error::InvalidInput(message)) if message.contains(needle) => Ok(()),
        Err(other) => Err(format!("{what}: expected an invalid-input error naming `{needle}`, got: {other}").into()),
        Ok(_) => Err(format!("{what}: accepted").into()),
    }
}

/// A trial checking that the backend rejects each of `W`'s malformed inputs ([`Workload::invalid_inputs`]) with
/// [`Error::InvalidInput`] naming what is wrong, never a panic; `None` for a workload whose every input is valid.
pub fn invalid_input_trial<W, B>(backend: &Arc<B>, label: &str) -> Option<Trial>
where
    W: Workload,
    B: Implements<W> + 'static,
{
    if W::invalid_inputs().is_empty() {
        return None;
    }
    let backend = Arc::clone(backend);
    Some(Trial::test(format!("conformance::{label}::{}::invalid_input", W::NAME), move || {
        for (what, input, needle) in W::invalid_inputs() {
            expect_invalid(&format!("{} {what}", W::NAME), Implements::<W>::upload(&*backend, &input), needle)?;
        }
        Ok(())
    }))
}

/// A trial checking that the backend refuses an unknown variant name with [`Error::UnknownVariant`].
pub fn unknown_variant_trial<B>(backend: &Arc<B>) -> Trial
where
    B: Implements<Square> + 'static,
{
    let backend = Arc::clone(backend);
    Trial::test(format!("conformance::{}::unknown_variant", backend.kind()), move || {
        let mut resident = Implements::<Square>::upload(&*backend, &vec![1.0; 4])?;
        match Implements::<Square>::launch(&*backend, "no-such-variant", &mut resident) {
            Err(Error::UnknownVariant { .. }) => Ok(()),
            other => Err(format!("an unknown variant gave {other:?}").into()),
        }
    })
}

/// What to do with a backend that could not be created: a trial that is ignored (skipped, with the reason printed)
/// or, when `required` (from `GPUWORTHY_REQUIRE`) lists the backend, one that fails with the reason. An error other
/// than "unavailable here" (a bad environment variable, say) always fails.
pub fn unavailable_trial(kind: BackendKind, error: &Error, required: &[BackendKind]) -> Trial {
    let name = format!("conformance::{kind}::available");
    let reason = error.to_string();
    if !error.is_unavailable() {
        eprintln!("{kind} COULD NOT START: {reason}");
        Trial::test(name, move || Err(reason.into()))
    } else if required.contains(&kind) {
        eprintln!("REQUIRED BACKEND MISSING: {reason}");
        Trial::test(name, move || Err(format!("{reason} (required by GPUWORTHY_REQUIRE)").into()))
    } else {
        eprintln!("SKIPPING {kind}: {reason} (set GPUWORTHY_REQUIRE={kind} to make this a failure)");
        Trial::test(name, || Ok(())).with_ignored_flag(true)
    }
}
