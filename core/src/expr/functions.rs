//! The functions of the language as one table ([`FUNCTIONS`]): a row per function with its name, its number of
//! arguments, its `f64` reference, its `f32` form one element at a time, how it is priced, and how accurate each
//! backend computes it. The parser's list, the reference, the plain interpreter, the random expressions, the cost and
//! the guide's list of functions are read from it; each backend's code generator supplies only its own spelling of a
//! row (a name in CUDA C, a helper in WGSL).
//!
//! Adding a function is one row here, one variant of [`Func`], and a spelling in each backend's table.

use crate::BackendKind;
use crate::dtype::Dtype;

/// One `f32` unit of least precision at `v`, as an `f64` (that of the smallest normal below it).
pub fn ulp(v: f64) -> f64 {
    let a = v.abs();
    if !a.is_finite() {
        return 0.0;
    }
    let f = a as f32;
    if f < f32::MIN_POSITIVE {
        return f64::from(f32::from_bits(1));
    }
    let exponent = ((f.to_bits() >> 23) & 0xff) as i32 - 127;
    2f64.powi(exponent - 23)
}

/// How accurate a function is, beyond correct rounding: `ulps` units of least precision of the result (plus
/// `ulps_per_magnitude` for each unit of the argument's magnitude, [`Func::magnitude`], for functions whose range
/// reduction loses accuracy as the argument grows), and `absolute` of absolute error. Each backend's are a column of
/// the function table ([`Accuracy`](super::Accuracy)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FunctionBound {
    /// Units of least precision of the result.
    pub ulps: f64,
    /// Further units of least precision per unit of `|argument|`.
    pub ulps_per_magnitude: f64,
    /// An absolute error, for results near zero.
    pub absolute: f64,
    /// The largest magnitude of the argument ([`Func::magnitude`]) the bound holds for: beyond it the result is not
    /// determined (infinite where the backend is accurate everywhere).
    pub reach: f64,
}

impl FunctionBound {
    /// How far a result of value `value` (rounded to `f32`) may be from the exact one beyond its rounding, for
    /// arguments whose [`Func::magnitude`] is `magnitude`; zero for a non-finite value or an exact function.
    pub fn error(&self, value: f64, magnitude: f64) -> f64 {
        if !value.is_finite() || (self.ulps == 0.0 && self.absolute == 0.0) {
            return 0.0;
        }
        if magnitude > self.reach {
            return f64::INFINITY;
        }
        let growing = if self.ulps_per_magnitude > 0.0 && magnitude.is_finite() {
            self.ulps_per_magnitude * magnitude
        } else {
            0.0
        };
        (self.ulps + growing) * ulp(value) + self.absolute
    }
}

/// A function of the language: a row of [`FUNCTIONS`], which holds its name, arity,
/// reference, cost and accuracy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // each is the function of its name, as EXPRESSIONS.md defines it
pub enum Func {
    Abs,
    Min,
    Max,
    Clamp,
    Sqrt,
    Exp,
    Exp2,
    Log,
    Log2,
    Pow,
    Sin,
    Cos,
    Tan,
    Tanh,
    Asin,
    Acos,
    Atan,
    Atan2,
    Floor,
    Ceil,
    Round,
    Trunc,
    Fma,
    Sign,
    Where,
    Erf,
    Expm1,
    Log1p,
    Sinh,
    Cosh,
}

impl Func {
    /// Every function, its name and its number of arguments, in the order of the table.
    pub const ALL: [(Func, &'static str, usize); FUNCTIONS.len()] = {
        let mut all = [(Func::Abs, "", 0); FUNCTIONS.len()];
        let mut i = 0;
        while i < FUNCTIONS.len() {
            all[i] = (FUNCTIONS[i].func, FUNCTIONS[i].name, FUNCTIONS[i].arity);
            i += 1;
        }
        all
    };

    /// The function's name in the language.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// How many arguments it takes.
    pub fn arity(self) -> usize {
        self.spec().arity
    }

    /// Whether it is a special function, counted apart from arithmetic in an expression's cost (it costs many
    /// instructions, or a special-function unit's).
    pub fn is_special(self) -> bool {
        self.spec().cost == Cost::Special
    }
}

/// How a function is priced in an expression's cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    /// As this many arithmetic operations (`abs`, `min`, `floor`, `where`: one; `fma`: two).
    Flops(u64),
    /// As a special function, counted apart from arithmetic: many instructions, or a special-function unit's.
    Special,
}

