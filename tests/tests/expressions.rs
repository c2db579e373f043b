//! Expressions on every backend: random well-typed expressions (every operator and function, depth up to 6), on
//! inputs with NaN, infinities, signed zeros and subnormals mixed in, and a table of the semantic edge cases of the
//! language, each run on every available device and checked against the bounded `f64` reference; and every function
//! swept over every binade, held to its backend's column of the function table. The random expressions run on arrays
//! of every storage type in turn (`f32`, `f16`, `bf16`), each element held to the rounding of its bound to the type.
//!
//! A backend that cannot run here is skipped with its reason; `GPUWORTHY_REQUIRE` makes that a failure.

use std::sync::Arc;
use std::time::Instant;

use gpuworthy::Device;
use gpuworthy::core::Backend;
use gpuworthy::core::expr::HostArray;
use gpuworthy::core::expr::{
    Bounded, Expr, ExprInput, ExprParams, Expression, FUNCTIONS, Func, FuncSpec, FunctionBound,
    MAX_POW_BY_MULTIPLICATION, Outputs, random_expression, ulp,
};
use gpuworthy::core::{Dtype, Precision, Workload, rng};

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

/// Runs `source` on `device` with arrays stored as `dtype` (`arrays` rounded to it, or generated) and checks it.
fn run(
    device: &Device,
    source: &str,
    scalars: &[&str],
    values: &[f32],
    arrays: Option<Vec<Vec<f32>>>,
    n: usize,
    dtype: Dtype,
) {
    let program = Arc::new(Expr::parse(source).unwrap().bind(scalars).unwrap());
    let params = ExprParams::new(Arc::clone(&program), n, values.to_vec()).in_dtype(dtype);
    let input = match arrays {
        Some(arrays) => ExprInput { params, arrays: arrays.iter().map(|a| HostArray::rounded(dtype, a)).collect() },
        None => Expression::generate(&params, 1).unwrap(),
    };
    let expected = Expression::reference(&input).unwrap();
    let variant = device.best_variant::<Expression>(&input.params);
    let output =
        device.run::<Expression>(variant, &input).unwrap_or_else(|e| panic!("{}: `{source}`: {e}", device.label()));
    Expression::check(&input, &expected, &output, Precision::Fp32)
        .unwrap_or_else(|e| panic!("{} {variant}: `{source}` in {dtype}: {e}", device.label()));
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
            let dtype = Dtype::ALL[seed as usize % Dtype::ALL.len()];
            run(&device, &source, &scalars, &values, Some(inputs(&program, seed, &SPECIAL)), N, dtype);
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
    let x = vec![
        f32::NAN,
        -8.0,
        2.5,
        -2.5,
        0.0,
        -0.0,
        0.5,
        -1.5,
        3.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e-40,
        3e38,
        -2e38,
    ];
    let n = x.len();
    let cases = [
        "y = min(x, 1) + max(x, -1)",
        "y = min(x, nan)",
        "y = pow(x, 3)",
        "y = pow(x, 0.5)",
        "y = pow(x, 0) + pow(1, x)",
        "y = round(x)",
        "y = 1 / x",
        // A divisor past 2^126, whose reciprocal is subnormal.
        "y = 1e32 / x + atan2(1e32, x)",
        "y = x / 0",
        "y = sign(x)",
        "y = sqrt(x) + log(x)",
        "y = where(x > 0, x, -x)",
        "y = clamp(x, -1, 1)",
    ];
    for device in devices() {
        for source in cases {
            run(&device, source, &[], &[], Some(vec![x.clone()]), n, Dtype::F32);
        }
        for source in ["s = sum(x)", "s = prod(x)", "s = min(x)", "s = max(x)", "s = sqrt(sum(x * x))"] {
            let program = Expr::parse(source).unwrap().bind(&[]).unwrap();
            for n in [0, 1, 4099] {
                run(&device, source, &[], &[], None, n, Dtype::F32);
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

/// Arguments over every binade of `f32`, both signs: for each exponent, from the subnormals' to the largest, the
/// binade's first value, its last and `random` values between, seeded; then ±0, ±inf and NaN.
fn binades(random: usize, seed: u64) -> Vec<f32> {
    let mut values = Vec::new();
    for exponent in 0u32..255 {
        let mantissas = rng::uniform_f32(seed, u64::from(exponent), random, 0.0, 1.0);
        let low = exponent << 23;
        let mut binade = vec![f32::from_bits(low.max(1)), f32::from_bits(low | 0x007f_ffff)];
        binade.extend(mantissas.iter().map(|m| f32::from_bits(low | ((m * 8_388_608.0) as u32 & 0x007f_ffff))));
        values.extend(binade.iter().flat_map(|v| [*v, -*v]));
    }
    values.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN]);
    values
}

/// The exponents `pow`'s sweep raises every binade to: integers of both signs (a negative base keeps the sign of an
/// odd power), large and small, and fractions.
const POW_EXPONENTS: [f32; 22] = [
    -9.0,
    -5.0,
    -4.0,
    -3.0,
    -2.0,
    -1.0,
    0.0,
    1.0,
    2.0,
    3.0,
    4.0,
    5.0,
    7.0,
    16.0,
    31.0,
    100.0,
    -100.0,
    0.5,
    -0.5,
    2.5,
    0.333_333_34,
    7.25,
];

/// The arguments of `func`'s sweep, one vector per argument, of one length.
fn sweep_arguments(func: Func) -> Vec<Vec<f32>> {
    let spread = |values: &[f32], seed: u64, count: usize| -> Vec<f32> {
        let picks = rng::uniform_f32(seed, 99, count, 0.0, values.len() as f32);
        picks.iter().map(|p| values[(*p as usize).min(values.len() - 1)]).collect()
    };
    match func.arity() {
        1 => vec![binades(6, 1)],
        2 if func == Func::Pow => {
            let bases = binades(2, 2);
            let (mut x, mut y) = (Vec::new(), Vec::new());
            for exponent in POW_EXPONENTS {
                x.extend(&bases);
                y.extend(std::iter::repeat_n(exponent, bases.len()));
            }
            vec![x, y]
        }
        2 => {
            // Every pair of binades, one value each, both signs.
            let coarse = binades(0, 3);
            let x: Vec<f32> = coarse.iter().flat_map(|a| std::iter::repeat_n(*a, coarse.len() / 8)).collect();
            let y = spread(&coarse, 4, x.len());
            vec![x, y]
        }
        _ => {
            let values = binades(2, 5);
            let n = 4 * values.len();
            (0..3).map(|k| spread(&values, 10 + k, n)).collect()
        }
    }
}

/// The expression `source` over `arguments` (one array per name of `names`, given to the program in the order it
/// reads them).
fn sweep_input(source: &str, names: &[&str], arguments: &[Vec<f32>]) -> ExprInput {
    let program = Arc::new(Expr::parse(source).unwrap().bind(&[]).unwrap());
    let arrays: Vec<Vec<f32>> =
        program.inputs.iter().map(|name| arguments[names.iter().position(|n| n == name).unwrap()].clone()).collect();
    let params = ExprParams::new(Arc::clone(&program), arguments[0].len(), vec![]);
    ExprInput { params, arrays: arrays.into_iter().map(Into::into).collect() }
}

/// The reference's arguments: `where`'s condition is `x > 0`, a truth value.
fn reference_arguments(func: Func, mut args: Vec<f64>) -> Vec<f64> {
    if func == Func::Where {
        args[0] = if args[0] > 0.0 { 1.0 } else { 0.0 };
    }
    args
}

/// The function's value at `args`, rounded to `f32`, with the distance its backend's column allows (plus the
/// rounding and the smallest normal, as the check adds).
fn allowed(spec: &FuncSpec, bound: &FunctionBound, args: &[f64]) -> Bounded {
    let value = f64::from((spec.reference)(args) as f32);
    let error = spec.func.error_allowed(bound, value, args) + ulp(value.abs()) + f64::from(f32::MIN_POSITIVE);
    Bounded { value, error }
}

/// Every function over every binade of its domain on every available device, with every variant: each result within
/// the accuracy the function table gives that device's backend ([`FuncSpec::accuracy`], with [`Func::error_allowed`]),
/// a bound never looser than the one the check allows, and the check passes. Prints each function's worst error as a
/// fraction of its bound.
#[test]
fn every_function_meets_its_backends_accuracy_over_every_binade() {
    let mut failures = Vec::new();
    for device in devices() {
        let kind = device.kind();
        for spec in FUNCTIONS.iter() {
            let func = spec.func;
            let names = ["x", "z", "w"];
            let source = if func == Func::Where {
                "y = where(x > 0, z, w)".to_owned()
            } else {
                format!("y = {}({})", spec.name, names[..spec.arity].join(", "))
            };
            let arguments = sweep_arguments(func);
            let input = sweep_input(&source, &names, &arguments);
            let n = arguments[0].len();
            let expected = Expression::reference(&input).unwrap();
            let bound = spec.accuracy.of(kind);
            for variant in device.variants::<Expression>() {
                let output = device
                    .run::<Expression>(variant, &input)
                    .unwrap_or_else(|e| panic!("{} {variant}: `{source}`: {e}", device.label()));
                let Outputs::Elementwise(got) = &output else { panic!("{source}: not elementwise") };
                let mut worst: (f64, usize) = (0.0, 0);
                let mut worst_failure: (f64, usize) = (0.0, 0);
                let mut failed = 0;
                for (i, &got) in got[0].iter().enumerate() {
                    let raw: Vec<f64> = arguments.iter().map(|a| f64::from(a[i])).collect();
                    let args = reference_arguments(func, raw.clone());
                    let within = allowed(spec, &bound, &args);
                    let Bounded { value, error } = within;
                    // sin and cos give up where the bound spans their whole range, as the check does.
                    if !error.is_finite() || (matches!(func, Func::Sin | Func::Cos) && error >= 2.0) {
                        continue;
                    }
                    // A subnormal argument may be read as zero (Vulkan drivers flush denormals without asking), as
                    // the check's operands allow: the function at the flushed arguments is as right.
                    let flushed = || {
                        let zeroed: Vec<f64> = reference_arguments(
                            func,
                            raw.iter()
                                .map(|&a| if (a as f32).is_subnormal() { 0.0f64.copysign(a) } else { a })
                                .collect(),
                        );
                        zeroed != args && allowed(spec, &bound, &zeroed).accepts(got)
                    };
                    if !within.accepts(got) && !flushed() {
                        failed += 1;
                        let ratio = (f64::from(got) - value).abs() / error;
                        if ratio.is_nan() || ratio > worst_failure.0 {
                            worst_failure = (ratio, i);
                        }
                        if failed <= 5 {
                            failures.push(format!(
                                "{} {variant}: {}({:?}) = {got:e}, expected {value:e} ± {error:e} (the {kind} column \
                                 of the function table)",
                                device.label(),
                                spec.name,
                                &args,
                            ));
                        }
                        continue;
                    }
                    if within.accepts(got) && value.is_finite() && got.is_finite() && error > 0.0 {
                        let ratio = (f64::from(got) - value).abs() / error;
                        if ratio > worst.0 {
                            worst = (ratio, i);
                        }
                    }
                }
                if failed > 0 {
                    failures.push(format!(
                        "{} {variant}: {} out of bound at {failed} arguments, the worst {:.2} times its bound (at {:?})",
                        device.label(),
                        spec.name,
                        worst_failure.0,
                        arguments.iter().map(|a| a[worst_failure.1]).collect::<Vec<f32>>()
                    ));
                    continue;
                }
                Expression::check(&input, &expected, &output, Precision::Fp32)
                    .unwrap_or_else(|e| panic!("{} {variant}: `{source}`: {e}", device.label()));
                eprintln!(
                    "{} {variant}: {} over {n} arguments, the worst error {:.2} of its bound (at {:?})",
                    device.label(),
                    spec.name,
                    worst.0,
                    arguments.iter().map(|a| a[worst.1]).collect::<Vec<f32>>()
                );
            }
        }
        // pow of a constant small integer is computed by multiplication: checked against its reference, with
        // negative bases over every binade.
        for exponent in -MAX_POW_BY_MULTIPLICATION as i32..=MAX_POW_BY_MULTIPLICATION as i32 {
            let x = binades(6, 7);
            run(&device, &format!("y = pow(x, {exponent})"), &[], &[], Some(vec![x.clone()]), x.len(), Dtype::F32);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every function of one argument over every bit pattern of each 16-bit type, on every available device with every
/// variant: each stored result is the rounding to the storage type of a value within the accuracy the function table
/// gives that device's backend on that type (`Accuracy::of_stored`: on CUDA, `exp`, `sin` and `cos` take their
/// storage-sized forms there), at the argument itself and at the argument times 1.2345679 (an `f32` with a full
/// mantissa, as `sin(3*x)` computes one). Every binade of `f32` is among bf16's patterns, so this is the sweep over
/// every binade for the kernels on 16-bit arrays. A subnormal argument may be read as zero, as the check allows.
#[test]
fn every_function_meets_its_sixteen_bit_accuracy_over_every_bit_pattern() {
    let mut failures = Vec::new();
    for device in devices() {
        let kind = device.kind();
        for spec in FUNCTIONS.iter().filter(|spec| spec.arity == 1) {
            for (dtype, factor) in [Dtype::Bf16, Dtype::F16].into_iter().flat_map(|d| [(d, 1.0f32), (d, 1.2345679)]) {
                let bound = spec.accuracy.of_stored(kind, dtype);
                let source = format!("y = {}(x * m)", spec.name);
                let program = Arc::new(Expr::parse(&source).unwrap().bind(&["m"]).unwrap());
                let bits: Vec<u16> = (0..=u16::MAX).collect();
                let params = ExprParams::new(Arc::clone(&program), bits.len(), vec![factor]).in_dtype(dtype);
                let input = ExprInput { params, arrays: vec![HostArray::from_bits(dtype, bits).unwrap()] };
                let x = input.arrays[0].values();
                for variant in device.variants::<Expression>() {
                    let output = device
                        .run::<Expression>(variant, &input)
                        .unwrap_or_else(|e| panic!("{} {variant}: `{source}` in {dtype}: {e}", device.label()));
                    let Outputs::Half { arrays, .. } = output else {
                        panic!("{}: `{source}` in {dtype}: not 16-bit outputs", device.label());
                    };
                    let mut failed = 0;
                    for (&got, &x) in arrays[0].iter().zip(x.iter()) {
                        let argument = x * factor;
                        let mut candidates = vec![argument];
                        if argument.is_subnormal() || x.is_subnormal() {
                            candidates.push(0.0f32.copysign(argument));
                        }
                        let got = dtype.decode(got);
                        let within = |a: f32| {
                            let within = allowed(spec, &bound, &[f64::from(a)]);
                            let gives_up = matches!(spec.func, Func::Sin | Func::Cos) && within.error >= 2.0;
                            !within.error.is_finite() || gives_up || within.accepts_stored(got, dtype)
                        };
                        if !candidates.iter().any(|&a| within(a)) {
                            failed += 1;
                            if failed <= 3 {
                                let want = (spec.reference)(&[f64::from(argument)]);
                                failures.push(format!(
                                    "{} {variant}: {}({argument:e}) in {dtype} = {got:e}, expected {want:e} (the {kind} \
                                     column of the function table on {dtype})",
                                    device.label(),
                                    spec.name,
                                ));
                            }
                        }
                    }
                    if failed > 3 {
                        failures.push(format!(
                            "{} {variant}: `{source}` in {dtype}: {failed} out of bound",
                            device.label()
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// 16-bit arrays are widened exactly and rounded to nearest even on every backend, as the CPU's conversions round:
/// every bit pattern of each type times factors that make ties, overflow past f16's 65504, subnormals and NaN,
/// compared bit for bit with the rounding of the same `f32` product (where the product or the input is an `f32`
/// subnormal, a zero is accepted: Vulkan lets a driver flush subnormal operands, as NVIDIA's does, and the check
/// allows it). `1 + 2^-p` (p the type's significant bits) makes ties only where the kept bits are even, which a
/// rounding that sends every tie down passes; `1 + 2^-(p-1) + 2^-p` makes them where the kept bits are odd. The second
/// expression calls a special function, which sends CUDA's first calls through its one-element-a-thread kernel and
/// WGSL's vectors with a NaN through the guarded path.
#[test]
fn sixteen_bit_elements_round_alike_on_every_backend() {
    for device in devices() {
        for source in ["y = x * m", "y = where(exp(x) >= 0, x * m, x * m)"] {
            let program = Arc::new(Expr::parse(source).unwrap().bind(&["m"]).unwrap());
            for (dtype, increment) in [(Dtype::F16, 11), (Dtype::Bf16, 8)]
                .into_iter()
                .flat_map(|(dtype, p)| [(dtype, 2f32.powi(-p)), (dtype, 2f32.powi(1 - p) + 2f32.powi(-p))])
            {
                let factor = 1.0 + increment;
                let bits: Vec<u16> = (0..=u16::MAX).collect();
                let params = ExprParams::new(Arc::clone(&program), bits.len(), vec![factor]).in_dtype(dtype);
                let input = ExprInput { params, arrays: vec![HostArray::from_bits(dtype, bits).unwrap()] };
                let variant = device.best_variant::<Expression>(&input.params);
                let output = device.run::<Expression>(variant, &input).unwrap();
                let Outputs::Half { arrays, .. } = output else {
                    panic!("{}: `{source}` in {dtype}: not 16-bit outputs", device.label());
                };
                let x = input.arrays[0].values();
                for (i, (&got, &x)) in arrays[0].iter().zip(x.iter()).enumerate() {
                    let product = x * factor;
                    let want = dtype.encode(product);
                    let same = got == want
                        || (product.is_nan() && dtype.decode(got).is_nan())
                        || ((product.is_subnormal() || x.is_subnormal()) && dtype.decode(got) == 0.0);
                    assert!(
                        same,
                        "{}: `{source}` in {dtype}: {i:#06x} = {x:e}: got {got:#06x}, want {want:#06x}",
                        device.label()
                    );
                }
            }
        }
    }
}
