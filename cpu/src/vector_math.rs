//! `exp`, `exp2`, `log`, `sin`, `cos`, `tanh`, `atan`, `expm1`, `sinh`, `cosh` and `erf` written so that the compiler
//! vectorises them: one element at a time, with no branch and no call, so that a loop over a block of an expression's
//! values becomes SIMD code for the backend's instruction set (the standard library's functions are calls, one element
//! at a time).
//!
//! Each is the classic reduction and polynomial (Cephes' single-precision coefficients), evaluated with fused
//! multiply-adds at the SIMD levels that have them (the functions are generic over the level for that): `exp` reduces
//! by `ln 2` in two parts and scales by two powers of two (so that results down to the subnormals need no branch);
//! `sin` and `cos` reduce by `pi/2` in three parts, which holds for `|x| <=` [`TRIG_VECTOR_LIMIT`]; larger arguments
//! are recomputed by the standard library after the loop ([`trig_map`]); `tanh` is a polynomial below 0.625 in
//! magnitude and `1 - 2 / (e^2|x| + 1)` above, through `exp`; `log` splits off the exponent and takes the mantissa's
//! polynomial around 1; `atan` reduces by `pi/4` or `pi/2` to an argument below `tan(pi/8)`; `expm1`, `sinh` and
//! `cosh` are Taylor polynomials where `exp` would cancel and `exp` elsewhere, and `erf` is Norbert Juffa's `erff`
//! through `exp`, each computing every form and choosing one. Their accuracy, tested below against `f64` over
//! millions of arguments (the first seven) and by the accuracy sweep over every binade (all), is within 2 units of
//! least precision for normal results (`atan` within 2.1, `sinh` and `cosh` within 3): inside the CPU's column of the function table
//! ([`gpuworthy_core::expr::Accuracy`]).

use crate::simd::{Level, Simd};

/// `a * b + c`, as one fused multiply-add where the SIMD level `S` has the instruction (every level but the
/// portable one: there the standard library's `mul_add` is a call to a software routine, so it is a multiply and an
/// add). The reductions and polynomials below are chains of these, so the fused form makes the special functions
/// faster (measured on the 2-core machine: docs/results/cpu-2-core-lavapipe/README.md#why-the-code-is-shaped-so).
#[inline(always)]
fn madd<S: Simd>(a: f32, b: f32, c: f32) -> f32 {
    if matches!(S::LEVEL, Level::Portable) { a * b + c } else { a.mul_add(b, c) }
}

/// 1.5 x 2^23: added to a float of magnitude below 2^22, leaves its nearest integer in the low bits.
const ROUND_MAGIC: f32 = 12_582_912.0;

/// Rounds `t` (|t| < 2^22) to the nearest integer, as a float and as an integer, without a conversion instruction.
#[inline(always)]
fn round_to_integer(t: f32) -> (f32, i32) {
    let shifted = t + ROUND_MAGIC;
    // Wrapping: for a NaN or an argument past the reach of the caller (recomputed after the loop) the integer is
    // nonsense, but it must not trap.
    (shifted - ROUND_MAGIC, (shifted.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32))
}

/// 2^n for n in [-126, 127], from its bits.
#[inline(always)]
fn power_of_two(n: i32) -> f32 {
    f32::from_bits(((n + 127) as u32) << 23)
}

/// e^r for |r| <= ln(2)/2 (Cephes `expf`'s polynomial).
#[inline(always)]
fn exp_polynomial<S: Simd>(r: f32) -> f32 {
    let p = 1.987_569_1e-4_f32;
    let p = madd::<S>(p, r, 1.398_199_9e-3);
    let p = madd::<S>(p, r, 8.333_452e-3);
    let p = madd::<S>(p, r, 4.166_579_6e-2);
    let p = madd::<S>(p, r, 0.166_666_65);
    let p = madd::<S>(p, r, 0.5);
    madd::<S>(p, r * r, r) + 1.0
}