/// How far each backend's result of a function may be from the exact value beyond correct rounding ([`FunctionBound`]).
///
/// The CPU's and wgpu's columns are what the accuracy sweep over every binade (`tests/tests/expressions.rs`) holds
/// them to, on this crate's CPU evaluator and on the generated WGSL: measured there (the wgpu column on lavapipe, a
/// Vulkan driver that computes on the CPU, and on NVIDIA's Vulkan driver, which flushes subnormals and divides through
/// a reciprocal; see `docs/results/nvidia-h200/expressions-functions/`), and no tighter than Vulkan's documented
/// bounds where a driver's builtin is used. CUDA's
/// column is the maximum error the CUDA C Programming Guide documents for its math library (NVRTC's defaults: no fast
/// math, correctly rounded `sqrtf`), which the same sweep holds it to where CUDA runs. The check
/// ([`super::FunctionBounds::of`]) allows the loosest of the columns, since one reference serves every backend.
///
/// CUDA has a fourth column, for kernels on 16-bit arrays: there the generator computes `exp`, `sin` and `cos` by the
/// special-function unit's approximations (`ex2.approx`, `sin.approx`) after a reduction of its own, sized to a result
/// that is rounded to 8 or 11 bits (see `gpuworthy_cuda::expr`); every other function is the math library's, as on
/// `f32` arrays. That column is no looser than the wgpu one, so the check's bounds do not move with the storage type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Accuracy {
    /// This crate's CPU evaluator (vectorised forms and the standard library's).
    pub cpu: FunctionBound,
    /// CUDA's math library.
    pub cuda: FunctionBound,
    /// CUDA's kernels on 16-bit arrays: the math library's, or the storage-sized form where the function has one.
    pub cuda_sixteen_bit: FunctionBound,
    /// The generated WGSL: a driver's builtins where Vulkan bounds them well, helpers of the generator's otherwise.
    pub wgpu: FunctionBound,
}

impl Accuracy {
    /// The column of `backend` on `f32` arrays.
    pub fn of(&self, backend: BackendKind) -> FunctionBound {
        match backend {
            BackendKind::Cpu => self.cpu,
            BackendKind::Cuda => self.cuda,
            BackendKind::Wgpu => self.wgpu,
        }
    }

    /// The column of `backend` on arrays stored as `dtype`.
    pub fn of_stored(&self, backend: BackendKind, dtype: Dtype) -> FunctionBound {
        if backend == BackendKind::Cuda && dtype.is_half() { self.cuda_sixteen_bit } else { self.of(backend) }
    }

    /// The loosest of the columns, bound by bound.
    pub fn loosest(&self) -> FunctionBound {
        [self.cuda, self.cuda_sixteen_bit, self.wgpu].iter().fold(self.cpu, |a, b| FunctionBound {
            ulps: a.ulps.max(b.ulps),
            ulps_per_magnitude: a.ulps_per_magnitude.max(b.ulps_per_magnitude),
            absolute: a.absolute.max(b.absolute),
            reach: a.reach.min(b.reach),
        })
    }
}

/// One function of the language.
#[derive(Debug, Clone, Copy)]
pub struct FuncSpec {
    /// The function.
    pub func: Func,
    /// Its name in the language.
    pub name: &'static str,
    /// How many arguments it takes.
    pub arity: usize,
    /// Its exact value, in `f64`, of `f64` arguments (`where` reads its first argument as a truth value).
    pub reference: fn(&[f64]) -> f64,
    /// Its `f32` value one element at a time, as the plain interpreter and the CPU evaluator's scalar paths compute it.
    pub scalar: fn(&[f32]) -> f32,
    /// How it is priced.
    pub cost: Cost,
    /// How accurate each backend computes it.
    pub accuracy: Accuracy,
}

