//! Expressions on every backend: random well-typed expressions (every operator and function, depth up to 6), on
//! inputs with NaN, infinities, signed zeros and subnormals mixed in, and a table of the semantic edge cases of the
//! language, each run on every available device and checked against the bounded `f64` reference.
//!
//! A backend that cannot run here is skipped with its reason; `GPUWORTHY_REQUIRE` makes that a failure.

use std::sync::Arc;
use std::time::Instant;

use gpuworthy::Device;
use gpuworthy::core::expr::{Expr, ExprInput, ExprParams, Expression, Outputs, random_expression};
use gpuworthy::core::{Precision, Workload, rng};

/// Random expressions per backend.
const EXPRESSIONS: u64 = 500;

/// Elements per run: a few float4 groups and a tail.
const N: usize = 67;

/// The devices to try: every one that opens; a backend `GPUWORTHY_REQUIRE` lists must.
fn devices() -> Vec<Device> {
    gpuworthy_tests::available_devices()
}

/// The special values mixed into the inputs: NaN, the infinities, signed zeros and subnormals.
const SPECIAL: [f32; 7] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1e-40, -3e-39];

/// The inputs uniform in [-2, 2), every seventh element a special value.
fn inputs(program: &gpuworthy::core::expr::Program, seed: u64, special: &[f32]) -> Vec<Vec<f32>> {
    (0..program.inputs.len())
        .map(|k| {
            let mut values = rng::uniform_f32(seed, k as u64, N, -2.0, 2.0);
            for (i, v) in values.iter_mut().enumerate().filter(|(i, _)| i % 7 == (k + 3) % 7) {
                *v = special[(i / 7 + k) % special.len()];
            }
            values
        })
        .collect()
}

fn run(device: &Device, source: &str, scalars: &[&str], values: &[f32], arrays: Option<Vec<Vec<f32>>>, n: usize) {
    let program = Arc::new(Expr::parse(source).unwrap().bind(scalars).unwrap());
    let params = ExprParams::new(Arc::clone(&program), n, values.to_vec());
    let input = match arrays {
        Some(arrays) => ExprInput { params, arrays: arrays.into_iter().map(Into::into).collect() },
        None => Expression::generate(&params, 1).unwrap(),
    };
    let expected = Expression::reference(&input).unwrap();
    let variant = device.best_variant::<Expression>(&input.params);
    let output =
        device.run::<Expression>(variant, &input).unwrap_or_else(|e| panic!("{}: `{source}`: {e}", device.label()));
    Expression::check(&input, &expected, &output, Precision::Full)
        .unwrap_or_else(|e| panic!("{} {variant}: `{source}`: {e}", device.label()));
}

#[test]
fn random_expressions_match_the_reference_on_every_backend() {
    for device in devices() {
        let started = Instant::now();
        for seed in 0..EXPRESSIONS {
            let source = random_expression(seed, 6);
            let program =
                Expr::parse(&source).unwrap().bind(&["a"]).or_else(|_| Expr::parse(&source).unwrap().bind(&[]));
            let program = program.unwrap();
            let scalars: Vec<&str> = program.scalars.iter().map(String::as_str).collect();
            let values = vec![0.75; scalars.len()];
            run(&device, &source, &scalars, &values, Some(inputs(&program, seed, &SPECIAL)), N);
        }
        eprintln!(
            "{}: {EXPRESSIONS} random expressions of depth up to 6 matched the reference in {:.1} s",
            device.label(),
            started.elapsed().as_secs_f64()
        );
    }
}

/// The semantic edge cases of the language: the same answer on every backend.
#[test]
fn the_semantic_edge_cases_are_the_same_on_every_backend() {
    let x = vec![f32::NAN, -8.0, 2.5, -2.5, 0.0, -0.0, 0.5, -1.5, 3.5, f32::INFINITY, f32::NEG_INFINITY, 1e-40];
    let n = x.len();
    let cases = [
        "y = min(x, 1) + max(x, -1)",
        "y = min(x, nan)",
        "y = pow(x, 3)",
        "y = pow(x, 0.5)",
        "y = pow(x, 0) + pow(1, x)",
        "y = round(x)",
        "y = 1 / x",
        "y = x / 0",
        "y = sign(x)",
        "y = sqrt(x) + log(x)",
        "y = where(x > 0, x, -x)",
        "y = clamp(x, -1, 1)",
    ];
    for device in devices() {
        for source in cases {
            run(&device, source, &[], &[], Some(vec![x.clone()]), n);
        }
        for source in ["s = sum(x)", "s = prod(x)", "s = min(x)", "s = max(x)", "s = sqrt(sum(x * x))"] {
            let program = Expr::parse(source).unwrap().bind(&[]).unwrap();
            for n in [0, 1, 4099] {
                run(&device, source, &[], &[], None, n);
            }
            // A NaN term makes every reduction NaN.
            let params = ExprParams::new(Arc::new(program), 3, vec![]);
            let input = ExprInput { params, arrays: vec![vec![1.0, f32::NAN, 2.0].into()] };
            let output = device.run::<Expression>(device.best_variant::<Expression>(&input.params), &input).unwrap();
            assert!(matches!(output, Outputs::Reduction(v) if v.is_nan()), "{}: {source}: {output:?}", device.label());
        }
    }
}

/// Every device refuses bad input to an expression with an error, never a panic.
#[test]
fn inputs_that_do_not_match_are_refused_on_every_backend() {
    let program = Arc::new(Expr::parse("y = x + z").unwrap().bind(&[]).unwrap());
    let params = ExprParams::new(program, 4, vec![]);
    let input = ExprInput { params, arrays: vec![vec![1.0; 4].into(), vec![1.0; 3].into()] };
    for device in devices() {
        let err = device.run::<Expression>(device.best_variant::<Expression>(&input.params), &input).unwrap_err();
        assert!(err.to_string().contains("differ in length"), "{}: {err}", device.label());
    }
}