/// `p x 2^n` for n in [-252, 254], in two steps so that each power is a normal float.
#[inline(always)]
fn scale(p: f32, n: i32) -> f32 {
    let half = n >> 1;
    p * power_of_two(half) * power_of_two(n - half)
}

/// `x` clamped to `[low, high]`, a NaN passed on (both comparisons are false for a NaN, which keeps `x`): a `max` and
/// a `min` instruction, which keep their second operand when a comparison is unordered, where `f32::clamp` and then a
/// test for NaN at the end took six.
#[inline(always)]
fn clamp_passing_nan(x: f32, low: f32, high: f32) -> f32 {
    let above = if x <= low { low } else { x };
    if above >= high { high } else { above }
}

/// e^x.
#[inline(always)]
pub fn exp<S: Simd>(x: f32) -> f32 {
    // Past these, e^x is +inf or rounds to 0; clamping keeps the integer part in range. A NaN goes through the
    // arithmetic as a NaN: its integer part is nonsense, but NaN times any power of two is NaN.
    let clamped = clamp_passing_nan(x, -104.0, 89.0);
    let (n, bits) = round_to_integer(clamped * std::f32::consts::LOG2_E);
    let r = madd::<S>(-n, -2.121_944_4e-4, madd::<S>(-n, 0.693_359_4, clamped));
    scale(exp_polynomial::<S>(r), bits)
}

/// 2^x.
#[inline(always)]
pub fn exp2<S: Simd>(x: f32) -> f32 {
    let clamped = clamp_passing_nan(x, -151.0, 129.0);
    let (n, bits) = round_to_integer(clamped);
    scale(exp_polynomial::<S>((clamped - n) * std::f32::consts::LN_2), bits)
}

/// The largest `|x|` whose `sin` and `cos` the vectorised reduction computes; larger ones are recomputed by
/// [`trig_map`].
pub const TRIG_VECTOR_LIMIT: f32 = 8192.0;

/// `x` reduced by `pi/2`: the remainder in [-pi/4, pi/4] and the quadrant (the multiple of `pi/2` taken away).
#[inline(always)]
fn reduce_by_half_pi<S: Simd>(x: f32) -> (f32, i32) {
    let (q, quadrant) = round_to_integer(x * std::f32::consts::FRAC_2_PI);
    // pi/2 in three parts: the first two hold few enough bits that q times them is exact for |q| < 2^13.
    let r = madd::<S>(-q, 1.570_312_5, x);
    let r = madd::<S>(-q, 4.837_513e-4, r);
    let r = madd::<S>(-q, 7.549_79e-8, r);
    (r, quadrant)
}

/// sin(r) and cos(r) for |r| <= pi/4 (Cephes' `sinf` and `cosf` polynomials).
#[inline(always)]
fn sin_cos_polynomials<S: Simd>(r: f32) -> (f32, f32) {
    let z = r * r;
    let s = madd::<S>(madd::<S>(madd::<S>(-1.951_529_6e-4, z, 8.332_161e-3), z, -0.166_666_55), z * r, r);
    let c = madd::<S>(
        madd::<S>(madd::<S>(2.443_315_7e-5, z, -1.388_731_6e-3), z, 4.166_664_6e-2),
        z * z,
        madd::<S>(-0.5, z, 1.0),
    );
    (s, c)
}

/// The sine or cosine of the quadrant `quadrant` from the polynomials' values: the sign is bit 1 of the quadrant,
/// moved to the sign bit.
#[inline(always)]
fn by_quadrant(quadrant: i32, s: f32, c: f32) -> f32 {
    let value = if quadrant & 1 == 0 { s } else { c };
    f32::from_bits(value.to_bits() ^ (((quadrant & 2) as u32) << 30))
}

/// sin(x), for |x| <= [`TRIG_VECTOR_LIMIT`] (and NaN for NaN and infinities).
#[inline(always)]
pub fn sin<S: Simd>(x: f32) -> f32 {
    let (r, quadrant) = reduce_by_half_pi::<S>(x);
    let (s, c) = sin_cos_polynomials::<S>(r);
    // sin(-0) is -0, which the polynomial's sum would make +0 (and 1 / sin(x) +inf instead of -inf).
    if x == 0.0 { x } else { by_quadrant(quadrant, s, c) }
}