const fn bound(ulps: f64, ulps_per_magnitude: f64, absolute: f64) -> FunctionBound {
    FunctionBound { ulps, ulps_per_magnitude, absolute, reach: f64::INFINITY }
}

/// `bound` for arguments up to `reach` in magnitude only.
const fn reaching(bound: FunctionBound, reach: f64) -> FunctionBound {
    FunctionBound { reach, ..bound }
}

/// How far the generated WGSL's sin, cos and tan are bounded: Vulkan bounds a driver's on [-pi, pi] only, so the
/// generator reduces the angle itself, exactly enough up to 2^18 (the WGSL helper `reduce_angle` says why); beyond,
/// the driver's own reduction may be off by |x| 2^-23 or give up.
const TRIG_REACH: f64 = 262_144.0;

/// Exact on every backend.
const EXACT: Accuracy = accuracy(bound(0.0, 0.0, 0.0), bound(0.0, 0.0, 0.0), bound(0.0, 0.0, 0.0));

/// 2^-20, 2^-21, 2^-22: absolute errors near a zero of the result.
const P20: f64 = 1.0 / (1u64 << 20) as f64;
const P21: f64 = 1.0 / (1u64 << 21) as f64;
const P22: f64 = 1.0 / (1u64 << 22) as f64;

/// The columns of a function that CUDA computes alike on every storage type.
const fn accuracy(cpu: FunctionBound, cuda: FunctionBound, wgpu: FunctionBound) -> Accuracy {
    Accuracy { cpu, cuda, cuda_sixteen_bit: cuda, wgpu }
}

/// `columns` with CUDA's storage-sized form on 16-bit arrays bounded by `sixteen_bit`.
const fn on_sixteen_bit_cuda(columns: Accuracy, sixteen_bit: FunctionBound) -> Accuracy {
    Accuracy { cuda_sixteen_bit: sixteen_bit, ..columns }
}

