//! Property tests: random small shapes (0 and 1 included) holding random special values, on every backend, against
//! the reference.
//!
//! The conformance sizes are fixed; these find the shapes nobody thought of (a 1 x 37 matrix, 3 bins, a 0-pixel
//! row). Each workload says, in its own file in core, how to draw an input ([`RandomInputs`]): values from the specification's range with NaN,
//! ±infinity and zeros sprinkled in where the specification defines what they give. Shapes stay small so that a run
//! of every workload on lavapipe takes seconds.

use std::sync::Arc;

use gpuworthy_core::Implements;
pub use gpuworthy_core::random::RandomInputs;
use libtest_mimic::Trial;
use proptest::test_runner::{Config, TestCaseError, TestRng, TestRunner};

/// Random cases drawn for each workload, variant and backend.
const CASES: u32 = 24;

/// Checks one variant on random inputs; the failure names the smallest input proptest found.
pub fn check_random<W, B>(backend: &B, variant: &str) -> Result<(), String>
where
    W: RandomInputs,
    B: Implements<W>,
{
    let precision = backend.precision(variant);
    // The same inputs on every run, so that a run passes or fails by the code alone and a failure comes back when
    // it is run again (with proptest's default, each run draws new inputs).
    let config = Config { cases: CASES, failure_persistence: None, ..Config::default() };
    let rng = TestRng::deterministic_rng(config.rng_algorithm);
    let mut runner = TestRunner::new_with_rng(config, rng);
    runner
        .run(&W::random(), |input| {
            let expected = W::reference(&input).map_err(|e| TestCaseError::fail(format!("reference: {e}")))?;
            let actual = backend.run(variant, &input).map_err(|e| TestCaseError::fail(format!("run: {e}")))?;
            W::check(&input, &expected, &actual, precision)
                .map_err(|m| TestCaseError::fail(format!("{} {}: {m}", W::NAME, W::params(&input))))
        })
        .map_err(|e| e.to_string())
}

/// One trial per variant: `conformance::<backend>::<workload>::<variant>::random`.
pub fn random_trials<W, B>(backend: &Arc<B>, label: &str) -> Vec<Trial>
where
    W: RandomInputs,
    B: Implements<W> + 'static,
{
    backend
        .variants()
        .into_iter()
        .map(|variant| {
            let b = Arc::clone(backend);
            Trial::test(format!("conformance::{label}::{}::{variant}::random", W::NAME), move || {
                check_random::<W, B>(&b, variant)?;
                Ok(())
            })
        })
        .collect()
}