/// cos(x), for |x| <= [`TRIG_VECTOR_LIMIT`] (and NaN for NaN and infinities).
#[inline(always)]
pub fn cos<S: Simd>(x: f32) -> f32 {
    let (r, quadrant) = reduce_by_half_pi::<S>(x);
    let (s, c) = sin_cos_polynomials::<S>(r);
    by_quadrant(quadrant.wrapping_add(1), s, c)
}

/// Below this magnitude `tanh` is its odd polynomial; from it on, `1 - 2 / (e^2|x| + 1)` (Cephes `tanhf`), where
/// the subtraction from 1 loses nothing that matters (the result is at least 0.55).
const TANH_POLYNOMIAL_BELOW: f32 = 0.625;

/// tanh(x), for every `x` (±1 past about ±9, where `e^2|x|` swamps the 1, and NaN for NaN). The standard library's
/// is a call, one element at a time: an expression calling it ran several times slower than one calling two of the
/// vectorised functions here (measured: docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so).
#[inline(always)]
pub fn tanh<S: Simd>(x: f32) -> f32 {
    let magnitude = x.abs();
    let z = x * x;
    let p = madd::<S>(-5.704_988_7e-3, z, 2.063_909e-2);
    let p = madd::<S>(p, z, -5.373_971_6e-2);
    let p = madd::<S>(p, z, 0.133_314_42);
    let p = madd::<S>(p, z, -0.333_332_8);
    let small = madd::<S>(p * z, x, x);
    // e^2|x| is +inf past 44.4, and 2 / inf is 0: the result is 1 with no test.
    let large = (1.0 - 2.0 / (exp::<S>(magnitude + magnitude) + 1.0)).copysign(x);
    // tanh(-0) is -0, which the polynomial's sum would make +0.
    if x == 0.0 {
        x
    } else if magnitude < TANH_POLYNOMIAL_BELOW {
        small
    } else {
        large
    }
}

/// e^x - 1 for |x| < 1, by its Taylor polynomial (to the x^11 term), where `e^x - 1` would cancel.
#[inline(always)]
fn expm1_polynomial<S: Simd>(x: f32) -> f32 {
    let p = madd::<S>(2.505_210_8e-8, x, 2.755_732e-7);
    let p = madd::<S>(p, x, 2.755_732e-6);
    let p = madd::<S>(p, x, 2.480_158_7e-5);
    let p = madd::<S>(p, x, 1.984_127e-4);
    let p = madd::<S>(p, x, 1.388_888_9e-3);
    let p = madd::<S>(p, x, 8.333_334e-3);
    let p = madd::<S>(p, x, 4.166_666_8e-2);
    let p = madd::<S>(p, x, 0.166_666_67);
    let p = madd::<S>(p, x, 0.5);
    madd::<S>(x * x, p, x)
}

/// e^x - 1: the Taylor polynomial below 1 in magnitude, `exp(x) - 1` from there (both computed, one chosen). -0
/// stays -0 and NaN NaN.
#[inline(always)]
pub fn expm1<S: Simd>(x: f32) -> f32 {
    let small = expm1_polynomial::<S>(x);
    let large = exp::<S>(x) - 1.0;
    if x == 0.0 {
        x
    } else if x.abs() < 1.0 {
        small
    } else {
        large
    }
}

/// Past this magnitude `sinh` and `cosh` are `e^(|x|/2)² / 2`: `e^|x|` alone overflows before they do.
const HYPERBOLIC_HALVED_FROM: f32 = 9.0;