/// Every function of the language, in the order of [`Func`]'s variants.
pub const FUNCTIONS: [FuncSpec; 30] = [
    FuncSpec {
        func: Func::Abs,
        name: "abs",
        arity: 1,
        reference: |x| x[0].abs(),
        scalar: |x| x[0].abs(),
        cost: Cost::Flops(1),
        accuracy: EXACT,
    },
    FuncSpec {
        func: Func::Min,
        name: "min",
        arity: 2,
        reference: |x| min_num(x[0], x[1]),
        scalar: |x| x[0].min(x[1]),
        cost: Cost::Flops(1),
        accuracy: EXACT,
    },
    FuncSpec {
        func: Func::Max,
        name: "max",
        arity: 2,
        reference: |x| max_num(x[0], x[1]),
        scalar: |x| x[0].max(x[1]),
        cost: Cost::Flops(1),
        accuracy: EXACT,
    },
    FuncSpec {
        func: Func::Clamp,
        name: "clamp",
        arity: 3,
        reference: |x| min_num(max_num(x[0], x[1]), x[2]),
        scalar: |x| x[0].max(x[1]).min(x[2]),
        cost: Cost::Flops(1),
        accuracy: EXACT,
    },
    FuncSpec {
        func: Func::Sqrt,
        name: "sqrt",
        arity: 1,
        reference: |x| x[0].sqrt(),
        scalar: |x| x[0].sqrt(),
        cost: Cost::Special,
        // Vulkan inherits sqrt from 1 / inversesqrt: 3 ulp.
        accuracy: accuracy(bound(0.0, 0.0, 0.0), bound(0.0, 0.0, 0.0), bound(3.0, 0.0, 0.0)),
    },
    FuncSpec {
        func: Func::Exp,
        name: "exp",
        arity: 1,
        reference: |x| x[0].exp(),
        scalar: |x| x[0].exp(),
        cost: Cost::Special,
        // Vulkan: 3 + 2|x| ulp. CUDA on 16-bit arrays, `__expf`: 2 + 1.173|x| ulp (the CUDA C Programming Guide).
        accuracy: on_sixteen_bit_cuda(
            accuracy(bound(2.0, 0.0, 0.0), bound(2.0, 0.0, 0.0), bound(3.0, 2.0, 0.0)),
            bound(2.0, 1.173, 0.0),
        ),
    },
    FuncSpec {
        func: Func::Exp2,
        name: "exp2",
        arity: 1,
        reference: |x| x[0].exp2(),
        scalar: |x| x[0].exp2(),
        cost: Cost::Special,
        accuracy: accuracy(bound(2.0, 0.0, 0.0), bound(2.0, 0.0, 0.0), bound(3.0, 2.0, 0.0)),
    },
    FuncSpec {
        func: Func::Log,
        name: "log",
        arity: 1,
        reference: |x| x[0].ln(),
        scalar: |x| x[0].ln(),
        cost: Cost::Special,
        // Vulkan: 3 ulp outside [0.5, 2], 2^-21 absolute inside.
        accuracy: accuracy(bound(2.0, 0.0, 0.0), bound(1.0, 0.0, 0.0), bound(3.0, 0.0, P21)),
    },
    FuncSpec {
        func: Func::Log2,
        name: "log2",
        arity: 1,
        reference: |x| x[0].log2(),
        scalar: |x| x[0].log2(),
        cost: Cost::Special,
        accuracy: accuracy(bound(1.0, 0.0, 0.0), bound(1.0, 0.0, 0.0), bound(3.0, 0.0, P21)),
    },
    FuncSpec {
        func: Func::Pow,
        name: "pow",
        arity: 2,
        reference: |x| pow(x[0], x[1]),
        scalar: |x| pow_f32(x[0], x[1]),
        cost: Cost::Special,
        // The magnitude is |y log2|x||, the exponent of the exp2 that pow is computed by.
        accuracy: accuracy(bound(1.0, 0.0, 0.0), bound(4.0, 0.0, 0.0), bound(4.0, 2.0, 0.0)),
    },
    FuncSpec {
        func: Func::Sin,
        name: "sin",
        arity: 1,
        reference: |x| x[0].sin(),
        scalar: |x| x[0].sin(),
        cost: Cost::Special,
        // Vulkan drivers compute sin and cos on [-pi, pi] by the hardware's approximation: about 2^-21 absolute. So
        // does CUDA on 16-bit arrays after its own reduction (relative below 1/64 in magnitude, where the result is
        // the reduced argument itself), and by the math library past the reduction's reach.
        accuracy: on_sixteen_bit_cuda(
            accuracy(bound(2.0, 0.0, 0.0), bound(2.0, 0.0, 0.0), reaching(bound(4.0, 2.0, P20), TRIG_REACH)),
            bound(4.0, 0.0, P20),
        ),
    },
    FuncSpec {
        func: Func::Cos,
        name: "cos",
        arity: 1,
        reference: |x| x[0].cos(),
        scalar: |x| x[0].cos(),
        cost: Cost::Special,
        accuracy: on_sixteen_bit_cuda(
            accuracy(bound(2.0, 0.0, 0.0), bound(2.0, 0.0, 0.0), reaching(bound(4.0, 2.0, P20), TRIG_REACH)),
            bound(4.0, 0.0, P20),
        ),
    },
    FuncSpec {
        func: Func::Tan,
        name: "tan",
        arity: 1,
        reference: |x| x[0].tan(),
        scalar: |x| x[0].tan(),
        cost: Cost::Special,
        accuracy: accuracy(bound(1.0, 0.0, 0.0), bound(4.0, 0.0, 0.0), reaching(bound(6.0, 2.0, P20), TRIG_REACH)),
    },
    FuncSpec {
        func: Func::Tanh,
        name: "tanh",
        arity: 1,
        reference: |x| x[0].tanh(),
        scalar: |x| x[0].tanh(),
        cost: Cost::Special,
        accuracy: accuracy(bound(2.0, 0.0, 0.0), bound(2.0, 0.0, 0.0), bound(5.0, 0.0, P22)),
    },
    FuncSpec {
        func: Func::Asin,
        name: "asin",
        arity: 1,
        reference: |x| x[0].asin(),
        scalar: |x| x[0].asin(),
        cost: Cost::Special,
        accuracy: accuracy(bound(1.0, 0.0, 0.0), bound(4.0, 0.0, 0.0), bound(5.0, 0.0, P22)),
    },
    FuncSpec {
        func: Func::Acos,
        name: "acos",
        arity: 1,
        reference: |x| x[0].acos(),
        scalar: |x| x[0].acos(),
        cost: Cost::Special,
        accuracy: accuracy(bound(1.0, 0.0, 0.0), bound(3.0, 0.0, 0.0), bound(5.0, 0.0, P22)),
    },
    FuncSpec {
        func: Func::Atan,
        name: "atan",
        arity: 1,
        reference: |x| x[0].atan(),
        scalar: |x| x[0].atan(),
        cost: Cost::Special,
        accuracy: accuracy(bound(2.0, 0.0, 0.0), bound(2.0, 0.0, 0.0), bound(5.0, 0.0, P22)),
    },
    FuncSpec {
        func: Func::Atan2,
        name: "atan2",
        arity: 2,
        reference: |x| x[0].atan2(x[1]),
        scalar: |x| x[0].atan2(x[1]),
        cost: Cost::Special,
        accuracy: accuracy(bound(1.0, 0.0, 0.0), bound(3.0, 0.0, 0.0), bound(8.0, 0.0, P22)),
    },
    FuncSpec {
        func: Func::Floor,
        name: "floor",
        arity: 1,
        reference: |x| x[0].floor(),
        scalar: |x| x[0].floor(),
        cost: Cost::Flops(1),
        accuracy: EXACT,
    },
    FuncSpec {
        func: Func::Ceil,
        name: "ceil",
        arity: 1,
        reference: |x| x[0].ceil(),
        scalar: |x| x[0].ceil(),
        cost: Cost::Flops(1),
        accuracy: EXACT,
    },
    FuncSpec {
        func: Func::Round,
        name: "round",
        arity: 1,
        reference: |x| round_half_even(x[0]),
        scalar: |x| x[0].round_ties_even(),
        cost: Cost::Flops(1),
        accuracy: EXACT,
    },
    FuncSpec {
        func: Func::Trunc,
        name: "trunc",
        arity: 1,
        reference: |x| x[0].trunc(),
        scalar: |x| x[0].trunc(),
        cost: Cost::Flops(1),
        accuracy: EXACT,
    },
    FuncSpec {
        func: Func::Fma,
        name: "fma",
        arity: 3,
        reference: |x| x[0].mul_add(x[1], x[2]),
        scalar: |x| x[0].mul_add(x[1], x[2]),
        cost: Cost::Flops(2),
        accuracy: EXACT,
    },
    FuncSpec {
        func: Func::Sign,
        name: "sign",
        arity: 1,
        reference: |x| if x[0].is_nan() || x[0] == 0.0 { x[0] } else { x[0].signum() },
        scalar: |x| sign_f32(x[0]),
        cost: Cost::Flops(1),
        accuracy: EXACT,
    },
    FuncSpec {
        func: Func::Where,
        name: "where",
        arity: 3,
        reference: |x| if x[0] != 0.0 { x[1] } else { x[2] },
        scalar: |x| if x[0] != 0.0 { x[1] } else { x[2] },
        cost: Cost::Flops(1),
        accuracy: EXACT,
    },
    FuncSpec {
        func: Func::Erf,
        name: "erf",
        arity: 1,
        reference: |x| erf(x[0]),
        scalar: |x| erf(f64::from(x[0])) as f32,
        cost: Cost::Special,
        // The WGSL helper is a polynomial below 0.9 and 1 - e^(a polynomial) above.
        accuracy: accuracy(bound(2.0, 0.0, 0.0), bound(2.0, 0.0, 0.0), bound(3.0, 0.0, P22)),
    },
    FuncSpec {
        func: Func::Expm1,
        name: "expm1",
        arity: 1,
        reference: |x| x[0].exp_m1(),
        scalar: |x| f64::from(x[0]).exp_m1() as f32,
        cost: Cost::Special,
        // The WGSL helper is a polynomial below 0.5 in magnitude and `exp(x) - 1` above: exp's error, and its growth.
        accuracy: accuracy(bound(2.0, 0.0, 0.0), bound(1.0, 0.0, 0.0), bound(3.0, 2.0, 0.0)),
    },
    FuncSpec {
        func: Func::Log1p,
        name: "log1p",
        arity: 1,
        reference: |x| x[0].ln_1p(),
        scalar: |x| f64::from(x[0]).ln_1p() as f32,
        cost: Cost::Special,
        accuracy: accuracy(bound(1.0, 0.0, 0.0), bound(1.0, 0.0, 0.0), bound(3.0, 0.0, 0.0)),
    },
    FuncSpec {
        func: Func::Sinh,
        name: "sinh",
        arity: 1,
        reference: |x| x[0].sinh(),
        scalar: |x| x[0].sinh(),
        cost: Cost::Special,
        // The WGSL helper is a polynomial below 1 in magnitude and from exp above: exp's error, and its growth.
        accuracy: accuracy(bound(3.0, 0.0, 0.0), bound(3.0, 0.0, 0.0), bound(4.0, 2.0, 0.0)),
    },
    FuncSpec {
        func: Func::Cosh,
        name: "cosh",
        arity: 1,
        reference: |x| x[0].cosh(),
        scalar: |x| x[0].cosh(),
        cost: Cost::Special,
        accuracy: accuracy(bound(3.0, 0.0, 0.0), bound(2.0, 0.0, 0.0), bound(4.0, 2.0, 0.0)),
    },
];

