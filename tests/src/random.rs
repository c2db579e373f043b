//! Property tests: random small shapes (0 and 1 included) holding random special values, on every backend, against
//! the reference.
//!
//! The conformance sizes are fixed; these find the shapes nobody thought of (a 1 x 37 matrix, 3 bins, a 0-pixel
//! row). Each workload says how to draw an input ([`RandomInputs`]): values from the specification's range with NaN,
//! ±infinity and zeros sprinkled in where the specification defines what they give. Shapes stay small so that a run
//! of every workload on lavapipe takes seconds.

use std::sync::Arc;

use gpuworthy_core::workloads::{
    Histogram, HistogramInput, Mandelbrot, MandelbrotParams, Matmul, MatmulInput, Saxpy, SaxpyInput, Softmax,
    SoftmaxInput, Square, Stencil, StencilInput, Sum,
};
use gpuworthy_core::{Implements, Workload};
use libtest_mimic::Trial;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRng, TestRunner};

/// Random cases drawn for each workload, variant and backend.
const CASES: u32 = 24;

/// How to draw a random input of a workload.
pub trait RandomInputs: Workload {
    /// Inputs of random small shapes holding random special values.
    fn random() -> BoxedStrategy<Self::Input>;
}

/// `len` values uniform in `[low, high)`, about one in eight replaced by NaN, +inf, −inf or a signed zero.
fn values(len: usize, low: f32, high: f32) -> impl Strategy<Value = Vec<f32>> {
    let special = prop_oneof![Just(f32::NAN), Just(f32::INFINITY), Just(f32::NEG_INFINITY), Just(0.0), Just(-0.0)];
    proptest::collection::vec(prop_oneof![7 => low..high, 1 => special], len)
}

/// A length from 0 to a few thousand, 0 and 1 often.
fn length() -> impl Strategy<Value = usize> {
    prop_oneof![Just(0usize), Just(1usize), 2usize..64, 64usize..3000]
}

/// A side of a 2D shape, 0 and 1 often.
fn side(most: usize) -> impl Strategy<Value = usize> {
    prop_oneof![Just(0usize), Just(1usize), 2usize..=most]
}

impl RandomInputs for Square {
    fn random() -> BoxedStrategy<Vec<f32>> {
        length().prop_flat_map(|n| values(n, -1e3, 1e3)).boxed()
    }
}

impl RandomInputs for Saxpy {
    fn random() -> BoxedStrategy<SaxpyInput> {
        (length(), -4.0f32..4.0)
            .prop_flat_map(|(n, a)| (values(n, -1.0, 1.0), values(n, -1.0, 1.0)).prop_map(move |(x, y)| (a, x, y)))
            .prop_map(|(a, x, y)| SaxpyInput { a, x, y })
            .boxed()
    }
}

impl RandomInputs for Sum {
    fn random() -> BoxedStrategy<Vec<f32>> {
        length().prop_flat_map(|n| values(n, -1.0, 1.0)).boxed()
    }
}

impl RandomInputs for Softmax {
    fn random() -> BoxedStrategy<SoftmaxInput> {
        (side(40), side(600))
            .prop_flat_map(|(rows, cols)| values(rows * cols, -8.0, 8.0).prop_map(move |data| (rows, cols, data)))
            .prop_map(|(rows, cols, data)| SoftmaxInput { rows, cols, data })
            .boxed()
    }
}

impl RandomInputs for Matmul {
    fn random() -> BoxedStrategy<MatmulInput> {
        (side(40), side(70), side(40))
            .prop_flat_map(|(m, k, n)| {
                (values(m * k, -1.0, 1.0), values(k * n, -1.0, 1.0)).prop_map(move |(a, b)| (m, k, n, a, b))
            })
            .prop_map(|(m, k, n, a, b)| MatmulInput { m, k, n, a, b })
            .boxed()
    }
}

impl RandomInputs for Mandelbrot {
    fn random() -> BoxedStrategy<MandelbrotParams> {
        (side(90), side(90), prop_oneof![Just(0u32), Just(1u32), 2u32..300])
            .prop_map(|(width, height, max_iter)| MandelbrotParams { max_iter, ..MandelbrotParams::new(width, height) })
            .boxed()
    }
}

impl RandomInputs for Histogram {
    fn random() -> BoxedStrategy<HistogramInput> {
        (length(), prop_oneof![Just(1usize), 2usize..300, Just(65536usize)])
            .prop_flat_map(|(n, bins)| values(n, -0.25, 1.25).prop_map(move |x| HistogramInput { bins, x }))
            .boxed()
    }
}

impl RandomInputs for Stencil {
    fn random() -> BoxedStrategy<StencilInput> {
        // An empty grid, a one-row or one-column grid, and the rest; heights and widths of 0 are both drawn.
        (prop_oneof![Just(0usize), 1usize..=60], prop_oneof![Just(0usize), 1usize..=300])
            .prop_flat_map(|(height, width)| {
                values(height * width, 0.0, 1.0).prop_map(move |data| StencilInput { height, width, data })
            })
            .boxed()
    }
}

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