/// sinh(x): the odd Taylor polynomial below 1 in magnitude (where `(e^x - e^-x) / 2` would cancel), then
/// `(e^|x| - e^-|x|) / 2`, then `e^(|x|/2)² / 2`, with `x`'s sign.
#[inline(always)]
pub fn sinh<S: Simd>(x: f32) -> f32 {
    let a = x.abs();
    let z = a * a;
    let p = madd::<S>(1.605_904_4e-10, z, 2.505_210_8e-8);
    let p = madd::<S>(p, z, 2.755_732e-6);
    let p = madd::<S>(p, z, 1.984_127e-4);
    let p = madd::<S>(p, z, 8.333_334e-3);
    let p = madd::<S>(p, z, 0.166_666_67);
    let small = madd::<S>(a * z, p, a);
    let middle = 0.5 * (exp::<S>(a) - exp::<S>(-a));
    let half = exp::<S>(0.5 * a);
    let large = (0.5 * half) * half;
    let r = if a < 1.0 {
        small
    } else if a < HYPERBOLIC_HALVED_FROM {
        middle
    } else {
        large
    };
    // A NaN fails every comparison above and lands on `large`, a NaN.
    r.copysign(x)
}

/// cosh(x): `(e^|x| + e^-|x|) / 2`, then `e^(|x|/2)² / 2`.
#[inline(always)]
pub fn cosh<S: Simd>(x: f32) -> f32 {
    let a = x.abs();
    let middle = 0.5 * (exp::<S>(a) + exp::<S>(-a));
    let half = exp::<S>(0.5 * a);
    let large = (0.5 * half) * half;
    if a < HYPERBOLIC_HALVED_FROM { middle } else { large }
}

/// erf(x), as Norbert Juffa's `erff` (about 1 ulp): an odd polynomial below 0.9277 in magnitude, `1 - e^p(|x|)` with
/// `x`'s sign above (both computed, one chosen); ±1 past 4.
#[inline(always)]
pub fn erf<S: Simd>(x: f32) -> f32 {
    let t = x.abs();
    let s = x * x;
    let r = madd::<S>(-5.967_617e-4, s, 4.991_194_2e-3);
    let r = madd::<S>(r, s, -2.676_813_5e-2);
    let r = madd::<S>(r, s, 0.112_819_925);
    let r = madd::<S>(r, s, -0.376_125_34);
    let r = madd::<S>(r, s, 0.128_379_17);
    let small = madd::<S>(r, x, x);
    let t4 = if t < 4.0 { t } else { 4.0 };
    let s4 = t4 * t4;
    let r = madd::<S>(-1.728_534_7e-5, t4, 3.831_971_3e-4);
    let u = madd::<S>(-3.883_964_4e-3, t4, 2.425_462_2e-2);
    let r = madd::<S>(r, s4, u);
    let r = madd::<S>(r, t4, -0.106_777_88);
    let r = madd::<S>(r, t4, -0.634_846_7);
    let r = madd::<S>(r, t4, -0.128_717_51);
    let r = madd::<S>(r, t4, -t4);
    let large = if t < 4.0 { 1.0 - exp::<S>(r) } else { 1.0 };
    // A NaN fails the comparison and takes the polynomial, which passes it on.
    if t > 0.927_734_4 { large.copysign(x) } else { small }
}

/// sqrt(1/2): a mantissa in [0.5, 1) below it is doubled, so that the polynomial's argument lies in [-0.29, 0.41].
const SQRT_HALF: f32 = std::f32::consts::FRAC_1_SQRT_2;