/// `pow` as EXPRESSIONS.md defines it: NaN for a negative base unless the exponent is an integer.
fn pow(x: f64, y: f64) -> f64 {
    if x < 0.0 && y.is_finite() && y.fract() != 0.0 { f64::NAN } else { x.powf(y) }
}

/// `pow` as the language defines it, in `f32`: NaN for a negative base unless the exponent is an integer.
pub fn pow_f32(x: f32, y: f32) -> f32 {
    if x < 0.0 && y.is_finite() && y.fract() != 0.0 { f32::NAN } else { x.powf(y) }
}

/// `sign`: NaN for NaN, the zero itself for a zero, else ±1.
pub fn sign_f32(x: f32) -> f32 {
    if x.is_nan() || x == 0.0 { x } else { x.signum() }
}

/// `round`: half to even.
fn round_half_even(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 { 2.0 * (x / 2.0).round() } else { r }
}

/// IEEE minNum: the non-NaN operand.
pub(crate) fn min_num(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() {
        a
    } else {
        a.min(b)
    }
}

/// IEEE maxNum: the non-NaN operand.
pub(crate) fn max_num(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() {
        a
    } else {
        a.max(b)
    }
}

/// The error function in `f64`, far more accurate than an `f32` result needs: its Maclaurin series below 2.5 in
/// magnitude (whose largest term, about 200, costs a few digits of the sixteen), `1 - erfc` by erfc's continued
/// fraction from there to 6, and ±1 beyond (erfc(6) is about 2e-17).
pub fn erf(x: f64) -> f64 {
    let a = x.abs();
    if x.is_nan() || a == 0.0 {
        return x;
    }
    if a >= 6.0 {
        return x.signum();
    }
    let two_over_sqrt_pi = std::f64::consts::FRAC_2_SQRT_PI;
    if a < 2.5 {
        let s = x * x;
        let (mut power, mut sum) = (x, x);
        for n in 1..200 {
            power *= -s / f64::from(n);
            let term = power / f64::from(2 * n + 1);
            sum += term;
            if term.abs() <= 1e-18 * sum.abs() {
                break;
            }
        }
        return sum * two_over_sqrt_pi;
    }
    // erfc(a) = e^(-a²) / sqrt(pi) / (a + (1/2) / (a + 1 / (a + (3/2) / (a + 2 / (a + ...))))), from the inside out.
    let mut t = a;
    for k in (1..=80).rev() {
        t = a + f64::from(k) / 2.0 / t;
    }
    let erfc = (-a * a).exp() * two_over_sqrt_pi / 2.0 / t;
    (1.0 - erfc).copysign(x)
}