/// ln(x) (Cephes `logf`): `x = m 2^e` with `m` in [sqrt(1/2), sqrt(2)), `ln m` by its polynomial in `m - 1`, and
/// `e ln 2` added in two parts; subnormal arguments are scaled by 2^23 first. NaN below 0 (and for NaN), -inf at 0,
/// +inf at +inf.
#[inline(always)]
pub fn log<S: Simd>(x: f32) -> f32 {
    let subnormal = x < f32::MIN_POSITIVE;
    let scaled = if subnormal { x * 8_388_608.0 } else { x };
    let bits = scaled.to_bits() as i32;
    let exponent = ((bits >> 23) & 0xff) - 126 - if subnormal { 23 } else { 0 };
    // The mantissa in [0.5, 1), doubled below sqrt(1/2).
    let m = f32::from_bits(((bits & 0x007f_ffff) | 0x3f00_0000) as u32);
    let below = m < SQRT_HALF;
    let e = (exponent - i32::from(below)) as f32;
    let r = if below { m + m - 1.0 } else { m - 1.0 };
    let z = r * r;
    let p = madd::<S>(7.037_683_6e-2, r, -1.151_461e-1);
    let p = madd::<S>(p, r, 1.167_699_9e-1);
    let p = madd::<S>(p, r, -1.242_014_1e-1);
    let p = madd::<S>(p, r, 1.424_932_3e-1);
    let p = madd::<S>(p, r, -1.666_805_8e-1);
    let p = madd::<S>(p, r, 2.000_071_4e-1);
    let p = madd::<S>(p, r, -2.499_999_4e-1);
    let p = madd::<S>(p, r, 3.333_333e-1);
    let y = madd::<S>(p * r, z, -2.121_944_4e-4 * e);
    let y = madd::<S>(-0.5, z, y);
    let result = madd::<S>(e, 0.693_359_4, r + y);
    if x.is_nan() || x < 0.0 {
        f32::NAN
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        x
    } else {
        result
    }
}

/// tan(pi/8) and tan(3pi/8): `atan`'s reduction takes `|x|` above the first to `(|x| - 1) / (|x| + 1)` (and adds
/// pi/4), above the second to `-1 / |x|` (and adds pi/2).
const TAN_PI_8: f32 = 0.414_213_57;
const TAN_3PI_8: f32 = 2.414_213_6;

/// atan(x) (Cephes `atanf`): the reduction above, one division for either branch, and an odd polynomial; ±pi/2 at
/// ±inf, NaN for NaN, and the sign of a zero kept.
#[inline(always)]
pub fn atan<S: Simd>(x: f32) -> f32 {
    let a = x.abs();
    let (big, middle) = (a > TAN_3PI_8, a > TAN_PI_8);
    let numerator = if big {
        -1.0
    } else if middle {
        a - 1.0
    } else {
        a
    };
    let denominator = if big {
        a
    } else if middle {
        a + 1.0
    } else {
        1.0
    };
    let t = numerator / denominator;
    // pi/2 or pi/4 in two parts: the float nearest it, and what that float misses (added to the small part first).
    let (offset, offset_low) = if big {
        (std::f32::consts::FRAC_PI_2, -4.371_139e-8)
    } else if middle {
        (std::f32::consts::FRAC_PI_4, -2.185_569_5e-8)
    } else {
        (0.0, 0.0)
    };
    let z = t * t;
    let p = madd::<S>(8.053_744_5e-2, z, -1.387_768_6e-1);
    let p = madd::<S>(p, z, 1.997_771_1e-1);
    let p = madd::<S>(p, z, -3.333_295e-1);
    let result = offset + (madd::<S>(p * z, t, t) + offset_low);
    // The sign of x, and of a zero (a NaN stays NaN through the arithmetic).
    result.copysign(x)
}

/// Whether the vectorised `sin` and `cos` leave `x` to the standard library: an argument beyond
/// [`TRIG_VECTOR_LIMIT`], infinities included (whose `sin` is NaN either way; not asking saves two instructions an
/// element).
#[inline(always)]
pub fn beyond_vector_limit(x: f32) -> bool {
    x.abs() > TRIG_VECTOR_LIMIT
}