impl Func {
    /// The function's row of [`FUNCTIONS`].
    pub fn spec(self) -> &'static FuncSpec {
        &FUNCTIONS[self as usize]
    }

    /// How far a backend computing this function within `bound` may be from its exact value at `args`, beyond the
    /// rounding of the result `value`: [`FunctionBound::error`]; for `tan` the relative error that sin's and cos's
    /// absolute errors make of their quotient (Vulkan inherits tan from sin / cos); for `fma` the rounding of the
    /// product, which a backend without a fused multiply-add makes.
    pub fn error_allowed(self, bound: &FunctionBound, value: f64, args: &[f64]) -> f64 {
        let mut error = bound.error(value, self.magnitude(args));
        if self == Func::Tan && value.is_finite() && bound.absolute > 0.0 {
            let x = args[0];
            error += value.abs() * bound.absolute * (1.0 / x.sin().abs() + 1.0 / x.cos().abs());
        }
        if self == Func::Fma && args.len() == 3 {
            // WGSL lets fma round the product too (lavapipe does).
            let product = args[0] * args[1];
            if product.is_finite() {
                error += ulp(product) / 2.0;
            }
        }
        error
    }

    /// The size of the argument an error grows with ([`FunctionBound::ulps_per_magnitude`]): `|y log2|x||` for
    /// `pow`, the exponent of the exp2 it is computed by; the first argument's magnitude otherwise.
    pub fn magnitude(self, args: &[f64]) -> f64 {
        if self == Func::Pow && args.len() == 2 {
            (args[1] * args[0].abs().log2()).abs()
        } else {
            args.first().map_or(0.0, |x| x.abs())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_the_order_of_the_variants_and_names_are_unique() {
        for (i, spec) in FUNCTIONS.iter().enumerate() {
            assert_eq!(spec.func as usize, i, "{}", spec.name);
            assert_eq!(FUNCTIONS.iter().filter(|s| s.name == spec.name).count(), 1, "{}", spec.name);
        }
    }

    /// The guide's list of functions (chapter 21, "The language, briefly") is the table's, in its order.
    #[test]
    fn the_guides_list_of_functions_is_the_table() {
        let guide = include_str!("../../../docs/21-your-own-computation.md");
        let start = guide.find("Functions: `").expect("the guide lists the functions") + "Functions: `".len();
        let listed: Vec<&str> = guide[start..][..guide[start..].find('`').unwrap()].split_whitespace().collect();
        let table: Vec<&str> = FUNCTIONS.iter().map(|s| s.name).collect();
        assert_eq!(listed, table);
    }

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (2.4999, 0.999_592_830_099_666_6),
            (2.5, 0.999_593_047_982_555),
            (3.0, 0.999_977_909_503_001_4),
            (-1e-3, -0.001_128_378_790_969_236_5),
        ] {
            let got = erf(x);
            assert!((got - want).abs() <= 4e-15 * want.abs(), "erf({x}) = {got}, not {want}");
        }
        assert_eq!(erf(7.0), 1.0);
        assert!(erf(f64::NAN).is_nan());
    }
}