/// `out[i] = vectorised(argument(source[i]))`, `vectorised` the vectorised `sin` or `cos`, with the elements whose
/// argument lies beyond [`TRIG_VECTOR_LIMIT`] recomputed by the standard library's `exact`. The loop notes whether
/// any argument does as it goes (it still vectorises), and only then is the block gone over again: the compiler takes
/// the standard library's `sin` for free of side effects and would otherwise call it for every element and keep the
/// few results it needs. `argument` is the identity, or the cheap operation of a node computed inside this loop.
#[inline(always)]
pub fn trig_map(
    out: &mut [f32],
    source: &[f32],
    argument: impl Fn(f32) -> f32,
    vectorised: impl Fn(f32) -> f32,
    exact: fn(f32) -> f32,
) {
    let mut any_beyond = false;
    for (o, v) in out.iter_mut().zip(source) {
        let x = argument(*v);
        *o = vectorised(x);
        any_beyond |= beyond_vector_limit(x);
    }
    if any_beyond {
        for (o, v) in out.iter_mut().zip(source) {
            let x = argument(*v);
            if beyond_vector_limit(x) {
                *o = exact(x);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::Portable;

    /// Runs the generic check `$check` with a multiply and an add (the portable level) and with fused
    /// multiply-adds (a level that has them; called here without its instructions enabled, `mul_add` computes the
    /// same rounding in software).
    macro_rules! for_each_fusion {
        ($check:ident) => {{
            $check::<Portable>();
            #[cfg(target_arch = "x86_64")]
            $check::<crate::simd::x86::Avx2Fma>();
            #[cfg(target_arch = "aarch64")]
            $check::<crate::simd::arm::Neon>();
        }};
    }

    /// The distance from `got` to `want` in units of least precision of `want` as an `f32` (of the smallest normal
    /// below it).
    fn ulps(got: f32, want: f64) -> f64 {
        (f64::from(got) - want).abs() / gpuworthy_core::expr::ulp(want)
    }

    /// Arguments spread over `range`: a dense grid and the bit patterns in between.
    fn arguments(low: f32, high: f32, count: usize) -> impl Iterator<Item = f32> {
        (0..=count).map(move |i| low + (high - low) * (i as f32 / count as f32))
    }

    /// The largest error of `ours` against `exact` over `arguments`, in units of least precision, leaving out the
    /// arguments where it is below `absolute` (near a zero of the function, where an absolute bound is the measure).
    fn worst_ulps(
        ours: impl Fn(f32) -> f32,
        exact: impl Fn(f64) -> f64,
        absolute: f64,
        arguments: impl Iterator<Item = f32>,
    ) -> f64 {
        arguments
            .filter_map(|x| {
                let (got, want) = (ours(x), exact(f64::from(x)));
                ((f64::from(got) - want).abs() > absolute).then(|| ulps(got, want))
            })
            .fold(0.0, f64::max)
    }

    /// `count` positive floats evenly spaced in their bit patterns, from the smallest subnormal to the largest finite
    /// float: every binade, each about as densely.
    fn every_binade(count: u32) -> impl Iterator<Item = f32> {
        (0..count).map(move |i| f32::from_bits(1 + i * (0x7f7f_ffff / count)))
    }

    #[test]
    fn exp_is_within_two_ulps_over_its_normal_range_and_exact_at_the_edges() {
        for_each_fusion!(exp_within_bounds);
    }

    fn exp_within_bounds<S: Simd>() {
        let exp = exp::<S>;
        let worst = worst_ulps(exp, f64::exp, 0.0, arguments(-87.0, 88.7, 2_000_000));
        assert!(worst <= 2.0, "exp: worst {worst} ulps");
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(89.0), f32::INFINITY);
        assert_eq!(exp(-104.0), 0.0);
        assert!(exp(f32::NAN).is_nan());
        // Subnormal results: within one unit of the smallest subnormal.
        for x in arguments(-103.0, -87.5, 10_000) {
            let want = f64::from(x).exp();
            assert!((f64::from(exp(x)) - want).abs() <= want * 4e-7 + 1.5e-45, "exp({x})");
        }
    }

    #[test]
    fn exp2_is_within_two_ulps_and_exact_at_integers() {
        for_each_fusion!(exp2_within_bounds);
    }

    fn exp2_within_bounds<S: Simd>() {
        let exp2 = exp2::<S>;
        let worst = worst_ulps(exp2, f64::exp2, 0.0, arguments(-125.9, 127.9, 2_000_000));
        assert!(worst <= 2.0, "exp2: worst {worst} ulps");
        for k in -126..=127 {
            assert_eq!(exp2(k as f32), 2f32.powi(k), "2^{k}");
        }
        assert_eq!(exp2(128.0), f32::INFINITY);
        assert_eq!(exp2(-150.0), 0.0);
        assert!(exp2(f32::NAN).is_nan());
    }

    #[test]
    fn sin_and_cos_are_within_two_ulps_or_a_tiny_absolute_error_up_to_the_vector_limit() {
        for_each_fusion!(sin_and_cos_within_bounds);
    }

    fn sin_and_cos_within_bounds<S: Simd>() {
        let (sin, cos) = (sin::<S>, cos::<S>);
        for (name, ours, exact) in [("sin", sin as fn(f32) -> f32, f64::sin as fn(f64) -> f64), ("cos", cos, f64::cos)]
        {
            // Near a zero of the function, an absolute bound (far below the checks' 2^-20).
            let arguments =
                arguments(-TRIG_VECTOR_LIMIT, TRIG_VECTOR_LIMIT, 4_000_000).chain(arguments(-4.0, 4.0, 1_000_000));
            let worst = worst_ulps(ours, exact, 2f64.powi(-26), arguments);
            assert!(worst <= 2.0, "{name}: worst {worst} ulps");
            assert!(ours(f32::NAN).is_nan() && ours(f32::INFINITY).is_nan() && ours(f32::NEG_INFINITY).is_nan());
        }
        assert_eq!(sin(0.0), 0.0);
        assert!(sin(-0.0).is_sign_negative());
        assert_eq!(cos(0.0), 1.0);
    }

    #[test]
    fn tanh_is_within_two_ulps_and_exact_at_the_edges() {
        for_each_fusion!(tanh_within_bounds);
    }

    fn tanh_within_bounds<S: Simd>() {
        let tanh = tanh::<S>;
        let arguments = arguments(-12.0, 12.0, 2_000_000)
            .chain(arguments(-1.0, 1.0, 1_000_000))
            .chain(arguments(-1e-3, 1e-3, 10_000));
        let worst = worst_ulps(tanh, f64::tanh, 0.0, arguments);
        assert!(worst <= 2.0, "tanh: worst {worst} ulps");
        assert_eq!(tanh(0.0), 0.0);
        assert!(tanh(-0.0).is_sign_negative());
        assert_eq!((tanh(f32::INFINITY), tanh(f32::NEG_INFINITY)), (1.0, -1.0));
        assert_eq!((tanh(100.0), tanh(-100.0)), (1.0, -1.0));
        assert!(tanh(f32::NAN).is_nan());
        // Subnormal arguments: tanh(x) rounds to x.
        let tiny = f32::from_bits(3);
        assert_eq!((tanh(tiny), tanh(-tiny)), (tiny, -tiny));
    }

    #[test]
    fn log_is_within_two_ulps_from_the_subnormals_to_the_largest_float() {
        for_each_fusion!(log_within_bounds);
    }

    fn log_within_bounds<S: Simd>() {
        let log = log::<S>;
        // Every binade, densely around 1 (where ln is near 0 and a relative error shows first); at 1 and around it, an
        // absolute bound (far below the checks' 2^-21).
        let arguments =
            every_binade(2_000_000).chain(arguments(0.5, 2.0, 1_000_000)).chain(arguments(0.999, 1.001, 100_000));
        let worst = worst_ulps(log, f64::ln, 2f64.powi(-30), arguments);
        assert!(worst <= 2.0, "log: worst {worst} ulps");
        assert_eq!(log(1.0), 0.0);
        assert_eq!((log(0.0), log(-0.0)), (f32::NEG_INFINITY, f32::NEG_INFINITY));
        assert_eq!(log(f32::INFINITY), f32::INFINITY);
        assert!(log(-1.0).is_nan() && log(f32::NEG_INFINITY).is_nan() && log(f32::NAN).is_nan());
        assert!((f64::from(log(f32::from_bits(1))) - f64::from(f32::from_bits(1)).ln()).abs() < 1e-5);
    }

    #[test]
    fn atan_is_within_two_and_a_half_ulps_and_exact_at_the_edges() {
        for_each_fusion!(atan_within_bounds);
    }

    fn atan_within_bounds<S: Simd>() {
        let atan = atan::<S>;
        let arguments = every_binade(1_000_000).flat_map(|x| [x, -x]).chain(arguments(-4.0, 4.0, 2_000_000));
        let worst = worst_ulps(atan, f64::atan, 0.0, arguments);
        assert!(worst <= 2.5, "atan: worst {worst} ulps");
        assert_eq!(atan(0.0), 0.0);
        assert!(atan(-0.0).is_sign_negative());
        assert_eq!(atan(f32::INFINITY), std::f32::consts::FRAC_PI_2);
        assert_eq!(atan(f32::NEG_INFINITY), -std::f32::consts::FRAC_PI_2);
        assert!(atan(f32::NAN).is_nan());
    }

    #[test]
    fn large_arguments_are_fixed_up_by_the_standard_library() {
        let x = [1.0e6f32, -3.0e9, 0.5, f32::INFINITY, 8193.0];
        let mut out = vec![0.0; x.len()];
        trig_map(&mut out, &x, |x| x, sin::<Portable>, f32::sin);
        for (o, x) in out.iter().zip(&x) {
            if x.is_finite() {
                assert!((f64::from(*o) - f64::from(*x).sin()).abs() < 1e-6, "sin({x}) = {o}");
            } else {
                assert!(o.is_nan());
            }
        }
    }

    #[test]
    fn expm1_and_erf_are_within_two_ulps_sinh_and_cosh_three_and_all_exact_at_the_edges() {
        for_each_fusion!(expm1_sinh_cosh_erf_within_bounds);
    }

    fn expm1_sinh_cosh_erf_within_bounds<S: Simd>() {
        let dense = || {
            arguments(-90.0, 90.0, 1_000_000)
                .chain(arguments(-2.0, 2.0, 1_000_000))
                .chain(arguments(-1e-3, 1e-3, 10_000))
                .chain(every_binade(100_000).flat_map(|x| [x, -x]))
        };
        // Past the largest f32 the exact value is an infinity, as ours is (inf - inf is NaN: not counted).
        let overflowing = |f: fn(f64) -> f64| {
            move |x: f64| {
                let v = f(x);
                if (v as f32).is_infinite() { v.signum() * f64::INFINITY } else { v }
            }
        };
        let expm1 = expm1::<S>;
        let worst = worst_ulps(expm1, overflowing(f64::exp_m1), 0.0, dense());
        assert!(worst <= 2.0, "expm1: worst {worst} ulps");
        let worst = worst_ulps(sinh::<S>, overflowing(f64::sinh), 0.0, dense());
        // sinh and cosh add exp's two ulps to each other's, or square them past 9: three.
        assert!(worst <= 3.0, "sinh: worst {worst} ulps");
        let worst = worst_ulps(cosh::<S>, overflowing(f64::cosh), 0.0, dense());
        assert!(worst <= 3.0, "cosh: worst {worst} ulps");
        let worst = worst_ulps(erf::<S>, gpuworthy_core::expr::erf, 0.0, dense());
        assert!(worst <= 2.0, "erf: worst {worst} ulps");
        for f in [expm1 as fn(f32) -> f32, sinh::<S>, erf::<S>] {
            assert!(f(-0.0).is_sign_negative() && f(0.0) == 0.0 && f(f32::NAN).is_nan());
        }
        assert_eq!((expm1(f32::INFINITY), expm1(f32::NEG_INFINITY)), (f32::INFINITY, -1.0));
        assert_eq!((sinh::<S>(f32::INFINITY), sinh::<S>(f32::NEG_INFINITY)), (f32::INFINITY, f32::NEG_INFINITY));
        assert_eq!((cosh::<S>(f32::NEG_INFINITY), cosh::<S>(0.0)), (f32::INFINITY, 1.0));
        assert!(cosh::<S>(f32::NAN).is_nan());
        assert_eq!((erf::<S>(f32::INFINITY), erf::<S>(-5.0)), (1.0, -1.0));
    }
}
