//! Expressions on wgpu: WGSL generated from the program's graph (never from its text: names become `in0`, `out1`,
//! `v7`, numbers their exact bits), validated by naga through [`WgpuBackend::custom_pipeline`], and dispatched in
//! chunks of at most one storage binding.
//!
//! WGSL leaves cases undefined that the language defines (`pow` of a negative base, `min` of a NaN, `sqrt` and `log`
//! outside their domains, division by zero, `sign` of a NaN), and a WGSL implementation may assume no NaN or infinity
//! occurs, so the generated code spells each case out with bit tests rather than `x != x`. Those guards cost a
//! branch per operation; an elementwise kernel therefore computes its four elements first with WGSL's own operators
//! on `vec4`s, adds the magnitudes of the values that could hide a special one into one probe (`tested_values`,
//! `vec4_statements`), and takes the guarded path only for a `vec4` where a NaN, an infinity or a division by zero
//! appeared: the guarded path for every element made the Horner polynomial three times slower than the copy peak it
//! now reaches (`docs/results/nvidia-h200/README.md`, "Why the code is shaped so"). Which values the probe needs is
//! worked out from each value's range given its operands' (`finite_ranges`): a value that cannot be a NaN or an
//! infinity while the tested ones are finite needs no test, and on 16-bit arrays, where each test is an instruction
//! an element against half the bytes, that took `y = exp(-x*x) * sin(3*x)` on f16 arrays to the copy's time (the
//! figures are in `docs/results/nvidia-h200/half/`). In a reduction every workgroup
//! combines its threads' grid-stride terms in shared memory and writes one partial; then one workgroup combines the
//! partials and applies the post-map: the last to finish, where a storage barrier orders memory for the whole device
//! (Vulkan), or a second dispatch elsewhere ([`ReductionFinish`]).
//!
//! Arrays of 16-bit elements (`--dtype f16|bf16`) are bound as two words per four elements, widened to `f32` as they
//! are read and rounded to nearest even as they are written (`Stored`). WGSL's `f16` type needs the `shader-f16`
//! feature, so it is not used; its `pack2x16float` may round either way, so f16 is rounded by it only where a probe
//! found that this adapter's rounds to nearest even ([`F16Narrowing`]), and in integer arithmetic elsewhere (and
//! always for bf16, which WGSL has no conversion for).
//!
//! The source is written by the shared lowering ([`codegen`]) in two dialects of WGSL: `Guarded` and `Vec4`.
//! Where Vulkan's bound on a builtin is too loose for the language, a helper computes the function itself: `atan`
//! (Cephes), `erf` (Juffa's `erff`), `expm1`, `sinh` and `cosh` (Taylor polynomials where `exp` would cancel), and
//! the logarithm `pow` and `log1p` take (Cephes' polynomial: Vulkan lets `log2` be 2^-21 off near 1).

use std::fmt::Write;

use gpuworthy_core::expr::codegen::{self, Dialect};
use gpuworthy_core::expr::{
    Arith, Compare, ExprInput, ExprParams, Expression, Func, Logic, Node, Outputs, Program, Reduce, Type,
};
use gpuworthy_core::{Backend, BackendKind, Dtype, Error, Implements, Result, Workload};
use wgpu::util::DeviceExt;

use crate::WgpuBackend;
use crate::custom::CustomPipeline;
use crate::workloads::grid_1d;

/// The largest magnitude the helpers' exact reduction of an angle reaches (`reduce_angle` in [`HELPERS`]), the
/// function table's reach for `sin` and `cos` on Vulkan.
const TRIG_REACH: f64 = 262_144.0;

/// 2^110 as a WGSL `f32`: a magnitude of 2^18 ([`TRIG_REACH`]) or more times it is past `f32::MAX`, one below it is
/// not, so an argument of `sin` or `cos` added into [`vec4_statements`]' probe so scaled overflows it exactly when it
/// is past the exact reduction's reach (or when finite terms add past `f32::MAX`, which only sends the `vec4` to the
/// guarded path, which is exact). A power of two, the product is exact.
const FAR_SCALE: &str = "bitcast<f32>(0x76800000u)";

/// Invocations per workgroup of the generated shaders.
const WORKGROUP: u32 = 256;

/// The most workgroups a reduction's first pass uses per chunk: each thread's grid-stride loop then runs
/// `chunk / (WORKGROUP · REDUCE_GROUPS)` trips, far below llvmpipe's loop limit for any binding.
const REDUCE_GROUPS: u32 = 1024;

/// How a reduction combines its workgroups' partials into one value.
///
/// A second dispatch of one workgroup is the portable way, but a dispatch costs a few microseconds of its own: on the
/// H200 a 16-bit `sum(x*x)` at 1024 elements took 8.14 µs where a map of the same bytes took 4.68
/// (`docs/results/nvidia-h200/half/reduction-floor.txt`), and at 2^26 elements that difference kept the reduction
/// below the copy. The last workgroup to finish can combine the partials itself, as CUDA's reductions do, where a
/// storage barrier orders memory for the whole device and the partials' atomic loads and stores reach it. WGSL itself
/// promises no more than the workgroup, so the one-pass form is chosen by the backend, never assumed: naga writes
/// `storageBarrier()` for Vulkan as SPIR-V's `OpControlBarrier` with `Device` memory scope and the atomics as
/// device-scoped `OpAtomicLoad` and `OpAtomicStore`, which the Vulkan memory model orders across workgroups. For DX12
/// it writes the barrier as `DeviceMemoryBarrierWithGroupSync` but the atomic loads and stores as plain loads and
/// stores of a buffer that is not `globallycoherent`, which another workgroup may read from a stale cache; for Metal
/// it writes a threadgroup barrier, and for GL a buffer barrier. Those keep the second dispatch.
///
/// On the H200 the last workgroup's chain costs about 3 µs: about 1.2 µs of fences and counter, the rest the reading
/// and combining of the partials; a finish by one subgroup, with no workgroup barrier, was slower
/// (`docs/results/nvidia-h200/half/README.md`, tuning 15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReductionFinish {
    /// A second dispatch of one workgroup reads every partial (`expr_partials`, then `expr_finish`).
    SecondPass,
    /// One dispatch per chunk (`expr_reduce`); in the last, the last workgroup to finish combines the partials.
    LastWorkgroup,
    /// One dispatch per chunk (`expr_reduce`) whose workgroups each add their total to the result with a
    /// floating-point atomic, in the order they finish: no workgroup waits for the others, and the result's last bits
    /// may differ between runs. Only for a plain `sum`, and only where asked for ([`crate::SumOrder::Any`]).
    ///
    /// With no last workgroup, none knows when to zero the result for the next launch: the result has two slots,
    /// and a launch adds into one while its first workgroup zeroes the other, which the next launch adds into. The
    /// launches of one resident alternate, and a download reads the last launch's slot.
    FloatAtomic,
}

impl ReductionFinish {
    /// Whether `program`'s reduction may be finished with float atomics: a `sum` with no function applied after it.
    pub fn float_atomic_applies(program: &Program) -> bool {
        program
            .reduction
            .as_ref()
            .is_some_and(|r| r.kind == Reduce::Sum && matches!(program.nodes[r.post], Node::Reduced))
    }

    /// The form for an adapter on `backend`: one pass on Vulkan, where the barrier and the atomics reach the whole
    /// device.
    pub fn for_backend(backend: wgpu::Backend) -> Self {
        match backend {
            wgpu::Backend::Vulkan => ReductionFinish::LastWorkgroup,
            _ => ReductionFinish::SecondPass,
        }
    }
}

/// The `vec4` loads of each input a reduction's thread issues per trip of its loop before folding any, as the
/// built-in `sum` does: a reduction does a few operations per 16 bytes, so the memory system is the limit, and it
/// reaches its bandwidth only with many loads in flight.
const LOADS_IN_FLIGHT: u32 = 4;

/// The helpers every generated shader carries: the language's semantics where WGSL's builtins leave them open.
const HELPERS: &str = r#"
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
fn nan_f() -> f32 { return bitcast<f32>(0x7fc00000u + params.zero); }
fn inf_f() -> f32 { return bitcast<f32>(0x7f800000u + params.zero); }
fn with_sign_of(x: f32, s: f32) -> f32 { return bitcast<f32>((bitcast<u32>(x) & 0x7fffffffu) | (bitcast<u32>(s) & 0x80000000u)); }
fn fmin(a: f32, b: f32) -> f32 { if (is_nan(a)) { return b; } if (is_nan(b)) { return a; } return min(a, b); }
fn fmax(a: f32, b: f32) -> f32 { if (is_nan(a)) { return b; } if (is_nan(b)) { return a; } return max(a, b); }
// IEEE arithmetic with its special values decided by bit tests: a WGSL compiler may assume no NaN or infinity and
// fold `x * 0` to 0 or `y - y` to 0, so every case with a NaN, an infinity or a zero times an infinity is settled
// before the hardware's result is used.
fn is_zero(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0u; }
fn fneg(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) ^ 0x80000000u); }
fn sign_xor(a: f32, b: f32) -> f32 { return bitcast<f32>((bitcast<u32>(a) ^ bitcast<u32>(b)) & 0x80000000u); }
// Whether either operand is a NaN or an infinity: one test on the larger of their exponents, so that the common case
// (both finite) costs a `max`, a compare and a branch no invocation takes before the hardware's operation.
fn any_special(a: f32, b: f32) -> bool {
    return max(bitcast<u32>(a) & 0x7f800000u, bitcast<u32>(b) & 0x7f800000u) == 0x7f800000u;
}
fn gw_subgroup_sum(nan: bool, positive_inf: bool, negative_inf: bool, total: f32) -> f32 {
    if (nan || (positive_inf && negative_inf)) { return nan_f(); }
    if (positive_inf) { return inf_f(); }
    if (negative_inf) { return bitcast<f32>(0xff800000u + params.zero); }
    return total;
}
fn fadd(a: f32, b: f32) -> f32 {
    if (any_special(a, b)) {
        if (is_nan(a) || is_nan(b)) { return nan_f(); }
        if (is_inf(a)) {
            if (is_inf(b) && bitcast<u32>(a) != bitcast<u32>(b)) { return nan_f(); }
            return a;
        }
        return b;
    }
    return a + b;
}
fn fsub(a: f32, b: f32) -> f32 { return fadd(a, fneg(b)); }
fn fmul(a: f32, b: f32) -> f32 {
    if (any_special(a, b)) {
        if (is_nan(a) || is_nan(b)) { return nan_f(); }
        if (is_zero(a) || is_zero(b)) { return nan_f(); }
        return with_sign_of(inf_f(), sign_xor(a, b));
    }
    return a * b;
}
fn fdiv(a: f32, b: f32) -> f32 {
    if (any_special(a, b) || is_zero(a) || is_zero(b)) {
        if (is_nan(a) || is_nan(b)) { return nan_f(); }
        if ((is_zero(a) && is_zero(b)) || (is_inf(a) && is_inf(b))) { return nan_f(); }
        if (is_inf(a) || is_zero(b)) { return with_sign_of(inf_f(), sign_xor(a, b)); }
        return sign_xor(a, b);
    }
    return div_finite(a, b);
}
// a / b of finite operands, b not zero. A driver may divide as a * (1 / b), and past 2^126 1 / b is subnormal and
// flushed: there b is divided by 4 in its exponent bits and a by a run-time 4, so that no compiler's algebra can
// cancel the two scalings back into the division it started from.
fn div_finite(a: f32, b: f32) -> f32 {
    if (abs(b) >= 8.507059173023462e37) {
        return (a * bitcast<f32>(0x3e800000u + params.zero)) / bitcast<f32>(bitcast<u32>(b) - 0x01000000u);
    }
    return a / b;
}
fn ffma(a: f32, b: f32, c: f32) -> f32 {
    if (any_special(a, b) || any_special(c, c)) { return fadd(fmul(a, b), c); }
    return fma(a, b, c);
}
// The angle reduced to [-pi, pi] before a driver's sin, cos or tan, which Vulkan bounds only there (a driver may
// reduce by one f32 multiplication, off by |x| 2^-23): Cody and Waite's reduction, 2 pi as three constants of which
// the first has 8 significant bits and the second 12, so that k times the first is exact for k < 2^16, that is up to
// |x| = 2^18 (the function table's reach), and the rest is off by less than an ulp of the result. Past the reach the
// result is not determined, but it stays in [-pi, pi] (the turns' fraction, however inexact, times the `f32` just
// below 2 pi), so that sin and cos of any finite argument are in [-1, 1], which lets the common path leave their
// results untested (`finite_ranges`).
fn far_angle(x: f32) -> f32 { return 6.283185 * (fract(x * 0.15915493667125702 + 0.5) - 0.5); }
fn reduce_angle(x: f32) -> f32 {
    if (abs(x) > 262144.0) { return far_angle(x); }
    let k = round(x * 0.15915493667125702);
    return ((x - k * 6.28125) - k * 0.0019350051879882812) - k * 3.019916050561733e-7;
}
fn fsin(x: f32) -> f32 { if (is_nan(x) || is_inf(x)) { return nan_f(); } if (is_zero(x)) { return x; } return sin(reduce_angle(x)); }
fn fcos(x: f32) -> f32 { if (is_nan(x) || is_inf(x)) { return nan_f(); } return cos(reduce_angle(x)); }
fn ftan(x: f32) -> f32 { if (is_nan(x) || is_inf(x)) { return nan_f(); } if (is_zero(x)) { return x; } return tan(reduce_angle(x)); }
fn fround(x: f32) -> f32 { if (is_nan(x) || is_inf(x)) { return x; } return round(x); }
fn ffloor(x: f32) -> f32 { if (is_nan(x) || is_inf(x)) { return x; } return floor(x); }
fn fceil(x: f32) -> f32 { if (is_nan(x) || is_inf(x)) { return x; } return ceil(x); }
fn ftrunc(x: f32) -> f32 { if (is_nan(x) || is_inf(x)) { return x; } return trunc(x); }
fn fabs(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) & 0x7fffffffu); }
// Subnormal arguments are told and read by their bits, never by arithmetic: a driver may flush them to zero in any
// operation (a comparison included), or mistake their exponent. |x| is then its mantissa, an integer below 2^23 that
// converts exactly, times 2^-149.
fn is_subnormal(x: f32) -> bool { let b = bitcast<u32>(x) & 0x7fffffffu; return b != 0u && b < 0x00800000u; }
fn subnormal_mantissa(x: f32) -> f32 { return f32(bitcast<u32>(x) & 0x007fffffu); }
fn is_negative(x: f32) -> bool { return (bitcast<u32>(x) & 0x80000000u) != 0u && !is_zero(x); }
fn log2_any(x: f32) -> f32 { if (is_subnormal(x)) { return log2(subnormal_mantissa(x)) - 149.0; } return log2(x); }
fn fsqrt(x: f32) -> f32 {
    if (is_nan(x) || is_negative(x)) { return nan_f(); }
    if (is_inf(x) || is_zero(x)) { return x; }
    if (is_subnormal(x)) { return sqrt(2.0 * subnormal_mantissa(x)) * 2.6469779601696886e-23; }
    return sqrt(x);
}
fn flog(x: f32) -> f32 { if (is_nan(x) || is_negative(x)) { return nan_f(); } if (is_zero(x)) { return -inf_f(); } if (is_inf(x)) { return x; } return log2_any(x) * 0.6931471805599453; }
fn flog2(x: f32) -> f32 { if (is_nan(x) || is_negative(x)) { return nan_f(); } if (is_zero(x)) { return -inf_f(); } if (is_inf(x)) { return x; } return log2_any(x); }
// atan as Cephes' atanf (about 2 ulp): Vulkan lets a driver's atan be 4096 ulp off.
fn fatan(a: f32) -> f32 {
    if (is_nan(a)) { return a; }
    let negative = a < 0.0;
    var x = abs(a);
    var base = 0.0;
    if (x > 2.414213562373095) { base = 1.5707963267948966; x = -1.0 / x; }
    else if (x > 0.4142135623730950) { base = 0.7853981633974483; x = (x - 1.0) / (x + 1.0); }
    let z = x * x;
    let r = base + (((((0.0805374449538 * z - 0.138776856032) * z + 0.199777106478) * z - 0.333329491539) * z) * x + x);
    return select(r, -r, negative);
}
fn fatan2(y: f32, x: f32) -> f32 {
    if (is_nan(x) || is_nan(y)) { return nan_f(); }
    let negative_x = (bitcast<u32>(x) & 0x80000000u) != 0u;
    if (y == 0.0) { return with_sign_of(select(0.0, 3.141592653589793, negative_x), y); }
    if (is_inf(x)) {
        if (is_inf(y)) { return with_sign_of(select(0.7853981633974483, 2.356194490192345, negative_x), y); }
        return with_sign_of(select(0.0, 3.141592653589793, negative_x), y);
    }
    if (is_zero(x) || is_inf(y)) { return with_sign_of(1.5707963267948966, y); }
    var r = fatan(div_finite(y, x));
    if (negative_x) { r = r + with_sign_of(3.141592653589793, y); }
    return r;
}
fn fasin(x: f32) -> f32 { if (is_nan(x) || abs(x) > 1.0) { return nan_f(); } return fatan2(x, sqrt((1.0 - x) * (1.0 + x))); }
fn facos(x: f32) -> f32 { if (is_nan(x) || abs(x) > 1.0) { return nan_f(); } return fatan2(sqrt((1.0 - x) * (1.0 + x)), x); }
fn fexp(x: f32) -> f32 { if (is_nan(x)) { return x; } if (x > 88.8) { return inf_f(); } if (x < -104.0) { return 0.0; } return exp(x); }
fn fexp2(x: f32) -> f32 { if (is_nan(x)) { return x; } if (x >= 128.0) { return inf_f(); } if (x < -150.0) { return 0.0; } return exp2(x); }
fn ftanh(x: f32) -> f32 { if (is_nan(x)) { return x; } if (abs(x) > 10.0) { return sign(x); } return tanh(x); }
fn fsign(x: f32) -> f32 { if (is_nan(x) || x == 0.0) { return x; } return select(-1.0, 1.0, x > 0.0); }
fn fclamp(x: f32, lo: f32, hi: f32) -> f32 { return fmin(fmax(x, lo), hi); }
// log(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1], as Cephes' logf: f - f^2/2 + f^3 P(f), about 1 ulp.
fn log1p_reduced(f: f32) -> f32 {
    let z = f * f;
    var p = 7.0376836292e-2;
    p = p * f - 1.1514610310e-1;
    p = p * f + 1.1676998740e-1;
    p = p * f - 1.2420140846e-1;
    p = p * f + 1.4249322787e-1;
    p = p * f - 1.6668057665e-1;
    p = p * f + 2.0000714765e-1;
    p = p * f - 2.4999993993e-1;
    p = p * f + 3.3333331174e-1;
    return f + (f * z * p - 0.5 * z);
}
// A positive normal or subnormal x as m 2^e, m in [sqrt(1/2), sqrt(2)): (m - 1, e). Vulkan lets log2 be 2^-21 off
// near 1 (pow's exponent multiplies that), so pow and log1p take their logarithm from the polynomial above.
fn split_mantissa(x: f32) -> vec2<f32> {
    var v = x;
    var e = -127.0;
    if (is_subnormal(x)) { v = subnormal_mantissa(x); e = -276.0; }
    let bits = bitcast<u32>(v);
    var m = bitcast<f32>((bits & 0x007fffffu) | 0x3f800000u);
    e = e + f32((bits >> 23u) & 0xffu);
    if (m > 1.4142135623730951) { m = m * 0.5; e = e + 1.0; }
    return vec2<f32>(m - 1.0, e);
}
fn log2_precise(x: f32) -> f32 {
    let s = split_mantissa(x);
    return s.y + log1p_reduced(s.x) * 1.4426950408889634;
}
fn flog1p(x: f32) -> f32 {
    if (is_nan(x) || x < -1.0) { return nan_f(); }
    if (x == -1.0) { return -inf_f(); }
    if (is_inf(x)) { return x; }
    if (x > -0.2928932188134524 && x < 0.4142135623730951) { return log1p_reduced(x); }
    let s = split_mantissa(1.0 + x);
    return s.y * 0.693359375 + (log1p_reduced(s.x) + s.y * -2.12194440e-4);
}
// expm1 by its Taylor series below 1 in magnitude, where exp(x) - 1 would cancel; exp(x) - 1 above.
fn fexpm1(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    if (x > 88.8) { return inf_f(); }
    if (x < -18.0) { return -1.0; }
    if (abs(x) < 1.0) {
        var p = 2.505210838544172e-8;
        p = p * x + 2.755731922398589e-7;
        p = p * x + 2.755731922398589e-6;
        p = p * x + 2.48015873015873e-5;
        p = p * x + 1.984126984126984e-4;
        p = p * x + 1.388888888888889e-3;
        p = p * x + 8.333333333333333e-3;
        p = p * x + 4.166666666666666e-2;
        p = p * x + 1.666666666666667e-1;
        p = p * x + 0.5;
        return x + x * x * p;
    }
    return fexp(x) - 1.0;
}
// sinh by its Taylor series below 1 in magnitude, where (e^x - e^-x) / 2 would cancel; from exp above, through
// exp(|x| / 2) squared past 9, where e^x alone overflows before sinh does.
fn fsinh(x: f32) -> f32 {
    if (is_nan(x) || is_inf(x)) { return x; }
    let a = abs(x);
    var r: f32;
    if (a < 1.0) {
        let z = a * a;
        var p = 1.6059043836821613e-10;
        p = p * z + 2.505210838544172e-8;
        p = p * z + 2.755731922398589e-6;
        p = p * z + 1.984126984126984e-4;
        p = p * z + 8.333333333333333e-3;
        p = p * z + 1.666666666666667e-1;
        r = a + a * z * p;
    } else if (a < 9.0) {
        r = 0.5 * (fexp(a) - fexp(-a));
    } else {
        let h = fexp(0.5 * a);
        r = (0.5 * h) * h;
    }
    return with_sign_of(r, x);
}
fn fcosh(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    let a = abs(x);
    if (a < 9.0) { return 0.5 * (fexp(a) + fexp(-a)); }
    let h = fexp(0.5 * a);
    return (0.5 * h) * h;
}
// erf as Norbert Juffa's erff (about 1 ulp): an odd polynomial below 0.9277, 1 - exp(a polynomial) above.
fn ferf(a: f32) -> f32 {
    if (is_nan(a)) { return a; }
    let t = abs(a);
    if (t > 4.0) { return with_sign_of(1.0, a); }
    let s = a * a;
    if (t > 0.927734375) {
        var r = fma(-1.72853470e-5, t, 3.83197126e-4);
        let u = fma(-3.88396438e-3, t, 2.42546219e-2);
        r = fma(r, s, u);
        r = fma(r, t, -1.06777877e-1);
        r = fma(r, t, -6.34846687e-1);
        r = fma(r, t, -1.28717512e-1);
        r = fma(r, t, -t);
        return with_sign_of(1.0 - exp(r), a);
    }
    var r = -5.96761703e-4;
    r = fma(r, s, 4.99119423e-3);
    r = fma(r, s, -2.67681349e-2);
    r = fma(r, s, 1.12819925e-1);
    r = fma(r, s, -3.76125336e-1);
    r = fma(r, s, 1.28379166e-1);
    return fma(r, a, a);
}
fn fpow(x: f32, y: f32) -> f32 {
    // pow(x, 0) and pow(1, y) are 1 even for a NaN: decided on the bits, before any comparison of a NaN.
    if (is_zero(y) || bitcast<u32>(x) == 0x3f800000u) { return 1.0; }
    if (is_nan(x) || is_nan(y)) { return nan_f(); }
    let negative = (bitcast<u32>(x) & 0x80000000u) != 0u;
    let ax = fabs(x);
    let integer = is_inf(y) || floor(y) == y;
    if (negative && !is_zero(x) && !integer) { return nan_f(); }
    if (is_inf(y)) {
        if (bitcast<u32>(ax) == 0x3f800000u) { return 1.0; }
        return select(0.0, inf_f(), (ax > 1.0) == (y > 0.0));
    }
    var r: f32;
    if (is_zero(x)) { r = select(inf_f(), 0.0, y > 0.0); }
    else if (is_inf(x)) { r = select(0.0, inf_f(), y > 0.0); }
    else { r = exp2(y * log2_precise(ax)); }
    let odd = integer && abs(y) < 16777216.0 && fract(y * 0.5) != 0.0;
    if (negative && odd) { r = fneg(r); }
    return r;
}
// Twins of the helpers above for the common path of a vec4 (Vec4's calls): no branch, and the same result as the
// helper for every finite argument, which is all the common path keeps (a NaN or an infinity argument sends the vec4
// to the guarded path). Zeros are told by their bits, as `is_zero` tells them.
fn is_zero4(x: vec4<f32>) -> vec4<bool> { return (bitcast<vec4<u32>>(x) & vec4<u32>(0x7fffffffu)) == vec4<u32>(0u); }
// The far reduction is the turns' fraction: the build that reused the near reduction's rounded turns instead, two
// operations where this takes five, ran `y = exp(-x*x) * sin(3*x)` on bf16 arrays slower on an H200 through Vulkan,
// 89.3 µs against 84.3 (one run each, `docs/results/nvidia-h200/half/half-goals-12.txt` and `half-goals-11.txt`).
fn reduce_angle4(x: vec4<f32>) -> vec4<f32> {
    let k = round(x * 0.15915493667125702);
    let r = ((x - k * 6.28125) - k * 0.0019350051879882812) - k * 3.019916050561733e-7;
    let far = 6.283185 * (fract(x * 0.15915493667125702 + 0.5) - 0.5);
    return select(r, far, abs(x) > vec4<f32>(262144.0));
}
// The same for arguments within the exact reduction's reach, which need neither the far reduction nor the choice
// between the two: `sin` and `cos` take it on the common path, where every argument is within the reach, by its range
// (`finite_ranges`: `sin(3*x)` of an f16 `x`) or by its test against the reach (`vec4_statements`). `tan` keeps both.
fn reduce_angle4_within_reach(x: vec4<f32>) -> vec4<f32> {
    let k = round(x * 0.15915493667125702);
    return ((x - k * 6.28125) - k * 0.0019350051879882812) - k * 3.019916050561733e-7;
}
fn fsin4_within_reach(x: vec4<f32>) -> vec4<f32> { return select(sin(reduce_angle4_within_reach(x)), x, is_zero4(x)); }
fn fcos4_within_reach(x: vec4<f32>) -> vec4<f32> { return cos(reduce_angle4_within_reach(x)); }
fn ftan4(x: vec4<f32>) -> vec4<f32> { return select(tan(reduce_angle4(x)), x, is_zero4(x)); }
fn fexp4(x: vec4<f32>) -> vec4<f32> {
    return select(select(exp(x), vec4<f32>(inf_f()), x > vec4<f32>(88.8)), vec4<f32>(0.0), x < vec4<f32>(-104.0));
}
fn fexp24(x: vec4<f32>) -> vec4<f32> {
    return select(select(exp2(x), vec4<f32>(inf_f()), x >= vec4<f32>(128.0)), vec4<f32>(0.0), x < vec4<f32>(-150.0));
}
fn ftanh4(x: vec4<f32>) -> vec4<f32> { return select(tanh(x), sign(x), abs(x) > vec4<f32>(10.0)); }
fn fsign4(x: vec4<f32>) -> vec4<f32> {
    return select(select(vec4<f32>(-1.0), vec4<f32>(1.0), x > vec4<f32>(0.0)), x, x == vec4<f32>(0.0));
}
fn fabs4(x: vec4<f32>) -> vec4<f32> { return bitcast<vec4<f32>>(bitcast<vec4<u32>>(x) & vec4<u32>(0x7fffffffu)); }
"#;

/// A number as WGSL source: its exact bits, so that no rounding of a decimal printout and no text of the user's can
/// reach the shader; the non-finite ones through a run-time zero, since a constant NaN or infinity is a WGSL error,
/// and the zeros too, since a compiler that may ignore the sign of a zero folds `t * 0` to `+0` (lavapipe did, for
/// `x * 0` at `x = -0`, where the language says `-0`) and `t + 0` to `t` (`-0` where the language says `+0`).
fn number(value: f32) -> String {
    if value.is_finite() && value != 0.0 {
        format!("bitcast<f32>({:#010x}u)", value.to_bits())
    } else {
        format!("bitcast<f32>({:#010x}u + params.zero)", value.to_bits())
    }
}

/// WGSL as the shared lowering writes it ([`codegen`]) on the guarded path: every operation through the helpers that
/// spell out the language's results for NaN, infinities and zeros, every comparison with its NaN tests; inputs as
/// `input` names them.
struct Guarded<'a> {
    input: &'a dyn Fn(usize) -> String,
}

/// A scalar of the uniform block, where they are packed four to a `vec4`.
fn scalar(k: usize) -> String {
    format!("params.s[{}][{}]", k / 4, k % 4)
}

impl Dialect for Guarded<'_> {
    fn type_name(&self, ty: Type) -> &'static str {
        if ty == Type::Boolean { "bool" } else { "f32" }
    }

    fn number(&self, value: f32) -> String {
        number(value)
    }

    fn input(&self, k: usize) -> String {
        (self.input)(k)
    }

    fn scalar(&self, k: usize) -> String {
        scalar(k)
    }

    fn unbound(&self) -> String {
        "nan_f()".to_owned()
    }

    fn neg(&self, a: &str) -> String {
        format!("fneg({a})")
    }

    fn arith(&self, op: Arith, a: &str, b: &str) -> String {
        let name = match op {
            Arith::Add => "fadd",
            Arith::Sub => "fsub",
            Arith::Mul => "fmul",
            Arith::Div => "fdiv",
        };
        format!("{name}({a}, {b})")
    }

    fn compare(&self, op: Compare, a: &str, b: &str) -> String {
        // IEEE comparisons spelled out with bit tests: a WGSL compiler may assume no NaN and fold `x == x`.
        let ordered = format!("!is_nan({a}) && !is_nan({b})");
        match op {
            Compare::Ne => format!("!({ordered} && {a} == {b})"),
            _ => format!("({ordered} && {a} {} {b})", op.symbol()),
        }
    }

    fn call(&self, func: Func, a: &[String]) -> String {
        match func {
            Func::Where => format!("select({}, {}, {})", a[2], a[1], a[0]),
            _ => format!("{}({})", helper(func), a.join(", ")),
        }
    }

    fn declaration(&self, ty: &str, name: &str, value: &str) -> String {
        format!("let {name}: {ty} = {value};")
    }
}

/// The helper that computes `func` with the language's results for NaN, infinities and zeros (`where` is WGSL's own
/// `select`, its operands reordered by the caller).
fn helper(func: Func) -> &'static str {
    match func {
        Func::Abs => "fabs",
        Func::Min => "fmin",
        Func::Max => "fmax",
        Func::Clamp => "fclamp",
        Func::Sqrt => "fsqrt",
        Func::Exp => "fexp",
        Func::Exp2 => "fexp2",
        Func::Log => "flog",
        Func::Log2 => "flog2",
        Func::Pow => "fpow",
        Func::Sin => "fsin",
        Func::Cos => "fcos",
        Func::Tan => "ftan",
        Func::Tanh => "ftanh",
        Func::Asin => "fasin",
        Func::Acos => "facos",
        Func::Atan => "fatan",
        Func::Atan2 => "fatan2",
        Func::Floor => "ffloor",
        Func::Ceil => "fceil",
        Func::Round => "fround",
        Func::Trunc => "ftrunc",
        Func::Fma => "ffma",
        Func::Sign => "fsign",
        Func::Where => "select",
        Func::Erf => "ferf",
        Func::Expm1 => "fexpm1",
        Func::Log1p => "flog1p",
        Func::Sinh => "fsinh",
        Func::Cosh => "fcosh",
    }
}

/// The `let` statements computing the nodes marked in `which`, in order, with guarded arithmetic.
fn statements(program: &Program, which: &[bool], input_name: &dyn Fn(usize) -> String) -> String {
    codegen::statements(&Guarded { input: input_name }, program, which)
}

/// WGSL as the shared lowering writes it for four elements at once (`vec4<f32>`, or `vec4<bool>`), values named
/// `w<k>`, with WGSL's own operators: right wherever every value on the way is finite and no division has a zero
/// operand, which [`vec4_statements`] tests. Calls take the four lanes at once where a branch-free twin of the helper
/// exists, and go through the helpers lane by lane elsewhere.
struct Vec4;

impl Dialect for Vec4 {
    fn type_name(&self, ty: Type) -> &'static str {
        if ty == Type::Boolean { "vec4<bool>" } else { "vec4<f32>" }
    }

    fn number(&self, value: f32) -> String {
        format!("vec4<f32>({})", number(value))
    }

    fn input(&self, k: usize) -> String {
        format!("x{k}")
    }

    fn scalar(&self, k: usize) -> String {
        format!("vec4<f32>({})", scalar(k))
    }

    fn reduced(&self) -> String {
        self.unbound()
    }

    fn unbound(&self) -> String {
        "vec4<f32>(nan_f())".to_owned()
    }

    fn value(&self, id: usize) -> String {
        format!("w{id}")
    }

    fn neg(&self, a: &str) -> String {
        format!("(-{a})")
    }

    fn arith(&self, op: Arith, a: &str, b: &str) -> String {
        format!("({a} {} {b})", op.symbol())
    }

    fn compare(&self, op: Compare, a: &str, b: &str) -> String {
        format!("({a} {} {b})", op.symbol())
    }

    fn logic(&self, op: Logic, a: &str, b: &str) -> String {
        format!("({a} {} {b})", if op == Logic::And { "&" } else { "|" })
    }

    fn call(&self, func: Func, a: &[String]) -> String {
        // The functions with a branch-free twin ([`HELPERS`]) or a WGSL builtin that agrees with the helper on
        // finite arguments (the only ones the common path keeps) take all four lanes at once: the helpers' branches,
        // lane by lane, made `exp(-x*x) * sin(3*x)` 5% slower through Vulkan on an H200
        // (`docs/results/nvidia-h200/half/tuning/7-vec4-helpers-lab.txt`). The others go through the helpers lane by
        // lane.
        let whole = match func {
            Func::Where => return format!("select({}, {}, {})", a[2], a[1], a[0]),
            Func::Exp => "fexp4",
            Func::Exp2 => "fexp24",
            // Every argument is within the exact reduction's reach on the common path: by its range, or by its test
            // against the reach ([`vec4_statements`]).
            Func::Sin => "fsin4_within_reach",
            Func::Cos => "fcos4_within_reach",
            Func::Tan => "ftan4",
            Func::Tanh => "ftanh4",
            Func::Sign => "fsign4",
            Func::Abs => "fabs4",
            Func::Floor => "floor",
            Func::Ceil => "ceil",
            Func::Round => "round",
            Func::Trunc => "trunc",
            Func::Min => "min",
            Func::Max => "max",
            Func::Clamp => return format!("min(max({}, {}), {})", a[0], a[1], a[2]),
            _ => "",
        };
        if !whole.is_empty() {
            return format!("{whole}({})", a.join(", "));
        }
        let lanes: Vec<String> = ["x", "y", "z", "w"]
            .iter()
            .map(|lane| {
                let operands: Vec<String> = a.iter().map(|w| format!("{w}.{lane}")).collect();
                format!("{}({})", helper(func), operands.join(", "))
            })
            .collect();
        format!("vec4<f32>({})", lanes.join(", "))
    }

    fn declaration(&self, ty: &str, name: &str, value: &str) -> String {
        format!("let {name}: {ty} = {value};")
    }
}

/// Which numbers of the common path must have their exponent bits tested: a NaN or an infinity anywhere on the way
/// must send the `vec4` to the guarded path, but most values need no test of their own.
///
/// A value is *special* when it may be a NaN or an infinity while every tested value is finite: an input or a scalar
/// (memory may hold one), a constant that is one, a value whose operation may make one from finite operands in their
/// ranges ([`finite_ranges`]: `x*x` overflows for `|x|` past 1.8e19, `exp(x)` past 88.7, `sqrt` of a negative is a
/// NaN), or a value with a special operand that is not tested. A value that is not special needs no test: its
/// operands are finite, so it is; `exp(-x*x)` with `-x*x` tested is in [0, 1] and `sin(3*x)` of an f16 `x` in
/// [-1, 1], and a product of them is finite. A special value needs one unless it passes its NaN or infinity on.
///
/// IEEE `+`, `-` and `*` give a NaN or an infinity whenever an operand is one (`inf * 0` is a NaN). So a value whose
/// only use is one such operation with a *leaf* (an input, a scalar, or a finite non-zero constant) passes any NaN
/// or infinity on to that operation's result, and a compiler cannot drop it on the way: the identities that remove
/// an operand (`t * 0`, `t - t`) need a zero constant or the value twice. `t + t`, `t * t` and `t * -t` pass it on
/// too (a compiler may write them `2 * t` and `±t²`, never drop `t`); `t - t` and `t + -t` do not. Each mention of an
/// input or a scalar is a node of its own, so "the value twice" compares what the nodes hold (the input or scalar,
/// seen through negations), not the nodes. Following such uses from value to value ends at a value that is tested: an
/// output, or an operand of anything else (a call, a division, a comparison, `where`), whose semantics a NaN or an
/// infinity may change without passing it on; or, with `roots_pass_on` (the terms of a `sum` or a `prod`, added or
/// multiplied into an accumulator with WGSL's operators), at the accumulator, which carries the NaN or the infinity
/// to the result as the language says. An input or a scalar that needs a test is tested once, whichever of its
/// mentions needs it.
///
/// Two placements are sound, and the one with fewer tests is taken: following special values to where they must be
/// tested, or testing every input and scalar where it is read, after which only the values that may overflow or leave a
/// domain are special. The second wins where the storage type bounds the inputs: on f16 arrays (at most 65504) `y =
/// exp(-x*x) * sin(3*x)` tests its input alone; on f32 and bf16 arrays, whose `x*x` and `3*x` may overflow, the first
/// tests `3*x` alone (`sin` and `cos` of any finite argument are in [-1, 1], [`finite_ranges`]; `exp` of `-x*x` needs
/// no test of `-x*x`, whose infinity `exp` takes exactly to 0 and whose `x`, if special, reaches `3*x`). The tests were
/// first two integer operations a value, and 29 of them made the Horner polynomial's kernel compute-bound (the figures
/// are in `docs/results/nvidia-h200/README.md`); a test is now one addition into [`vec4_statements`]' probe, but on
/// 16-bit arrays, where a kernel computes twice the elements per byte, each still costs: on an H200 through Vulkan the
/// bf16 kernel of `y = exp(-x*x) * sin(3*x)` took 105.2-105.4 µs with six tests, 96.0 with three and 82.3 with none
/// (`docs/results/nvidia-h200/half/half-e2-lab.txt`). `s = sum(x*x)` tests none.
///
/// `ranges` are [`finite_ranges`]' for the same nodes.
fn tested_values(
    program: &Program,
    which: &[bool],
    roots: &[usize],
    roots_pass_on: bool,
    ranges: &[ValueRange],
) -> Vec<bool> {
    let following = placed_tests(program, which, roots, roots_pass_on, ranges, false);
    let at_inputs = placed_tests(program, which, roots, roots_pass_on, ranges, true);
    let count = |tested: &[bool]| tested.iter().filter(|t| **t).count();
    if count(&at_inputs) < count(&following) { at_inputs } else { following }
}

/// What a node holds, seen through negations: an input's or a scalar's mentions hold that input or scalar, `-t`
/// holds what `t` holds (negated), any other node itself. `t * -t` multiplies one value by itself.
fn held_value(nodes: &[Node], mut id: usize) -> ((u8, usize), bool) {
    let mut negated = false;
    while let Node::Neg(a) = nodes[id] {
        negated = !negated;
        id = a;
    }
    let key = match nodes[id] {
        Node::Input(k) => (0, k),
        Node::Scalar(k) => (1, k),
        _ => (2, id),
    };
    (key, negated)
}

/// One placement of [`tested_values`]' tests: following special values to where they must be tested, or, with
/// `at_inputs`, testing every input and scalar where it is first read.
fn placed_tests(
    program: &Program,
    which: &[bool],
    roots: &[usize],
    roots_pass_on: bool,
    ranges: &[ValueRange],
    at_inputs: bool,
) -> Vec<bool> {
    let nodes = &program.nodes;
    let mut uses: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (id, _) in which.iter().enumerate().filter(|(_, used)| **used) {
        for operand in nodes[id].operands() {
            // `t * t` is one use of `t`.
            if uses[operand].last() != Some(&id) {
                uses[operand].push(id);
            }
        }
    }
    let is_leaf = |id: usize| match nodes[id] {
        Node::Input(_) | Node::Scalar(_) => true,
        Node::Const(c) => c.is_finite() && c != 0.0,
        _ => false,
    };
    let passes_on = |value: usize, user: usize| match &nodes[user] {
        Node::Neg(_) => true,
        Node::Arith(op @ (Arith::Add | Arith::Sub | Arith::Mul), a, b) => {
            let other = if *a == value { *b } else { *a };
            let ((held, negated), (other_held, other_negated)) = (held_value(nodes, value), held_value(nodes, other));
            if held == other_held {
                match op {
                    Arith::Mul => true,
                    Arith::Add => negated == other_negated,
                    _ => negated != other_negated,
                }
            } else {
                is_leaf(other)
            }
        }
        _ => false,
    };
    let mut special = vec![false; nodes.len()];
    let mut tested = vec![false; nodes.len()];
    for id in (0..nodes.len()).filter(|&id| which[id] && program.types[id] != Type::Boolean) {
        let operand_special = nodes[id].operands().iter().any(|&o| special[o] && !tested[o]);
        special[id] = operand_special || ranges[id].special;
        if !special[id] {
            continue;
        }
        let leaf_read = matches!(nodes[id], Node::Input(_) | Node::Scalar(_));
        // A root is tested unless its accumulator passes a NaN on; any other value unless its one use does.
        let passed_on =
            if roots.contains(&id) { roots_pass_on } else { uses[id].len() == 1 && passes_on(id, uses[id][0]) };
        tested[id] = !passed_on || (at_inputs && leaf_read);
    }
    // An input or a scalar is tested at one of its mentions: the first, if any of them needs it.
    let mut seen = std::collections::HashMap::new();
    for id in (0..nodes.len()).filter(|&id| which[id] && matches!(nodes[id], Node::Input(_) | Node::Scalar(_))) {
        let first = *seen.entry(held_value(nodes, id).0).or_insert(id);
        if tested[id] && first != id {
            tested[id] = false;
            tested[first] = true;
        }
    }
    // A value whose one use is `exp`, `exp2` or `tanh`, whose `vec4` forms give each infinity its exact image (0 or
    // +inf, -1 or 1), needs no test of its own when it can only be finite or an infinity while the inputs and
    // scalars it reads are finite (a sum, difference, product or negation of values finite then), and each of those
    // is caught by another test: an infinity it makes of finite values (`-x*x` past 1.8e19) comes out of the
    // function as the function's value of it, and a NaN or an infinity read from memory sends the `vec4` to the
    // guarded path through the other test. `exp(-x*x) * sin(3*x)` on f32 and bf16 arrays so tests `3*x` alone,
    // which a special `x` reaches.
    for value in 0..nodes.len() {
        let one_exact_use = uses[value].len() == 1
            && matches!(&nodes[uses[value][0]], Node::Call(Func::Exp | Func::Exp2 | Func::Tanh, _));
        if !tested[value] || roots.contains(&value) || !one_exact_use {
            continue;
        }
        let mut read = Vec::new();
        let infinite_at_most =
            matches!(nodes[value], Node::Neg(_) | Node::Arith(Arith::Add | Arith::Sub | Arith::Mul, ..))
                && nodes[value]
                    .operands()
                    .iter()
                    .all(|&o| finite_while_read_finite(nodes, ranges, &tested, o, &mut read));
        let caught = |mention: usize| {
            let held = held_value(nodes, mention).0;
            (0..nodes.len()).filter(|&m| which[m] && held_value(nodes, m).0 == held).any(|m| {
                // Follow the uses that pass a NaN or an infinity on, from this mention to a test.
                let mut at = m;
                loop {
                    if tested[at] && at != value {
                        return true;
                    }
                    match uses[at].as_slice() {
                        [user] if *user != value && passes_on(at, *user) => at = *user,
                        _ => return false,
                    }
                }
            })
        };
        if infinite_at_most && read.iter().all(|&mention| caught(mention)) {
            tested[value] = false;
        }
    }
    tested
}

/// Whether node `id` is finite whenever the inputs and scalars it reads are (collected into `read`): a finite
/// constant, an input or a scalar, a tested value (whose NaN or infinity its test catches), or a value whose
/// operation makes no NaN or infinity of operands finite in their ranges ([`finite_ranges`]) and whose operands are
/// finite so.
fn finite_while_read_finite(
    nodes: &[Node],
    ranges: &[ValueRange],
    tested: &[bool],
    id: usize,
    read: &mut Vec<usize>,
) -> bool {
    match &nodes[id] {
        Node::Input(_) | Node::Scalar(_) => {
            read.push(id);
            true
        }
        Node::Const(c) => c.is_finite(),
        _ if tested[id] => true,
        Node::Reduced | Node::Operand(_) => false,
        node => {
            !ranges[id].special
                && node.operands().iter().all(|&o| finite_while_read_finite(nodes, ranges, tested, o, read))
        }
    }
}

/// What [`finite_ranges`] knows of one number of the common path.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ValueRange {
    /// The interval the value lies in when it is finite.
    lo: f64,
    hi: f64,
    /// Whether it may be a NaN or an infinity when its operands are finite.
    special: bool,
}

/// The interval each number of the common path lies in, when its operands are finite and in theirs and it is finite
/// itself, and whether its operation may make a NaN or an infinity of such operands: an input or a scalar, which
/// memory may hold as one; an overflow; an argument outside a function's domain; a division, whose zeros
/// [`vec4_statements`] tests anyway; a function this analysis does not bound. An input lies in its storage type's
/// range (at most 65504 for f16), anything else at worst in `[-f32::MAX, f32::MAX]`: `-x*x` may overflow, but where
/// it is finite it is in `[-f32::MAX, 0]`, so `exp(-x*x)` is in [0, 1].
///
/// The bounds are computed in `f64` and widened for the `f32` roundings on the way (2^-20 of a value; a rounding
/// never changes a value's sign), and a function's result for its error bound on Vulkan (2^-8, far beyond `exp`'s
/// 3 + 2|x| units in the last place at an argument below 88); a bound past `f32::MAX` is an overflow. `sin` and `cos`
/// are bounded by 1 for every finite argument because the helpers reduce every one to [-pi, pi], past the reach of
/// the exact reduction too ([`HELPERS`]' `reduce_angle`), where Vulkan bounds the driver's functions.
fn finite_ranges(program: &Program, which: &[bool], dtype: Dtype) -> Vec<ValueRange> {
    const MAX: f64 = f32::MAX as f64;
    let storage_max = if dtype == Dtype::F16 { 65504.0 } else { MAX };
    let anything = ValueRange { lo: -MAX, hi: MAX, special: true };
    let nodes = &program.nodes;
    let mut ranges = vec![anything; nodes.len()];
    let widen = |(lo, hi): (f64, f64), relative: f64| {
        let (lo, hi) = (lo - lo.abs() * relative, hi + hi.abs() * relative);
        ValueRange { lo: lo.max(-MAX), hi: hi.min(MAX), special: lo < -MAX || hi > MAX }
    };
    let product = |(a, b): (f64, f64), (c, d): (f64, f64)| {
        let all = [a * c, a * d, b * c, b * d];
        (all.iter().copied().fold(f64::INFINITY, f64::min), all.iter().copied().fold(f64::NEG_INFINITY, f64::max))
    };
    let arithmetic = 2f64.powi(-20);
    let function = 2f64.powi(-8);
    for id in (0..nodes.len()).filter(|&id| which[id] && program.types[id] != Type::Boolean) {
        let arg = |k: usize| {
            let r = ranges[nodes[id].operands()[k]];
            (r.lo, r.hi)
        };
        // A function's result in `[lo, hi]` where `defined` holds for its argument; anything otherwise.
        let bounded = |defined: bool, lo: f64, hi: f64| if defined { widen((lo, hi), function) } else { anything };
        ranges[id] = match &nodes[id] {
            Node::Const(c) if c.is_finite() => ValueRange { lo: f64::from(*c), hi: f64::from(*c), special: false },
            Node::Input(_) => ValueRange { lo: -storage_max, hi: storage_max, special: true },
            Node::Neg(_) => {
                let (lo, hi) = arg(0);
                ValueRange { lo: -hi, hi: -lo, special: false }
            }
            Node::Arith(op, a, b) => {
                let ((lo_a, hi_a), (lo_b, hi_b)) = (arg(0), arg(1));
                match op {
                    Arith::Add => widen((lo_a + lo_b, hi_a + hi_b), arithmetic),
                    Arith::Sub => widen((lo_a - hi_b, hi_a - lo_b), arithmetic),
                    Arith::Mul => {
                        let ((held_a, negated_a), (held_b, negated_b)) = (held_value(nodes, *a), held_value(nodes, *b));
                        if held_a == held_b {
                            // `t * t` and `t * -t`: a square, of one sign.
                            let square = lo_a.abs().max(hi_a.abs()).powi(2);
                            let low = if lo_a <= 0.0 && hi_a >= 0.0 { 0.0 } else { lo_a.abs().min(hi_a.abs()).powi(2) };
                            let signed = if negated_a == negated_b { (low, square) } else { (-square, -low) };
                            widen(signed, arithmetic)
                        } else {
                            widen(product((lo_a, hi_a), (lo_b, hi_b)), arithmetic)
                        }
                    }
                    Arith::Div => anything,
                }
            }
            Node::Call(func, args) => {
                let (lo, hi) = arg(0);
                match func {
                    Func::Abs => {
                        let low = if lo <= 0.0 && hi >= 0.0 { 0.0 } else { lo.abs().min(hi.abs()) };
                        ValueRange { lo: low, hi: lo.abs().max(hi.abs()), special: false }
                    }
                    Func::Min | Func::Max | Func::Clamp | Func::Where => {
                        // Each result is one of the value arguments (`where`'s first is a boolean).
                        let values = if *func == Func::Where { &args[1..] } else { &args[..] };
                        let low = values.iter().map(|&v| ranges[v].lo).fold(f64::INFINITY, f64::min);
                        let high = values.iter().map(|&v| ranges[v].hi).fold(f64::NEG_INFINITY, f64::max);
                        ValueRange { lo: low, hi: high, special: false }
                    }
                    Func::Floor | Func::Ceil | Func::Round | Func::Trunc => widen((lo - 1.0, hi + 1.0), 0.0),
                    Func::Sign => ValueRange { lo: -1.0, hi: 1.0, special: false },
                    Func::Sqrt => bounded(lo >= 0.0, lo.max(0.0).sqrt(), hi.max(0.0).sqrt()),
                    Func::Exp => bounded(hi <= 88.0, lo.exp(), hi.exp()),
                    Func::Exp2 => bounded(hi <= 127.0, lo.exp2(), hi.exp2()),
                    Func::Expm1 => bounded(hi <= 88.0, lo.exp_m1(), hi.exp_m1()),
                    // A subnormal argument may be flushed to zero, whose logarithm is an infinity.
                    Func::Log | Func::Log2 => bounded(lo >= f64::from(f32::MIN_POSITIVE), -150.0, hi.max(1.0).log2()),
                    Func::Log1p => bounded(lo > -1.0 + arithmetic, -150.0, hi.max(0.0).ln_1p()),
                    Func::Sin | Func::Cos => bounded(true, -1.0, 1.0),
                    Func::Tanh | Func::Erf => bounded(true, -1.0, 1.0),
                    Func::Atan | Func::Atan2 => bounded(true, -std::f64::consts::PI, std::f64::consts::PI),
                    Func::Asin | Func::Acos => bounded(lo >= -1.0 && hi <= 1.0, -4.0, 4.0),
                    Func::Sinh => bounded(lo >= -88.0 && hi <= 88.0, lo.sinh(), hi.sinh()),
                    Func::Cosh => bounded(lo >= -88.0 && hi <= 88.0, 1.0, lo.cosh().max(hi.cosh())),
                    Func::Fma => {
                        let (product_lo, product_hi) = product((lo, hi), arg(1));
                        let (lo_c, hi_c) = arg(2);
                        widen((product_lo + lo_c, product_hi + hi_c), arithmetic)
                    }
                    Func::Pow | Func::Tan => anything,
                }
            }
            Node::Const(_) | Node::Scalar(_) | Node::Reduced | Node::Operand(_) => anything,
            Node::Not(_) | Node::Compare(..) | Node::Logic(..) => anything,
        };
    }
    ranges
}

/// The statements computing the nodes marked in `which` for four elements at once ([`Vec4`]), the magnitudes of the
/// values marked in `tested` ([`tested_values`]) added into `probe`, which [`PROBE_TEST`] reads: a lane of `probe` is
/// a NaN or an infinity when a value on the way is one in that lane, or a division has a zero operand there.
///
/// The sum of magnitudes never cancels: an infinity keeps it infinite and a NaN makes it a NaN (IEEE `+` passes both
/// on, which [`tested_values`] relies on too), and finite values that overflow it only send their `vec4` to the
/// guarded path, which is exact. Because every term is non-negative, a compiler that fuses a product into the
/// addition cannot bring an overflowed product back into range either. One `f32` addition a value (the absolute value
/// is an operand modifier on GPUs) replaced an integer `and` and `max` a value, which the SMs issue at half the rate:
/// on an H200 through Vulkan, `y = exp(-x*x) * sin(3*x)` tests six values an element, and the integer tests held its
/// kernel at 145.9 µs on 2^26 `f32` elements against 139.3 with the probe and 137.6 for a copy of the same bytes
/// (`docs/results/nvidia-h200/special-functions/probe-lab.txt`). `sin` and `cos` of an argument whose range
/// ([`finite_ranges`]) is within the exact reduction's reach skip the far reduction and the choice between the two:
/// on an H200 through Vulkan, `y = exp(-x*x) * sin(3*x)` on f16 arrays took 77.6 µs with them and 71.5 µs with the
/// choice alone (`docs/results/nvidia-h200/half/half-goals-11.txt`, `half-goals-10.txt`). An argument whose range
/// passes the reach is added into the probe times 2^110 ([`FAR_SCALE`]), which overflows it from 2^18 on: a `vec4`
/// with a far argument takes the guarded path, whose scalar helpers reduce it exactly, as CUDA's kernels send a far
/// argument to their far path, and the common path never needs the far reduction either: on an H200 through Vulkan
/// the bf16 kernel of `y = exp(-x*x) * sin(3*x)`, which computed both reductions and chose, went from 82.3 to 73.1 µs
/// (`docs/results/nvidia-h200/half/half-goals-15.txt`, `half-goals-16.txt`).
fn vec4_statements(program: &Program, which: &[bool], tested: &[bool], ranges: &[ValueRange]) -> String {
    let mut out = String::from("    var probe = vec4<f32>(0.0);\n");
    // The arguments of `sin` and `cos` that may pass the exact reduction's reach.
    let mut far = vec![false; program.nodes.len()];
    for (id, _) in which.iter().enumerate().filter(|(_, used)| **used) {
        if let Node::Call(Func::Sin | Func::Cos, args) = &program.nodes[id] {
            far[args[0]] |= !(ranges[args[0]].lo >= -TRIG_REACH && ranges[args[0]].hi <= TRIG_REACH);
        }
    }
    for (id, _) in which.iter().enumerate().filter(|(_, used)| **used) {
        if program.types[id] == Type::Boolean {
            let _ = writeln!(out, "    let w{id}: vec4<bool> = {};", codegen::expression(&Vec4, program, id));
            continue;
        }
        let _ = writeln!(out, "    let w{id}: vec4<f32> = {};", codegen::expression(&Vec4, program, id));
        if far[id] {
            // Its NaN or infinity too: the scaled magnitude keeps both.
            let _ = writeln!(out, "    probe = probe + abs(w{id}) * {FAR_SCALE};");
        } else if tested[id] {
            let _ = writeln!(out, "    probe = probe + abs(w{id});");
        }
        // A zero on either side of a division takes the guarded path too: a compiler that assumes finite values may
        // fold `x / 0` to 0 (llvmpipe did), and `0 / x` keeps its sign only there. So does a divisor of 2^126 or more,
        // whose reciprocal a driver may flush ([`HELPERS`]' `fdiv`).
        if let Node::Arith(Arith::Div, a, b) = &program.nodes[id] {
            let _ = writeln!(
                out,
                "    probe = probe + select(vec4<f32>(0.0), vec4<f32>(inf_f()), \
                 (bitcast<vec4<u32>>(w{a}) & vec4<u32>(0x7fffffffu)) == vec4<u32>(0u) | \
                 (bitcast<vec4<u32>>(w{b}) & vec4<u32>(0x7fffffffu)) == vec4<u32>(0u) | \
                 (bitcast<vec4<u32>>(w{b}) & vec4<u32>(0x7fffffffu)) >= vec4<u32>(0x7e800000u));"
            );
        }
    }
    out
}

/// The statement after [`vec4_statements`] that reads its `probe`: `worst` is `0x7f800000` exactly when the sum of
/// `probe`'s lanes is a NaN or an infinity, that is when a lane is one (the lanes are non-negative, so they cannot
/// cancel), or when finite lanes add past `f32::MAX`, which only sends the `vec4` to the guarded path, which is exact.
/// Three additions and one integer test, where testing the four lanes' exponents took four integer `and`s and three
/// `max`es: on an H200 through Vulkan the bf16 kernel of `y = exp(-x*x) * sin(3*x)` went from 105.2-105.4 to
/// 102.5-102.7 µs (`docs/results/nvidia-h200/half/half-e2-lab.txt`).
const PROBE_TEST: &str = "    let probe_sum = (probe.x + probe.y) + (probe.z + probe.w);\n    \
                          let worst = bitcast<u32>(probe_sum) & 0x7f800000u;\n";

/// The uniform block every generated shader reads: the chunk's length, the row width of a 2D grid (for a one-pass
/// reduction, 1 in the last chunk's dispatch, whose last workgroup finishes), a run-time zero, the index of the
/// chunk's first partial, and the scalars packed four to a `vec4`.
fn params_struct(program: &Program) -> String {
    let groups = program.scalars.len().div_ceil(4).max(1);
    format!("struct Params {{ n: u32, row: u32, zero: u32, base: u32, s: array<vec4<f32>, {groups}> }}\n")
}

/// The combination of two partial values of a reduction, in WGSL.
fn join(kind: Reduce, a: &str, b: &str) -> String {
    match kind {
        Reduce::Sum => format!("fadd({a}, {b})"),
        Reduce::Prod => format!("fmul({a}, {b})"),
        Reduce::Min => format!("select(min({a}, {b}), nan_f(), is_nan({a}) || is_nan({b}))"),
        Reduce::Max => format!("select(max({a}, {b}), nan_f(), is_nan({a}) || is_nan({b}))"),
    }
}

/// How a generated shader reads and writes four elements of an array stored as a [`Dtype`]: an `f32` array is bound
/// as `array<vec4<f32>>`; a 16-bit one as `array<vec2<u32>>` (four elements in two words), widened to a `vec4<f32>`
/// as it is read and rounded to nearest, ties to even, as it is written. The rounding is integer arithmetic on the
/// bits rather than `pack2x16float`, which WGSL lets round either way and leaves undefined past f16's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stored(Dtype);

impl Stored {
    /// The WGSL type an array is bound as.
    fn array_type(self) -> &'static str {
        if self.0.is_half() { "array<vec2<u32>>" } else { "array<vec4<f32>>" }
    }

    /// Four elements read by `word` (an element of the bound array), as a `vec4<f32>`.
    fn load(self, word: &str) -> String {
        match self.0 {
            Dtype::F32 => word.to_owned(),
            Dtype::F16 => format!("widen_f16({word})"),
            Dtype::Bf16 => format!("widen_bf16({word})"),
        }
    }

    /// `value` (a `vec4<f32>`) as an element of the bound array.
    fn store(self, value: &str) -> String {
        match self.0 {
            Dtype::F32 => value.to_owned(),
            Dtype::F16 => format!("narrow_f16({value})"),
            Dtype::Bf16 => format!("narrow_bf16({value})"),
        }
    }

    /// As [`Stored::store`], for a `value` known to hold no NaN and no infinity (an output on the common path, whose
    /// roots [`tested_values`] tests): the rounding without its NaN case. A finite value may still round to an
    /// infinity, which both roundings give.
    fn store_finite(self, value: &str) -> String {
        match self.0 {
            Dtype::F32 => value.to_owned(),
            Dtype::F16 => format!("narrow_f16_finite({value})"),
            Dtype::Bf16 => format!("narrow_bf16_finite({value})"),
        }
    }

    /// The helpers [`Stored::load`] and [`Stored::store`] call.
    fn helpers(self) -> &'static str {
        match self.0 {
            Dtype::F32 => "",
            Dtype::F16 => F16_HELPERS,
            Dtype::Bf16 => BF16_HELPERS,
        }
    }

    /// Bytes per element.
    fn bytes(self) -> usize {
        self.0.bytes()
    }
}

/// f16 in two words: `unpack2x16float` widens exactly; the rounding rebiases the exponent and rounds the dropped 13
/// bits to nearest even, takes f16's subnormals by adding 0.5 (whose `f32` spacing, 2^-24, is theirs: the addition
/// rounds `|x|` to the nearest subnormal, ties to even, and the sum's low bits are its count of 2^-24), and sends
/// everything from 65520 up to infinity and a NaN to the quiet NaN.
const F16_HELPERS: &str = r#"
fn widen_f16(v: vec2<u32>) -> vec4<f32> { return vec4<f32>(unpack2x16float(v.x), unpack2x16float(v.y)); }
fn narrow_f16(w: vec4<f32>) -> vec2<u32> {
    let b = bitcast<vec4<u32>>(w);
    let sign = (b >> vec4<u32>(16u)) & vec4<u32>(0x8000u);
    let a = b & vec4<u32>(0x7fffffffu);
    let normal = (a - vec4<u32>(0x38000000u) + vec4<u32>(0x0fffu) + ((a >> vec4<u32>(13u)) & vec4<u32>(1u))) >> vec4<u32>(13u);
    let tiny = bitcast<vec4<u32>>(bitcast<vec4<f32>>(a) + vec4<f32>(0.5)) - vec4<u32>(0x3f000000u);
    var r = select(tiny, normal, a >= vec4<u32>(0x38800000u));
    r = select(r, vec4<u32>(0x7c00u), a >= vec4<u32>(0x477ff000u));
    r = select(r, vec4<u32>(0x7e00u), a > vec4<u32>(0x7f800000u));
    let h = sign | r;
    return vec2<u32>(h.x | (h.y << 16u), h.z | (h.w << 16u));
}
fn narrow_f16_finite(w: vec4<f32>) -> vec2<u32> {
    let b = bitcast<vec4<u32>>(w);
    let sign = (b >> vec4<u32>(16u)) & vec4<u32>(0x8000u);
    let a = b & vec4<u32>(0x7fffffffu);
    let normal = (a - vec4<u32>(0x38000000u) + vec4<u32>(0x0fffu) + ((a >> vec4<u32>(13u)) & vec4<u32>(1u))) >> vec4<u32>(13u);
    let tiny = bitcast<vec4<u32>>(bitcast<vec4<f32>>(a) + vec4<f32>(0.5)) - vec4<u32>(0x3f000000u);
    let r = select(select(tiny, normal, a >= vec4<u32>(0x38800000u)), vec4<u32>(0x7c00u), a >= vec4<u32>(0x477ff000u));
    let h = sign | r;
    return vec2<u32>(h.x | (h.y << 16u), h.z | (h.w << 16u));
}
"#;

/// f16 in two words, rounded by `pack2x16float` where the probe found it exact ([`F16Narrowing::Pack`]).
const F16_PACK_HELPERS: &str = r#"
fn widen_f16(v: vec2<u32>) -> vec4<f32> { return vec4<f32>(unpack2x16float(v.x), unpack2x16float(v.y)); }
fn narrow_f16(w: vec4<f32>) -> vec2<u32> { return vec2<u32>(pack2x16float(w.xy), pack2x16float(w.zw)); }
fn narrow_f16_finite(w: vec4<f32>) -> vec2<u32> { return narrow_f16(w); }
"#;

/// bf16 in two words: an element is the upper half of an `f32`; the rounding adds just under half of the dropped
/// 16 bits, and the kept bit's parity, and keeps a NaN a (quiet) NaN. `narrow_bf16_finite`, for values known finite,
/// leaves out the NaN case and packs each pair as it takes the upper halves: four integer operations an element
/// where `narrow_bf16` takes ten. On an H200 through Vulkan, the Horner polynomial on bf16 arrays rose from 3270 to
/// 3537 GB/s with it, where a kernel copying the same bytes moved 3591 (docs/results/nvidia-h200/half/): the
/// polynomial's integer work, not its memory, had set its time.
const BF16_HELPERS: &str = r#"
fn widen_bf16(v: vec2<u32>) -> vec4<f32> {
    return bitcast<vec4<f32>>(vec4<u32>(v.x << 16u, v.x & 0xffff0000u, v.y << 16u, v.y & 0xffff0000u));
}
fn narrow_bf16(w: vec4<f32>) -> vec2<u32> {
    let b = bitcast<vec4<u32>>(w);
    let rounded = (b + vec4<u32>(0x7fffu) + ((b >> vec4<u32>(16u)) & vec4<u32>(1u))) >> vec4<u32>(16u);
    let h = select(rounded, (b >> vec4<u32>(16u)) | vec4<u32>(0x40u), (b & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u));
    return vec2<u32>(h.x | (h.y << 16u), h.z | (h.w << 16u));
}
fn narrow_bf16_finite(w: vec4<f32>) -> vec2<u32> {
    let b = bitcast<vec4<u32>>(w);
    let r = b + vec4<u32>(0x7fffu) + ((b >> vec4<u32>(16u)) & vec4<u32>(1u));
    return vec2<u32>((r.x >> 16u) | (r.y & 0xffff0000u), (r.z >> 16u) | (r.w & 0xffff0000u));
}
"#;

/// How the generated shaders round `f32` values to f16 as they store them.
///
/// `pack2x16float` is one instruction; the integer rounding some twenty. On an H200 through Vulkan, `y = 2*x + 1` on
/// 2^26 f16 elements ran at 3197 GB/s with the integer rounding and 3594 with `pack2x16float`, as fast as a copy of
/// the same bytes (3599; measured: docs/results/nvidia-h200/half/README.md). WGSL lets `pack2x16float` round either
/// way and leaves values past f16's range undefined, so the backend takes it only where [`probe_f16_pack`] found it
/// rounding every case to nearest even.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum F16Narrowing {
    /// `pack2x16float`: this adapter rounds to nearest even, overflows to infinity and keeps subnormals.
    Pack,
    /// The rounding in integer arithmetic on the bits (`F16_HELPERS`).
    Integer,
}

/// The probe's `pack2x16float` over an array of `f32`, one word per value (the f16 in its low half).
const PACK_PROBE: &str = r#"
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(64)
fn pack_probe(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&x)) { y[id.x] = pack2x16float(vec2<f32>(x[id.x], 0.0)); }
}
"#;

/// The values the probe packs: every finite f16 value of either sign, the midpoint between it and the next (ties,
/// which must go to the even neighbour; the last is 65520, which must overflow to infinity) and the `f32` values on
/// either side of each midpoint (which must not round as ties), infinities, NaN, and `f32` values far past f16's
/// range or below its smallest subnormal. 253,958 values, one dispatch.
fn pack_probe_values() -> Vec<f32> {
    let mut values = Vec::with_capacity(8 * 0x7c00 + 6);
    for bits in 0u16..0x7c00 {
        let here = Dtype::F16.decode(bits);
        let midpoint = (here + Dtype::F16.decode(bits + 1)) / 2.0; // exact: one bit more than f16's
        let (below, above) = (f32::from_bits(midpoint.to_bits() - 1), f32::from_bits(midpoint.to_bits() + 1));
        for x in [here, midpoint, below, above] {
            values.extend([x, -x]);
        }
    }
    values.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX, -1e9, 1e-30]);
    values
}

/// Runs `pack2x16float` over [`pack_probe_values`] on `backend` and compares each result with Rust's rounding to
/// nearest even (`Dtype::encode`): any NaN for a NaN, the same bits otherwise. The integer rounding where a value
/// differs, or where the probe itself fails.
pub fn probe_f16_pack(backend: &WgpuBackend) -> F16Narrowing {
    let run = || -> Result<bool> {
        let values = pack_probe_values();
        let pipeline = backend.custom_pipeline(PACK_PROBE, "pack_probe")?;
        let x = backend.storage_buffer("pack probe input", &values)?;
        let y = backend.zeroed_storage_buffer("pack probe output", 4 * values.len().next_multiple_of(4) as u64)?;
        let group = backend.bind_buffers(&pipeline, &[(0, &x), (1, &y)])?;
        let words = values.len().next_multiple_of(4) as u32;
        backend.dispatch(&pipeline, &group, (words.div_ceil(64), 1, 1))?;
        let packed: Vec<u32> = backend.read_buffer(&y, values.len())?;
        Ok(values.iter().zip(&packed).all(|(&x, &word)| {
            let (got, want) = ((word & 0xffff) as u16, Dtype::F16.encode(x));
            got == want || (x.is_nan() && Dtype::F16.decode(got).is_nan())
        }))
    };
    match run() {
        Ok(true) => F16Narrowing::Pack,
        _ => F16Narrowing::Integer,
    }
}

impl WgpuBackend {
    /// How this adapter's expression shaders round to f16: [`probe_f16_pack`]'s answer, found on first use.
    pub fn f16_narrowing(&self) -> F16Narrowing {
        *self.f16_narrowing.get_or_init(|| probe_f16_pack(self))
    }
}

/// The WGSL of an elementwise program: entry point `expr_map`, four elements per invocation.
///
/// Every array is bound as `array<vec4<f32>>`: an invocation loads one `vec4` of each input, computes its four
/// elements at once with WGSL's operators ([`vec4_statements`]), and stores one `vec4` of each output; where a value
/// on the way was special, it computes the four again one by one through the guarded `gw_element` (which returns
/// every output's value of one element). A chunk starts at a multiple of four elements, and every buffer is allocated
/// padded to 16 bytes, so the last `vec4` of a length that is not a multiple of four reads and writes padding that
/// no caller sees. The scalar form of this kernel fell well short of the copy peak through Vulkan
/// (`docs/results/nvidia-h100/README.md`). Arrays of 16-bit elements are bound as two words per four elements,
/// widened as they are read and rounded as they are written ([`Stored`]).
///
/// `narrowing` says how f16 outputs are rounded ([`F16Narrowing`]); f32 and bf16 arrays ignore it.
pub fn elementwise_source(program: &Program, dtype: Dtype, narrowing: F16Narrowing) -> String {
    let stored = Stored(dtype);
    // 16-bit arrays: eight elements an invocation, 16 bytes a load as for f32 ([`elements_per_invocation`]).
    let array = if dtype.is_half() { "array<vec4<u32>>" } else { stored.array_type() };
    let mut s = params_struct(program);
    s.push_str("@group(0) @binding(0) var<uniform> params: Params;\n");
    let overwritten: Vec<bool> = program.overwritten_inputs();
    for (k, written) in overwritten.iter().enumerate() {
        let access = if *written { "read_write" } else { "read" };
        let _ = writeln!(s, "@group(0) @binding({}) var<storage, {access}> in{k}: {array};", k + 1);
    }
    let mut binding = program.inputs.len() + 1;
    let mut targets = Vec::new();
    for (j, output) in program.outputs.iter().enumerate() {
        match program.overwrites(output) {
            Some(k) => targets.push(format!("in{k}")),
            None => {
                let _ = writeln!(s, "@group(0) @binding({binding}) var<storage, read_write> out{j}: {array};");
                binding += 1;
                targets.push(format!("out{j}"));
            }
        }
    }
    s.push_str(HELPERS);
    s.push_str(if dtype == Dtype::F16 && narrowing == F16Narrowing::Pack {
        F16_PACK_HELPERS
    } else {
        stored.helpers()
    });
    let outputs = program.outputs.len();
    let parameters: Vec<String> = (0..program.inputs.len()).map(|k| format!("a{k}: f32")).collect();
    let _ = writeln!(s, "fn gw_element({}) -> array<f32, {outputs}> {{", parameters.join(", "));
    let roots: Vec<usize> = program.outputs.iter().map(|o| o.node).collect();
    s.push_str(&statements(program, &program.reached(&roots), &|k| format!("a{k}")));
    let values: Vec<String> = program.outputs.iter().map(|o| format!("v{}", o.node)).collect();
    let _ = writeln!(s, "    return array<f32, {outputs}>({});\n}}", values.join(", "));
    if dtype.is_half() {
        s.push_str(&half_map(program, stored, &targets, &roots));
        return s;
    }
    let _ = writeln!(s, "@compute @workgroup_size({WORKGROUP})");
    s.push_str("fn expr_map(@builtin(global_invocation_id) id: vec3<u32>) {\n");
    s.push_str("    let q = id.x + id.y * params.row;\n    if (q >= (params.n + 3u) / 4u) { return; }\n");
    for k in 0..program.inputs.len() {
        let _ = writeln!(s, "    let x{k} = {};", stored.load(&format!("in{k}[q]")));
    }
    let reached = program.reached(&roots);
    let ranges = finite_ranges(program, &reached, dtype);
    let tested = tested_values(program, &reached, &roots, false, &ranges);
    s.push_str(&vec4_statements(program, &reached, &tested, &ranges));
    s.push_str(PROBE_TEST);
    s.push_str("    if (worst == 0x7f800000u) {\n");
    for lane in ["x", "y", "z", "w"] {
        let args: Vec<String> = (0..program.inputs.len()).map(|k| format!("x{k}.{lane}")).collect();
        let _ = writeln!(s, "        let r{lane} = gw_element({});", args.join(", "));
    }
    for (j, target) in targets.iter().enumerate() {
        let lanes = format!("vec4<f32>(rx[{j}], ry[{j}], rz[{j}], rw[{j}])");
        let _ = writeln!(s, "        {target}[q] = {};", stored.store(&lanes));
    }
    s.push_str("        return;\n    }\n");
    for (target, output) in targets.iter().zip(&program.outputs) {
        let _ = writeln!(s, "    {target}[q] = {};", stored.store(&format!("w{}", output.node)));
    }
    s.push_str("}\n");
    s
}

/// The entry point of [`elementwise_source`] on 16-bit arrays: an invocation reads a `vec4<u32>` (eight elements) of
/// each input, computes each half of it through `gw_quad` (the f32 kernel's body: WGSL's operators on four lanes, the
/// guarded path where a value was special) and writes a `vec4<u32>` of each output. Four elements an invocation, 8
/// bytes a load, left `y = a*x + b` on bf16 at 3239 GB/s through Vulkan on an H200, where f32 arrays moved 4140
/// (docs/results/nvidia-h200/half/). `gw_quad` returns its four elements already rounded: on the common path every
/// output is finite (its root is tested), so the rounding there leaves out the NaN case ([`Stored::store_finite`]).
fn half_map(program: &Program, stored: Stored, targets: &[String], roots: &[usize]) -> String {
    let mut s = String::new();
    let outputs = program.outputs.len();
    let vectors: Vec<String> = (0..program.inputs.len()).map(|k| format!("x{k}: vec4<f32>")).collect();
    let _ = writeln!(s, "fn gw_quad({}) -> array<vec2<u32>, {outputs}> {{", vectors.join(", "));
    let reached = program.reached(roots);
    let ranges = finite_ranges(program, &reached, stored.0);
    let tested = tested_values(program, &reached, roots, false, &ranges);
    s.push_str(&vec4_statements(program, &reached, &tested, &ranges));
    s.push_str(PROBE_TEST);
    s.push_str("    if (worst == 0x7f800000u) {\n");
    for lane in ["x", "y", "z", "w"] {
        let args: Vec<String> = (0..program.inputs.len()).map(|k| format!("x{k}.{lane}")).collect();
        let _ = writeln!(s, "        let r{lane} = gw_element({});", args.join(", "));
    }
    let guarded: Vec<String> =
        (0..outputs).map(|j| stored.store(&format!("vec4<f32>(rx[{j}], ry[{j}], rz[{j}], rw[{j}])"))).collect();
    let _ = writeln!(s, "        return array<vec2<u32>, {outputs}>({});\n    }}", guarded.join(", "));
    let common: Vec<String> = program.outputs.iter().map(|o| stored.store_finite(&format!("w{}", o.node))).collect();
    let _ = writeln!(s, "    return array<vec2<u32>, {outputs}>({});\n}}", common.join(", "));
    let _ = writeln!(s, "@compute @workgroup_size({WORKGROUP})");
    s.push_str("fn expr_map(@builtin(global_invocation_id) id: vec3<u32>) {\n");
    s.push_str("    let q = id.x + id.y * params.row;\n    if (q >= (params.n + 7u) / 8u) { return; }\n");
    for k in 0..program.inputs.len() {
        let _ = writeln!(s, "    let v{k} = in{k}[q];");
    }
    for (half, words) in [("low", "xy"), ("high", "zw")] {
        let args: Vec<String> = (0..program.inputs.len()).map(|k| stored.load(&format!("v{k}.{words}"))).collect();
        let _ = writeln!(s, "    let {half} = gw_quad({});", args.join(", "));
    }
    for (j, target) in targets.iter().enumerate() {
        let _ = writeln!(s, "    {target}[q] = vec4<u32>(low[{j}], high[{j}]);");
    }
    s.push_str("}\n");
    s
}

/// Elements one invocation of an elementwise kernel takes: 16 bytes of each array, four `f32` or eight 16-bit
/// elements.
fn elements_per_invocation(dtype: Dtype) -> u64 {
    16 / dtype.bytes() as u64
}

/// The WGSL that combines every invocation's `acc` of a workgroup into `shared_values[0]`, for invocation 0 to read.
///
/// Without `subgroups`, a tree in workgroup memory: eight halvings, a barrier each. With them (a `sum`, `min` or `max`
/// on a device that has subgroup operations), each subgroup combines its lanes' values at once, its first lane
/// publishes the result, and one more subgroup operation combines those: one barrier instead of eight, which is how the
/// built-in `sum`'s `subgroup` variant outruns its `workgroup` variant (`docs/results/cpu-2-core-lavapipe/`). Special
/// values keep the language's results: a subgroup operation's answer for NaN and infinities is left to the driver, so a
/// `sum` takes NaN where a lane is NaN or infinities of both signs meet, an infinity where one sign does, and a `min`
/// or `max` NaN where a lane is NaN (flags gathered with `subgroupAny`).
fn workgroup_combine(kind: Reduce, subgroups: bool) -> String {
    if !subgroups {
        return format!(
            "    shared_values[local] = acc;\n    workgroupBarrier();\n    for (var stride = {}u; stride > 0u; stride = stride / 2u) {{\n        \
             if (local < stride) {{ shared_values[local] = {}; }}\n        workgroupBarrier();\n    }}\n",
            WORKGROUP / 2,
            join(kind, "shared_values[local]", "shared_values[local + stride]")
        );
    }
    let combine = |value: &str| -> String {
        match kind {
            Reduce::Sum => format!(
                "gw_subgroup_sum(subgroupAny(is_nan({value})), subgroupAny(bitcast<u32>({value}) == 0x7f800000u), \
                 subgroupAny(bitcast<u32>({value}) == 0xff800000u), subgroupAdd({value}))"
            ),
            Reduce::Min => format!("select(subgroupMin({value}), nan_f(), subgroupAny(is_nan({value})))"),
            Reduce::Max => format!("select(subgroupMax({value}), nan_f(), subgroupAny(is_nan({value})))"),
            Reduce::Prod => unreachable!("a product combines through workgroup memory"),
        }
    };
    let identity = number(kind.identity());
    let mut s = String::new();
    let _ = writeln!(s, "    let sg_value = {};", combine("acc"));
    s.push_str("    if (sg_lane == 0u) { shared_values[local / sg_size] = sg_value; }\n    workgroupBarrier();\n");
    // Every subgroup combines the subgroups' values, so that the subgroup operation is reached in uniform control
    // flow; lane j gathers slots j, j + sg_size, ... which covers subgroups of 4 lanes (64 of them) as well as 32.
    let _ = writeln!(s, "    var gathered: f32 = {identity};");
    let _ = writeln!(
        s,
        "    for (var j = sg_lane; j < ({WORKGROUP}u + sg_size - 1u) / sg_size; j = j + sg_size) {{ gathered = {}; }}",
        join(kind, "gathered", "shared_values[j]")
    );
    let _ = writeln!(s, "    let wg_value = {};", combine("gathered"));
    // Every invocation has read the slots before the first overwrites slot 0.
    s.push_str("    workgroupBarrier();\n    if (local == 0u) { shared_values[0] = wg_value; }\n");
    s
}

/// The WGSL of a reduction program. With [`ReductionFinish::SecondPass`], entry points `expr_partials` (one partial
/// per workgroup of a chunk) and `expr_finish` (one workgroup combining the partials, then the post-map); with
/// [`ReductionFinish::LastWorkgroup`], one entry point `expr_reduce` that writes the partials and, in the dispatch
/// of the last chunk, has the last of its workgroups to finish combine them ([`ReductionFinish`] says why and where).
///
/// The first pass reads its inputs as `array<vec4<f32>>`, four elements a load as the elementwise kernels do, and
/// issues [`LOADS_IN_FLIGHT`] loads a trip before using any. Like the elementwise kernels, it computes a `vec4` of
/// terms with WGSL's operators (`gw_terms`) and, when no value on the way was special, combines them into four
/// lane accumulators with WGSL's operators; a trip with a special value is folded element by element through the
/// guarded helpers (`gw_fold`), and so are the few `vec4`s of each invocation past its last whole trip (the last of
/// them partial for a length that is not a multiple of four), after the main loop. Where no value needs a test
/// (a `sum` or a `prod` whose terms pass a NaN or an infinity on, [`tested_values`]), the main loop has no branch.
/// The lanes join the guarded accumulator at the end. Each of these steps (four `vec4`s a trip, the common path, no
/// test and no branch in the main loop) brought `s = sum(x*x)` closer to the built-in `sum`
/// (`docs/results/nvidia-h200/README.md`, "Why the code is shaped so").
///
/// With `subgroups` (a device with subgroup operations), a workgroup combines a `sum`, `min` or `max` as the built-in
/// `sum`'s `subgroup` variant does ([`workgroup_combine`]); a `prod`, and every reduction without them, through a tree
/// in workgroup memory.
pub fn reduction_source(program: &Program, subgroups: bool, dtype: Dtype, finish: ReductionFinish) -> String {
    let stored = Stored(dtype);
    let reduction = program.reduction.as_ref().expect("a reduction program");
    let kind = reduction.kind;
    let identity = number(kind.identity());
    let mut s = params_struct(program);
    s.push_str("@group(0) @binding(0) var<uniform> params: Params;\n");
    for k in 0..program.inputs.len() {
        let _ = writeln!(s, "@group(0) @binding({}) var<storage, read> in{k}: {};", k + 1, stored.array_type());
    }
    let partials = program.inputs.len() + 1;
    let one_pass = finish == ReductionFinish::LastWorkgroup;
    let float_atomic = finish == ReductionFinish::FloatAtomic;
    if float_atomic {
        // The result's two slots, one added into by this launch (`params.row`), the other zeroed for the next.
        let _ = writeln!(s, "@group(0) @binding({partials}) var<storage, read_write> sums: array<atomic<f32>, 2>;");
    } else if one_pass {
        // The partials are written and read as atomics, which every workgroup sees at once; the counter of the
        // workgroups that have written theirs follows them.
        let _ = writeln!(s, "@group(0) @binding({partials}) var<storage, read_write> partials: array<atomic<u32>>;");
        let _ = writeln!(s, "@group(0) @binding({}) var<storage, read_write> finished: atomic<u32>;", partials + 1);
        s.push_str("var<workgroup> gw_ticket: u32;\n");
    } else {
        let _ = writeln!(s, "@group(0) @binding({partials}) var<storage, read_write> partials: array<f32>;");
    }
    s.push_str(HELPERS);
    s.push_str(stored.helpers());
    let _ = writeln!(s, "var<workgroup> shared_values: array<f32, {WORKGROUP}>;");
    let parameters: Vec<String> = (0..program.inputs.len()).map(|k| format!("a{k}: f32")).collect();
    let _ = writeln!(s, "fn gw_term({}) -> f32 {{", parameters.join(", "));
    s.push_str(&statements(program, &program.reached(&[reduction.body]), &|k| format!("a{k}")));
    let _ = writeln!(s, "    return v{};\n}}", reduction.body);
    let subgroups = subgroups && kind != Reduce::Prod;
    let workgroup_total = workgroup_combine(kind, subgroups);
    // The built-ins a subgroup combine reads, after an entry point's own.
    let lane_builtins = if subgroups {
        ", @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32"
    } else {
        ""
    };
    let term = |lane: &str| -> String {
        let args: Vec<String> = (0..program.inputs.len()).map(|k| format!("x{k}.{lane}")).collect();
        format!("gw_term({})", args.join(", "))
    };
    // One vec4 of every input folded into an accumulator, counting only the lanes below the length.
    let vectors: Vec<String> = (0..program.inputs.len()).map(|k| format!("x{k}: vec4<f32>")).collect();
    let _ = writeln!(s, "fn gw_fold(start: f32, first: u32, {}) -> f32 {{\n    var acc = start;", vectors.join(", "));
    s.push_str("    if (first + 3u < params.n) {\n");
    for lane in ["x", "y", "z", "w"] {
        let _ = writeln!(s, "        acc = {};", join(kind, "acc", &term(lane)));
    }
    s.push_str("    } else {\n");
    for (l, lane) in ["x", "y", "z", "w"].iter().enumerate() {
        let _ = writeln!(s, "        if (first + {l}u < params.n) {{ acc = {}; }}", join(kind, "acc", &term(lane)));
    }
    s.push_str("    }\n    return acc;\n}\n");
    // The common path: one vec4 of terms computed with WGSL's operators, and whether a value on the way was special.
    let _ = writeln!(s, "struct GwTerms {{ value: vec4<f32>, special: bool }}");
    let _ = writeln!(s, "fn gw_terms({}) -> GwTerms {{", vectors.join(", "));
    // The terms of a sum or a product go into the accumulators with WGSL's `+` and `*`, which carry a NaN or an
    // infinity to the result; a min or a max does not (WGSL's `min` of a NaN may be either operand).
    let terms_pass_on = matches!(kind, Reduce::Sum | Reduce::Prod);
    let reached = program.reached(&[reduction.body]);
    let ranges = finite_ranges(program, &reached, dtype);
    let tested = tested_values(program, &reached, &[reduction.body], terms_pass_on, &ranges);
    let terms_tested = tested.contains(&true);
    s.push_str(&vec4_statements(program, &reached, &tested, &ranges));
    s.push_str(PROBE_TEST);
    let _ = writeln!(s, "    return GwTerms(w{}, worst == 0x7f800000u);\n}}", reduction.body);
    let combine4 = |a: &str, b: &str| match kind {
        Reduce::Sum => format!("({a} + {b})"),
        Reduce::Prod => format!("({a} * {b})"),
        Reduce::Min => format!("min({a}, {b})"),
        Reduce::Max => format!("max({a}, {b})"),
    };
    let _ = writeln!(s, "@compute @workgroup_size({WORKGROUP})");
    let first_entry = if one_pass || float_atomic { "expr_reduce" } else { "expr_partials" };
    let _ = write!(
        s,
        "fn {first_entry}(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, \
         @builtin(num_workgroups) groups: vec3<u32>",
    );
    let _ = writeln!(s, "{lane_builtins}) {{");
    let _ = writeln!(
        s,
        "    let local = lid.x;\n    var acc: f32 = {identity};\n    let quads = (params.n + 3u) / 4u;\n    \
         let grid_stride = groups.x * {WORKGROUP}u;"
    );
    // The lanes' own accumulators of the common path, started at the identity through the run-time zero so that no
    // compiler folds an infinite identity (min's, max's) away.
    let _ = writeln!(s, "    var acc4 = vec4<f32>(bitcast<f32>({:#010x}u + params.zero));", kind.identity().to_bits());
    // The main loop: LOADS_IN_FLIGHT whole vec4s of each input a trip, loaded before any is folded, so that they are
    // in flight together. It stops where a trip would reach past the last whole vec4; the vec4s this invocation has
    // left (at most LOADS_IN_FLIGHT, the last one possibly partial) are folded element by element after it.
    let _ = writeln!(s, "    let whole = params.n / 4u;\n    var q = wid.x * {WORKGROUP}u + local;");
    let _ = writeln!(
        s,
        "    for (; q + {}u * grid_stride < whole; q = q + {LOADS_IN_FLIGHT}u * grid_stride) {{",
        LOADS_IN_FLIGHT - 1
    );
    for j in 0..LOADS_IN_FLIGHT {
        for k in 0..program.inputs.len() {
            let _ = writeln!(s, "        let x{k}_{j} = {};", stored.load(&format!("in{k}[q + {j}u * grid_stride]")));
        }
    }
    // The common path: no value on the way special, every term combined with WGSL's operators; otherwise the trip's
    // vec4s are folded element by element. Where no value needs a test ([`tested_values`]: `s = sum(x*x)`), there
    // is no other path, and no branch: even a branch never taken costs time on a GPU, and on lavapipe a large part
    // of the kernel's.
    let args = |j: u32| (0..program.inputs.len()).map(|k| format!("x{k}_{j}")).collect::<Vec<_>>().join(", ");
    let mut combined = "acc4".to_owned();
    let mut special = Vec::new();
    for j in 0..LOADS_IN_FLIGHT {
        let _ = writeln!(s, "        let t{j} = gw_terms({});", args(j));
        combined = combine4(&combined, &format!("t{j}.value"));
        special.push(format!("t{j}.special"));
    }
    if terms_tested {
        let _ = writeln!(s, "        if ({}) {{", special.join(" || "));
        for j in 0..LOADS_IN_FLIGHT {
            let _ = writeln!(s, "            acc = gw_fold(acc, 4u * (q + {j}u * grid_stride), {});", args(j));
        }
        let _ = writeln!(s, "        }} else {{\n            acc4 = {combined};\n        }}");
    } else {
        let _ = writeln!(s, "        acc4 = {combined};");
    }
    s.push_str("    }\n");
    let tail_args: Vec<String> = (0..program.inputs.len()).map(|k| stored.load(&format!("in{k}[q]"))).collect();
    let _ = writeln!(
        s,
        "    for (; q < quads; q = q + grid_stride) {{\n        acc = gw_fold(acc, 4u * q, {});\n    }}",
        tail_args.join(", ")
    );
    let lanes = join(kind, &join(kind, "acc4.x", "acc4.y"), &join(kind, "acc4.z", "acc4.w"));
    let _ = writeln!(s, "    acc = {};", join(kind, "acc", &lanes));
    s.push_str(&workgroup_total);
    // The finish: one workgroup combines `count` partials, read by `partial(i)`, applies the post-map and stores
    // the result after them. Each invocation issues its LOADS_IN_FLIGHT loads of a trip before combining any (an
    // index past the end reads the last partial again, left out of the combine), so that a workgroup's reading of
    // 1024 partials costs one trip to memory rather than four one after another: it is the tail of the reduction,
    // which nothing else overlaps.
    let post = statements(program, &program.reached(&[reduction.post]), &|_| "nan_f()".to_owned());
    let finish_body = |count: &str, partial: &dyn Fn(&str) -> String, store: &dyn Fn(&str, &str) -> String| {
        let mut f = String::new();
        let _ = writeln!(f, "    for (var i = local; i < {count}; i = i + {}u) {{", LOADS_IN_FLIGHT * WORKGROUP);
        for j in 0..LOADS_IN_FLIGHT {
            let index = if j == 0 { "i".to_owned() } else { format!("min(i + {}u, {count} - 1u)", j * WORKGROUP) };
            let _ = writeln!(f, "        let p{j} = {};", partial(&index));
        }
        let _ = writeln!(f, "        acc = {};", join(kind, "acc", "p0"));
        for j in 1..LOADS_IN_FLIGHT {
            let _ = writeln!(
                f,
                "        if (i + {}u < {count}) {{ acc = {}; }}",
                j * WORKGROUP,
                join(kind, "acc", &format!("p{j}"))
            );
        }
        f.push_str("    }\n");
        f.push_str(&workgroup_total);
        f.push_str("    if (local == 0u) {\n        let reduced = shared_values[0];\n");
        for line in post.lines() {
            let _ = writeln!(f, "    {line}");
        }
        let _ = writeln!(f, "{}    }}", store(count, &format!("v{}", reduction.post)));
        f
    };
    if float_atomic {
        // The first workgroup of the first chunk zeroes the slot the next launch adds into; the slot this launch adds
        // into was zeroed by the launch before (or is the buffer's first zero).
        s.push_str(
            "    if (local == 0u) {\n        atomicAdd(&sums[params.row], shared_values[0]);\n        \
             if (params.base == 0u && wid.x == 0u) { atomicStore(&sums[1u - params.row], 0.0); }\n    }\n}\n",
        );
        return s;
    }
    if !one_pass {
        s.push_str("    if (local == 0u) { partials[params.base + wid.x] = shared_values[0]; }\n}\n");
        // The finish: params.n is the number of partials; the result goes after them.
        let _ = writeln!(s, "@compute @workgroup_size({WORKGROUP})");
        let _ = writeln!(s, "fn expr_finish(@builtin(local_invocation_id) lid: vec3<u32>{lane_builtins}) {{");
        let _ = writeln!(s, "    let local = lid.x;\n    var acc: f32 = {identity};");
        s.push_str(&finish_body("params.n", &|i| format!("partials[{i}]"), &|at, value| {
            format!("        partials[{at}] = {value};\n")
        }));
        s.push_str("}\n");
        return s;
    }
    // One pass: every workgroup stores its partial; in the last chunk's dispatch (`params.row` = 1) each then
    // releases it (a storage barrier, device-scoped on Vulkan) before counting itself done, and the
    // workgroup that counts last acquires every partial (a second barrier) and finishes. It resets the counter for
    // the next launch.
    s.push_str(
        "    if (local == 0u) { atomicStore(&partials[params.base + wid.x], bitcast<u32>(shared_values[0])); }\n    \
         if (params.row == 0u) { return; }\n    storageBarrier();\n    \
         if (local == 0u) { gw_ticket = atomicAdd(&finished, 1u); }\n    \
         if (workgroupUniformLoad(&gw_ticket) != groups.x - 1u) { return; }\n    storageBarrier();\n    \
         let count = params.base + groups.x;\n",
    );
    let _ = writeln!(s, "    {{\n    acc = {identity};");
    s.push_str(&finish_body("count", &|i| format!("bitcast<f32>(atomicLoad(&partials[{i}]))"), &|at, value| {
        format!("        atomicStore(&partials[{at}], bitcast<u32>({value}));\n        atomicStore(&finished, 0u);\n")
    }));
    s.push_str("    }\n}\n");
    s
}

/// An expression's data on the device: the input buffers, the outputs (or the partials), and the program.
pub struct ExprOnDevice {
    program: std::sync::Arc<Program>,
    /// How the arrays are stored.
    dtype: Dtype,
    /// The program's pipelines (the map, or a reduction's two passes), looked up once at upload.
    pipelines: Vec<CustomPipeline>,
    n: usize,
    scalars: Vec<f32>,
    inputs: Vec<wgpu::Buffer>,
    /// One buffer per output that does not overwrite an input; or, for a reduction, the partials and the result
    /// (and, finished by its last workgroup, the counter of workgroups done).
    outputs: Vec<wgpu::Buffer>,
    /// How a reduction's partials are combined (as its pipelines were built).
    finish: ReductionFinish,
    /// The dispatches of a launch, made on the first ([`WgpuBackend::plan_expression`]).
    plan: Option<Vec<Dispatch>>,
    /// With [`ReductionFinish::FloatAtomic`], the dispatches of every second launch, which add into the other slot.
    alternate_plan: Option<Vec<Dispatch>>,
    /// Launches enqueued on this data.
    launches: u64,
}

impl WgpuBackend {
    /// How `program`'s reduction is finished here: float atomics only for a plain `sum` where they were asked for,
    /// the backend's fixed-order finish otherwise.
    fn finish_for(&self, program: &Program) -> ReductionFinish {
        match self.reduction_finish {
            ReductionFinish::FloatAtomic if !ReductionFinish::float_atomic_applies(program) => self.fixed_finish,
            finish => finish,
        }
    }

    /// The elements of one chunk of arrays stored as `dtype`: as many as one storage binding holds, at an offset
    /// every binding may start at.
    fn expression_chunk(&self, dtype: Dtype) -> usize {
        let alignment = u64::from(self.limits.min_storage_buffer_offset_alignment).max(16);
        let bytes = self.max_binding_bytes() / alignment * alignment;
        (bytes / dtype.bytes() as u64) as usize
    }

    fn uniform_words(&self, program: &Program, n: u32, row: u32, base: u32, scalars: &[f32]) -> Result<wgpu::Buffer> {
        let groups = program.scalars.len().div_ceil(4).max(1);
        let mut words = vec![n, row, 0, base];
        words.extend(scalars.iter().map(|s| s.to_bits()));
        words.resize(4 + 4 * groups, 0);
        self.scoped("allocating the expression's parameters", || {
            self.device_handle().create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("expression parameters"),
                contents: bytemuck::cast_slice(&words),
                usage: wgpu::BufferUsages::UNIFORM,
            })
        })
    }

    fn expression_pipelines(
        &self,
        program: &Program,
        dtype: Dtype,
        finish: ReductionFinish,
    ) -> Result<Vec<CustomPipeline>> {
        if program.reduction.is_some() {
            let source = reduction_source(program, self.has_subgroups(), dtype, finish);
            match finish {
                ReductionFinish::SecondPass => Ok(vec![
                    self.generated_pipeline(&source, "expr_partials")?,
                    self.generated_pipeline(&source, "expr_finish")?,
                ]),
                ReductionFinish::LastWorkgroup | ReductionFinish::FloatAtomic => {
                    Ok(vec![self.generated_pipeline(&source, "expr_reduce")?])
                }
            }
        } else {
            let source = elementwise_source(program, dtype, self.f16_narrowing());
            Ok(vec![self.generated_pipeline(&source, "expr_map")?])
        }
    }

    /// The dispatches of one launch of `data`: one per chunk, and a reduction's finish where it is a second pass;
    /// `slot` is the result slot a [`ReductionFinish::FloatAtomic`] launch adds into (0 otherwise). Made on the first
    /// launch and kept, so that a launch on resident data records a pass and allocates nothing.
    fn plan_expression(&self, data: &ExprOnDevice, slot: u32) -> Result<Vec<Dispatch>> {
        let program = &data.program;
        let pipelines = &data.pipelines;
        let width = Stored(data.dtype).bytes();
        let bind_range = |pipeline: &CustomPipeline, ranges: &[(u32, &wgpu::Buffer, u64, Option<u64>)]| {
            self.bind_ranges_to(pipeline.pipeline(), pipeline.entry(), ranges)
        };
        let inputs = data.inputs.len() as u32;
        if program.reduction.is_some() {
            // Four elements a load, as for the elementwise kernels: the last vec4 may run into the padding.
            let quad_bytes = 4 * width as u64;
            let chunks = self.reduction_chunks(data.n, data.dtype);
            let last = chunks.len() - 1;
            let mut plan = Vec::with_capacity(chunks.len() + 1);
            let mut partial_base = 0u32;
            for (index, &(start, len, groups)) in chunks.iter().enumerate() {
                self.check_grid((groups, 1, 1))?;
                // `row` tells the one-pass kernel that this dispatch is the last chunk's, whose last workgroup
                // finishes, and the float-atomic kernel which slot it adds into; the two-pass kernel ignores it.
                let row = match data.finish {
                    ReductionFinish::LastWorkgroup => u32::from(index == last),
                    ReductionFinish::FloatAtomic => slot,
                    ReductionFinish::SecondPass => 0,
                };
                let uniform = self.uniform_words(program, len as u32, row, partial_base, &data.scalars)?;
                let mut ranges: Vec<(u32, &wgpu::Buffer, u64, Option<u64>)> = vec![(0, &uniform, 0, None)];
                let size = (len > 0).then(|| (len as u64).div_ceil(4) * quad_bytes);
                for (k, buffer) in data.inputs.iter().enumerate() {
                    ranges.push((k as u32 + 1, buffer, (start * width) as u64, size));
                }
                ranges.push((inputs + 1, &data.outputs[0], 0, None));
                if data.finish == ReductionFinish::LastWorkgroup {
                    ranges.push((inputs + 2, &data.outputs[1], 0, None));
                }
                let group = bind_range(&pipelines[0], &ranges)?;
                plan.push(Dispatch { pipeline: 0, group, grid: (groups, 1), _parameters: uniform });
                partial_base += groups;
            }
            if data.finish == ReductionFinish::SecondPass {
                let uniform = self.uniform_words(program, partial_base, 0, 0, &data.scalars)?;
                // The finish pass reads no input: its automatic layout has the parameters and the partials alone.
                let ranges: Vec<(u32, &wgpu::Buffer, u64, Option<u64>)> =
                    vec![(0, &uniform, 0, None), (inputs + 1, &data.outputs[0], 0, None)];
                let group = bind_range(&pipelines[1], &ranges)?;
                plan.push(Dispatch { pipeline: 1, group, grid: (1, 1), _parameters: uniform });
            }
            return Ok(plan);
        }
        let chunk = self.expression_chunk(data.dtype);
        let per_invocation = elements_per_invocation(data.dtype);
        let limit = self.max_workgroups();
        let starts: Vec<usize> = (0..data.n).step_by(chunk.max(1)).collect();
        let mut plan = Vec::with_capacity(starts.len());
        for &start in &starts {
            let len = chunk.min(data.n - start);
            let offset = (start * width) as u64;
            // 16 bytes an invocation; the last 16 of the buffer may run into its padding. The grid's rows are
            // balanced as the built-in kernels' are (`grid_1d`): filling the first row to the limit left 65534
            // idle workgroups at 2^26 elements and made every expression a fifth slower than `square`.
            let items = (len as u64).div_ceil(per_invocation);
            let (across, down) = grid_1d(items.div_ceil(u64::from(WORKGROUP)), limit)?;
            self.check_grid((across, down, 1))?;
            let uniform = self.uniform_words(program, len as u32, across * WORKGROUP, 0, &data.scalars)?;
            let mut ranges: Vec<(u32, &wgpu::Buffer, u64, Option<u64>)> = vec![(0, &uniform, 0, None)];
            for (k, buffer) in data.inputs.iter().enumerate() {
                ranges.push((k as u32 + 1, buffer, offset, Some(items * 16)));
            }
            for (j, buffer) in data.outputs.iter().enumerate() {
                ranges.push((inputs + 1 + j as u32, buffer, offset, Some(items * 16)));
            }
            let group = bind_range(&pipelines[0], &ranges)?;
            plan.push(Dispatch { pipeline: 0, group, grid: (across, down), _parameters: uniform });
        }
        Ok(plan)
    }

    /// A reduction's chunks of `n` elements stored as `dtype`: where each starts, its length and its workgroups
    /// (one per 256 `vec4`s, at most [`REDUCE_GROUPS`]). An empty array is one chunk of one workgroup, whose
    /// partial is the identity, so that the result is written by the same kernels as any other.
    fn reduction_chunks(&self, n: usize, dtype: Dtype) -> Vec<(usize, usize, u32)> {
        if n == 0 {
            return vec![(0, 0, 1)];
        }
        let chunk = self.expression_chunk(dtype).max(1);
        (0..n)
            .step_by(chunk)
            .map(|start| {
                let len = chunk.min(n - start);
                let quads = (len as u64).div_ceil(4);
                (start, len, quads.div_ceil(u64::from(WORKGROUP)).min(u64::from(REDUCE_GROUPS)) as u32)
            })
            .collect()
    }

    /// One launch: every dispatch of the plan in one compute pass (one submission, timed as one), as the built-in
    /// `sum` records its two passes. wgpu orders the dispatches, so a finish reads the partials every chunk wrote.
    fn run_expression(&self, data: &mut ExprOnDevice) -> Result<()> {
        // Both slots' plans are made on the first launch, so that no later launch (which may be timed) allocates.
        if data.plan.is_none() {
            data.plan = Some(self.plan_expression(data, 0)?);
            if data.finish == ReductionFinish::FloatAtomic {
                data.alternate_plan = Some(self.plan_expression(data, 1)?);
            }
        }
        let alternate = data.finish == ReductionFinish::FloatAtomic && data.launches % 2 == 1;
        let plan = if alternate { &data.alternate_plan } else { &data.plan };
        let (Some(plan), pipelines) = (plan, &data.pipelines) else { return Ok(()) };
        self.submit_pass(
            pipelines[0].entry(),
            |_| {},
            |pass| {
                for dispatch in plan {
                    pass.set_pipeline(pipelines[dispatch.pipeline].pipeline());
                    pass.set_bind_group(0, &dispatch.group, &[]);
                    pass.dispatch_workgroups(dispatch.grid.0, dispatch.grid.1, 1);
                }
            },
        )?;
        data.launches += 1;
        Ok(())
    }
}

/// One dispatch of an expression's launch: which of its pipelines, the bound buffers, and the grid.
struct Dispatch {
    pipeline: usize,
    group: wgpu::BindGroup,
    grid: (u32, u32),
    /// The chunk's parameters, bound in `group`.
    _parameters: wgpu::Buffer,
}

impl Implements<Expression> for WgpuBackend {
    type Resident = ExprOnDevice;

    fn variants(&self) -> Vec<&'static str> {
        vec!["generated"]
    }

    fn best_variant(&self, _: &ExprParams) -> &'static str {
        "generated"
    }

    fn check_size(&self, params: &ExprParams) -> Result<()> {
        let buffers = params.program.inputs.len() + params.program.arrays().1.max(1);
        let limit = self.limits.max_storage_buffers_per_shader_stage as usize;
        if buffers > limit {
            return Err(Error::TooLarge {
                what: format!("an expression of {buffers} arrays"),
                limit: format!("max_storage_buffers_per_shader_stage = {limit} on this adapter"),
            });
        }
        let bytes = Expression::host_bytes(params).unwrap_or(u64::MAX);
        if bytes > self.limits.max_buffer_size.saturating_mul(buffers as u64) || params.n > u32::MAX as usize / 2 {
            return Err(Error::TooLarge {
                what: format!("an expression of {} elements", params.n),
                limit: format!("max_buffer_size = {} bytes per array on this adapter", self.limits.max_buffer_size),
            });
        }
        match self.device_memory() {
            Some(memory) => {
                gpuworthy_core::memory::check_device_memory::<Expression>(params, memory, &self.device().name)
            }
            None => Ok(()),
        }
    }

    fn prepare(&self, variant: &str) -> Result<()> {
        if variant == "generated" { Ok(()) } else { Err(Implements::<Expression>::unknown_variant(self, variant)) }
    }

    /// Generates, validates and builds the program's pipelines: the compile phase.
    fn prepare_for(&self, variant: &str, params: &ExprParams) -> Result<()> {
        Implements::<Expression>::prepare(self, variant)?;
        self.expression_pipelines(&params.program, params.dtype, self.finish_for(&params.program)).map(drop)
    }

    fn upload(&self, input: &ExprInput) -> Result<ExprOnDevice> {
        Expression::validate(input)?;
        Implements::<Expression>::check_size(self, &input.params)?;
        let program = std::sync::Arc::clone(&input.params.program);
        // Compile first, so that an expression the shader compiler refuses is an error before any data moves.
        let dtype = input.params.dtype;
        let finish = self.finish_for(&program);
        let pipelines = self.expression_pipelines(&program, dtype, finish)?;
        let n = input.params.n;
        let inputs = input
            .arrays
            .iter()
            .enumerate()
            .map(|(k, a)| self.storage_with(&format!("expression input {k}"), a.as_bytes()))
            .collect::<Result<Vec<_>>>()?;
        let outputs = if finish == ReductionFinish::FloatAtomic && program.reduction.is_some() {
            vec![self.storage_zeroed("expression result slots", 8)?]
        } else if program.reduction.is_some() {
            let partials = self.reduction_chunks(n, dtype).iter().map(|c| c.2 as usize).sum::<usize>() + 1;
            let mut buffers = vec![self.storage_zeroed("expression partials", 4 * partials as u64)?];
            if finish == ReductionFinish::LastWorkgroup {
                buffers.push(self.storage_zeroed("expression workgroups done", 4)?);
            }
            buffers
        } else {
            program
                .outputs
                .iter()
                .filter(|o| program.overwrites(o).is_none())
                .map(|_| self.storage_zeroed("expression output", (dtype.bytes() * n) as u64))
                .collect::<Result<Vec<_>>>()?
        };
        self.flush_uploads();
        let scalars = input.params.scalars.clone();
        Ok(ExprOnDevice {
            program,
            dtype,
            pipelines,
            n,
            scalars,
            inputs,
            outputs,
            finish,
            plan: None,
            alternate_plan: None,
            launches: 0,
        })
    }

    fn launch(&self, variant: &str, data: &mut ExprOnDevice) -> Result<()> {
        if variant != "generated" {
            return Err(Implements::<Expression>::unknown_variant(self, variant));
        }
        if data.n == 0 && data.program.reduction.is_none() {
            return Ok(());
        }
        self.run_expression(data)
    }

    fn download(&self, data: &mut ExprOnDevice) -> Result<Outputs> {
        let program = &data.program;
        if program.reduction.is_some() && data.finish == ReductionFinish::FloatAtomic {
            // The last launch's slot: 0, 1, 0, ... (and slot 0, zero, before any launch).
            let slots: Vec<f32> = self.read_buffers(&[(&data.outputs[0], 8)])?;
            return Ok(Outputs::Reduction(slots[(data.launches.max(1) - 1) as usize % 2]));
        }
        if program.reduction.is_some() {
            // The finish writes the result after the partials it combined.
            let count: usize = self.reduction_chunks(data.n, data.dtype).iter().map(|c| c.2 as usize).sum();
            let values: Vec<f32> = self.read_buffers(&[(&data.outputs[0], 4 * (count as u64 + 1))])?;
            return Ok(Outputs::Reduction(values[count]));
        }
        let mut buffers = Vec::with_capacity(program.outputs.len());
        let mut own = data.outputs.iter();
        for output in &program.outputs {
            buffers.push(match program.overwrites(output) {
                Some(k) => &data.inputs[k],
                None => own.next().ok_or_else(|| Error::Device {
                    backend: BackendKind::Wgpu,
                    message: "an expression output has no buffer".into(),
                })?,
            });
        }
        let bytes = (data.dtype.bytes() * data.n) as u64;
        if data.dtype.is_half() {
            let arrays = buffers
                .iter()
                .map(|b| if data.n == 0 { Ok(Vec::new()) } else { self.read_buffers::<u16>(&[(b, bytes)]) })
                .collect::<Result<Vec<_>>>()?;
            return Ok(Outputs::Half { dtype: data.dtype, arrays });
        }
        let arrays = buffers
            .iter()
            .map(|b| if data.n == 0 { Ok(Vec::new()) } else { self.read_buffers::<f32>(&[(b, bytes)]) })
            .collect::<Result<Vec<_>>>()?;
        Ok(Outputs::Elementwise(arrays))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuworthy_core::Precision;
    use gpuworthy_core::expr::{CONFORMANCE_LENGTHS, Expr, HostArray};
    use std::sync::Arc;

    /// Both roundings to f16 the shaders can take agree with Rust's on every case the probe packs: the integer one
    /// always (it is the fallback wherever `pack2x16float` is not exact), `pack2x16float` where the probe chose it.
    /// The conformance tests then round every f16 bit pattern through whichever this adapter uses.
    #[test]
    fn both_roundings_to_f16_round_to_nearest_even_where_they_are_used() {
        let Some(backend) = BackendKind::Wgpu.opened_or_skipped(WgpuBackend::new()) else { return };
        let mut values = pack_probe_values();
        values.resize(values.len().next_multiple_of(4), 0.0);
        for (helpers, used) in [(F16_HELPERS, true), (F16_PACK_HELPERS, backend.f16_narrowing() == F16Narrowing::Pack)]
        {
            if !used {
                eprintln!(
                    "{}: pack2x16float does not round to nearest even here: not used",
                    backend.adapter_info().name
                );
                continue;
            }
            let source = format!(
                "@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;\n\
                 @group(0) @binding(1) var<storage, read_write> y: array<vec2<u32>>;\n{helpers}\n\
                 @compute @workgroup_size(64) fn narrow(@builtin(global_invocation_id) id: vec3<u32>) {{\n\
                 if (id.x < arrayLength(&x)) {{ y[id.x] = narrow_f16(x[id.x]); }} }}"
            );
            let pipeline = backend.custom_pipeline(&source, "narrow").unwrap();
            let x = backend.storage_buffer("x", &values).unwrap();
            let y = backend.zeroed_storage_buffer("y", 2 * values.len() as u64).unwrap();
            let group = backend.bind_buffers(&pipeline, &[(0, &x), (1, &y)]).unwrap();
            backend.dispatch(&pipeline, &group, ((values.len() as u32 / 4).div_ceil(64), 1, 1)).unwrap();
            let words: Vec<u32> = backend.read_buffer(&y, values.len() / 2).unwrap();
            for (i, &x) in values.iter().enumerate() {
                let got = (words[i / 2] >> (16 * (i % 2))) as u16;
                let want = Dtype::F16.encode(x);
                assert!(
                    got == want || (x.is_nan() && Dtype::F16.decode(got).is_nan()),
                    "{}: {x:e} ({:#010x}) rounded to {got:#06x}, want {want:#06x}",
                    if helpers == F16_PACK_HELPERS { "pack2x16float" } else { "integer rounding" },
                    x.to_bits()
                );
            }
        }
    }

    /// The roundings the common path takes (`narrow_bf16_finite`, `narrow_f16_finite`) agree with Rust's on every
    /// finite case: for bf16 every finite value of either sign, the midpoint after it and the `f32` values on either
    /// side of that midpoint (the last midpoint overflows to infinity); for f16 the probe's finite cases.
    #[test]
    fn the_roundings_of_finite_values_round_to_nearest_even() {
        let Some(backend) = BackendKind::Wgpu.opened_or_skipped(WgpuBackend::new()) else { return };
        let mut bf16_cases = Vec::new();
        for bits in 0u32..0x7f80 {
            let midpoint = (bits << 16) | 0x8000;
            for x in [bits << 16, midpoint, midpoint - 1, midpoint + 1].map(f32::from_bits) {
                bf16_cases.extend([x, -x]);
            }
        }
        let f16_cases: Vec<f32> = pack_probe_values().into_iter().filter(|x| x.is_finite()).collect();
        let mut roundings = vec![(Dtype::Bf16, BF16_HELPERS, bf16_cases), (Dtype::F16, F16_HELPERS, f16_cases.clone())];
        if backend.f16_narrowing() == F16Narrowing::Pack {
            roundings.push((Dtype::F16, F16_PACK_HELPERS, f16_cases));
        }
        for (dtype, helpers, mut values) in roundings {
            values.resize(values.len().next_multiple_of(4), 0.0);
            let function = if dtype == Dtype::Bf16 { "narrow_bf16_finite" } else { "narrow_f16_finite" };
            let source = format!(
                "@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;\n\
                 @group(0) @binding(1) var<storage, read_write> y: array<vec2<u32>>;\n{helpers}\n\
                 @compute @workgroup_size(64) fn narrow(@builtin(global_invocation_id) id: vec3<u32>) {{\n\
                 if (id.x < arrayLength(&x)) {{ y[id.x] = {function}(x[id.x]); }} }}"
            );
            let pipeline = backend.custom_pipeline(&source, "narrow").unwrap();
            let x = backend.storage_buffer("x", &values).unwrap();
            let y = backend.zeroed_storage_buffer("y", 2 * values.len() as u64).unwrap();
            let group = backend.bind_buffers(&pipeline, &[(0, &x), (1, &y)]).unwrap();
            backend.dispatch(&pipeline, &group, ((values.len() as u32 / 4).div_ceil(64), 1, 1)).unwrap();
            let words: Vec<u32> = backend.read_buffer(&y, values.len() / 2).unwrap();
            for (i, &x) in values.iter().enumerate() {
                let got = (words[i / 2] >> (16 * (i % 2))) as u16;
                let want = dtype.encode(x);
                assert_eq!(
                    got,
                    want,
                    "{function}: {x:e} ({:#010x}) rounded to {got:#06x}, want {want:#06x}",
                    x.to_bits()
                );
            }
        }
    }

    const CASES: [(&str, &[&str], &[f32]); 11] = [
        ("y = erf(x) + expm1(x) + log1p(abs(x)) + sinh(x * 3) - cosh(x * 3)", &[], &[]),
        ("y = atan(x * 3); z = atan2(x, y - 0.5) + asin(x * 0.9) + acos(x * 0.9)", &[], &[]),
        ("y = a * x + b", &["a", "b"], &[2.0, 1.0]),
        ("y = exp(-x * x) * sin(3 * x)", &[], &[]),
        ("let t = x - m; y = where(t > 0, t * t, -t) / (s * s); z = fma(x, y, 1)", &["m", "s"], &[0.1, 0.7]),
        ("y = pow(x, 3) + pow(abs(x), 0.5) + sign(x) + round(x * 4) + min(x, nan) + 1 / (x - x)", &[], &[]),
        ("y = a * x + y", &["a"], &[3.0]),
        ("s = sum(x * y)", &[], &[]),
        ("r = sqrt(sum(x * x)) / 2", &[], &[]),
        ("p = prod(1 + x / 100)", &[], &[]),
        ("m = max(x - y)", &[], &[]),
    ];

    fn check_all(backend: &WgpuBackend, lengths: &[usize], reductions_only: bool) {
        for (source, scalars, values) in CASES {
            let program = Arc::new(Expr::parse(source).unwrap().bind(scalars).unwrap());
            if reductions_only && program.reduction.is_none() {
                continue;
            }
            for (&n, dtype) in lengths.iter().flat_map(|n| Dtype::ALL.map(|d| (n, d))) {
                let params = ExprParams::new(Arc::clone(&program), n, values.to_vec()).in_dtype(dtype);
                let input = Expression::generate(&params, 5).unwrap();
                let expected = Expression::reference(&input).unwrap();
                let output = Implements::<Expression>::run(backend, "generated", &input)
                    .unwrap_or_else(|e| panic!("{source} at {n} in {dtype}: {e}"));
                Expression::check(&input, &expected, &output, Precision::Fp32)
                    .unwrap_or_else(|e| panic!("{source} at {n} in {dtype}: {e}"));
            }
        }
    }

    /// Every case at every conformance length, and past a binding (a cap of 1 MiB makes chunks of 262144 elements);
    /// the reductions in both forms of their finish, whichever this adapter uses.
    #[test]
    fn generated_shaders_match_the_reference_at_every_length_and_across_chunks() {
        let Some(mut backend) = gpuworthy_core::BackendKind::Wgpu.opened_or_skipped(WgpuBackend::new()) else {
            return;
        };
        let options = crate::WgpuOptions { binding_cap: Some(1 << 20), ..crate::WgpuOptions::from_env().unwrap() };
        let mut chunked = WgpuBackend::with_options(&options).unwrap();
        let native = backend.reduction_finish;
        check_all(&backend, &CONFORMANCE_LENGTHS, false);
        check_all(&chunked, &[(1 << 18) * 2 + 5], false);
        for other in [ReductionFinish::SecondPass, ReductionFinish::LastWorkgroup].into_iter().filter(|&f| f != native)
        {
            (backend.reduction_finish, chunked.reduction_finish) = (other, other);
            check_all(&backend, &CONFORMANCE_LENGTHS, true);
            check_all(&chunked, &[(1 << 18) * 2 + 5], true);
        }
    }

    /// With the sum order left free ([`crate::SumOrder::Any`]) on an adapter with float atomics, a plain `sum` adds its
    /// workgroups' totals into one of two slots: the reductions match the reference at every conformance length and
    /// across chunks, a reduction that is not a plain `sum` keeps the fixed order, and launches on resident data
    /// alternate slots, each download giving the last launch's result (a slot left unzeroed, or the other slot read,
    /// gives twice the sum or zero).
    #[test]
    fn sums_in_any_order_alternate_slots_and_match_the_reference() {
        let options = crate::WgpuOptions { sum_order: crate::SumOrder::Any, ..crate::WgpuOptions::from_env().unwrap() };
        let Some(backend) = gpuworthy_core::BackendKind::Wgpu.opened_or_skipped(WgpuBackend::with_options(&options))
        else {
            return;
        };
        if !backend.features.contains(wgpu::Features::SHADER_FLOAT32_ATOMIC) {
            assert_eq!(backend.reduction_finish, backend.fixed_finish);
            eprintln!("skipping: {} has no float atomics, so its sums keep the fixed order", backend.device().name);
            return;
        }
        assert_eq!(backend.reduction_finish, ReductionFinish::FloatAtomic);
        let chunked_options = crate::WgpuOptions { binding_cap: Some(1 << 20), ..options };
        let chunked = WgpuBackend::with_options(&chunked_options).unwrap();
        check_all(&backend, &CONFORMANCE_LENGTHS, true);
        check_all(&chunked, &[(1 << 18) * 2 + 5], true);
        for (source, atomic) in
            [("s = sum(x * z)", true), ("r = sqrt(sum(x * x)) / 2", false), ("m = max(x - y)", false)]
        {
            let program = Expr::parse(source).unwrap().bind(&[]).unwrap();
            assert_eq!(chunked.finish_for(&program) == ReductionFinish::FloatAtomic, atomic, "{source}");
        }
        let program = Arc::new(Expr::parse("s = sum(x * z)").unwrap().bind(&[]).unwrap());
        let input = Expression::generate(&ExprParams::new(program, (1 << 18) * 2 + 7, vec![]), 9).unwrap();
        let expected = Expression::reference(&input).unwrap();
        let mut resident = Implements::<Expression>::upload(&chunked, &input).unwrap();
        for launch in 1..=4 {
            Implements::<Expression>::launch(&chunked, "generated", &mut resident).unwrap();
            let output = Implements::<Expression>::download(&chunked, &mut resident).unwrap();
            Expression::check(&input, &expected, &output, Precision::Fp32)
                .unwrap_or_else(|e| panic!("launch {launch}: {e}"));
        }
        assert_eq!(resident.plan.as_ref().map(Vec::len), Some(3));
        assert_eq!(resident.alternate_plan.as_ref().map(Vec::len), Some(3));
    }

    #[test]
    fn an_elementwise_kernel_computes_on_vec4s_and_guards_only_where_a_value_is_special() {
        let program = Expr::parse("y = x / z + 2").unwrap().bind(&[]).unwrap();
        let source = elementwise_source(&program, Dtype::F32, F16Narrowing::Integer);
        crate::validate_wgsl(&source, "expr_map").unwrap();
        let map = &source[source.find("fn expr_map").unwrap()..];
        // The common path: operators on vec4s, no helper, one test of the exponents before the guarded path.
        let common = &map[..map.find("if (worst == 0x7f800000u)").unwrap()];
        assert!(common.contains("vec4<f32> = (w") && !common.contains("fdiv(") && !common.contains("fadd("), "{map}");
        // A division's zero operands send the vec4 to the guarded path too.
        assert!(common.contains("0x7fffffffu)) == vec4<u32>(0u)"), "{map}");
        assert_eq!(map.matches("gw_element(").count(), 4, "{map}");
    }

    /// A call whose helper has a branch-free twin takes the four lanes at once on the common path; a call without
    /// one goes through its helper lane by lane; the guarded path calls the helpers either way.
    #[test]
    fn calls_with_a_branch_free_twin_take_the_four_lanes_at_once() {
        let program =
            Expr::parse("y = exp(-x*x) * sin(3*x) + clamp(floor(x), -1, 1) + log(x)").unwrap().bind(&[]).unwrap();
        let source = elementwise_source(&program, Dtype::F32, F16Narrowing::Integer);
        crate::validate_wgsl(&source, "expr_map").unwrap();
        let map = &source[source.find("fn expr_map").unwrap()..];
        let common = &map[..map.find("if (worst == 0x7f800000u)").unwrap()];
        for twin in ["fexp4(w", "fsin4_within_reach(w", "floor(w", "min(max(w"] {
            assert!(common.contains(twin), "{twin} missing from {common}");
        }
        assert!(!common.contains("fexp(w") && !common.contains("fsin(w"), "{common}");
        assert!(common.contains("flog(w") && common.contains(".x), flog(w"), "{common}");
        let element = &source[source.find("fn gw_element").unwrap()..source.find("fn expr_map").unwrap()];
        assert!(element.contains("fexp(") && element.contains("fsin(") && !element.contains("fexp4("), "{element}");
    }

    /// The dispatches made on the first launch serve every later one: launching resident data again gives the same
    /// result, for a map over several chunks and for a reduction in either form of its finish. Each launch computes
    /// the result afresh (the partials and the result are spoiled before the last), and a one-pass reduction leaves
    /// its counter of finished workgroups at zero for the next.
    #[test]
    fn launching_resident_data_again_reuses_its_dispatches_and_gives_the_same_result() {
        let options = crate::WgpuOptions { binding_cap: Some(1 << 20), ..crate::WgpuOptions::from_env().unwrap() };
        let Some(mut backend) =
            gpuworthy_core::BackendKind::Wgpu.opened_or_skipped(WgpuBackend::with_options(&options))
        else {
            return;
        };
        let cases = [
            ("y = x * 3 + z", ReductionFinish::SecondPass, 3),
            ("s = sum(x * z)", ReductionFinish::SecondPass, 4),
            ("s = sum(x * z)", ReductionFinish::LastWorkgroup, 3),
        ];
        for (source, finish, dispatches) in cases {
            backend.reduction_finish = finish;
            let program = Arc::new(Expr::parse(source).unwrap().bind(&[]).unwrap());
            let params = ExprParams::new(program, (1 << 18) * 2 + 7, vec![]);
            let input = Expression::generate(&params, 9).unwrap();
            let expected = Expression::reference(&input).unwrap();
            let mut resident = Implements::<Expression>::upload(&backend, &input).unwrap();
            for launch in 0..3 {
                if launch == 2 && input.params.program.reduction.is_some() {
                    let spoiled = vec![0xffu8; resident.outputs[0].size() as usize];
                    backend.queue().write_buffer(&resident.outputs[0], 0, &spoiled);
                }
                Implements::<Expression>::launch(&backend, "generated", &mut resident).unwrap();
            }
            assert_eq!(resident.plan.as_ref().map(Vec::len), Some(dispatches), "{source}, {finish:?}");
            let output = Implements::<Expression>::download(&backend, &mut resident).unwrap();
            Expression::check(&input, &expected, &output, Precision::Fp32)
                .unwrap_or_else(|e| panic!("{source}, {finish:?}: {e}"));
            if finish == ReductionFinish::LastWorkgroup {
                let counter: Vec<u32> = backend.read_buffers(&[(&resident.outputs[1], 4)]).unwrap();
                assert_eq!(counter, [0], "{source}: the counter of finished workgroups was not reset");
            }
        }
    }

    /// How many values of `source`'s common path have their exponents tested, its results tested or, with
    /// `roots_pass_on`, passing a NaN or an infinity on to an accumulator.
    fn tests_in(source: &str, scalars: &[&str], roots_pass_on: bool) -> usize {
        tests_in_dtype(source, scalars, roots_pass_on, Dtype::F32)
    }

    /// [`tests_in`] with the inputs stored as `dtype`.
    fn tests_in_dtype(source: &str, scalars: &[&str], roots_pass_on: bool, dtype: Dtype) -> usize {
        let program = Expr::parse(source).unwrap().bind(scalars).unwrap();
        let roots: Vec<usize> = match &program.reduction {
            Some(reduction) => vec![reduction.body],
            None => program.outputs.iter().map(|o| o.node).collect(),
        };
        let reached = program.reached(&roots);
        let ranges = finite_ranges(&program, &reached, dtype);
        tested_values(&program, &reached, &roots, roots_pass_on, &ranges).iter().filter(|t| **t).count()
    }

    /// A value is left untested where it cannot be special while the tested values are finite, or where its one use
    /// passes a NaN or an infinity on: `+`, `-`, `*` with an input, a scalar or a finite non-zero constant, `t + t`,
    /// `t * t` and `t * -t`. Every other special value is tested, and so is every special term of a `min` or a `max`.
    #[test]
    fn only_values_that_may_be_special_and_hide_it_are_tested() {
        // Horner: the input once (its use `(...)*x` multiplies two computed values) and the result, which may
        // overflow; on f16 arrays the input alone, after which the polynomial of 8 terms cannot overflow.
        let horner = "y = ((0.5*x + 0.25)*x + 0.125)*x + 1";
        assert_eq!(tests_in(horner, &[], false), 2);
        assert_eq!(tests_in_dtype(horner, &[], false, Dtype::F16), 1);
        // a and x pass on to `a*x`, which passes on to `+ b`; b's use adds a computed value, so b is tested.
        assert_eq!(tests_in("y = a*x + b", &["a", "b"], false), 2);
        // x*1e30's use multiplies by a zero constant, which a compiler may fold away: it is tested, and the result,
        // a finite value times zero, is not.
        assert_eq!(tests_in("y = (x*1e30) * 0", &[], false), 1);
        assert_eq!(tests_in("y = x * 0", &[], false), 1);
        // `t - t` may fold to 0, whether `t` is a computed value or an input mentioned twice; so may `t + -t`.
        assert_eq!(tests_in("let t = x*3; y = t - t", &[], false), 2);
        assert_eq!(tests_in("y = x - x", &[], false), 2);
        assert_eq!(tests_in("y = x + -x", &[], false), 2);
        // On f16 arrays the input is tested where it is read, and `3*x` cannot overflow.
        assert_eq!(tests_in_dtype("let t = x*3; y = t - t", &[], false, Dtype::F16), 1);
        // (`a - a + x` also tests x, added to a computed value.)
        assert_eq!(tests_in("y = a - a + x", &["a"], false), 3);
        // `t * t`, `t * -t` and `t + t` pass on: only the result is tested.
        assert_eq!(tests_in("y = x * x", &[], false), 1);
        assert_eq!(tests_in("y = x * -x", &[], false), 1);
        assert_eq!(tests_in("let t = x*3; y = t + t", &[], false), 1);
        // The operands of a call, a division and a comparison are tested: exp(inf) is inf, but 1/inf is 0. A result
        // that may overflow (`exp`) or be anything (a division) is tested too; `where` of two constants is not.
        assert_eq!(tests_in("y = exp(x*2)", &[], false), 2);
        assert_eq!(tests_in("y = 1 / (x*2)", &[], false), 2);
        assert_eq!(tests_in("y = where(x*2 > 1, 1, 0)", &[], false), 1);
        // An input used by a call is tested once, however often it is mentioned.
        assert_eq!(tests_in("y = exp(x) + exp(x)", &[], false), 4);
        // Two computed operands: neither is a leaf, so both are tested; their product may overflow.
        assert_eq!(tests_in("y = (x*2) * (z*2)", &[], false), 3);
        assert_eq!(tests_in_dtype("y = (x*2) * (z*2)", &[], false, Dtype::F16), 2);
        // A constant that is itself an infinity is special, and passes on to the result.
        assert_eq!(tests_in("y = x + inf", &[], false), 2);
        // A bounded function of a tested value is finite: `tanh`, `sqrt` of a non-negative value.
        assert_eq!(tests_in("y = tanh(x) * 2 + 1", &[], false), 1);
        assert_eq!(tests_in("y = sqrt(x*x + 1)", &[], false), 1);
        assert_eq!(tests_in("y = sqrt(x - 1)", &[], false), 2);
        // The peers' expression: `3*x`, which may overflow, on f32 and bf16 arrays (`-x*x` may too, but `exp` takes
        // its infinity exactly to 0, and a special `x` reaches `3*x`); on f16 arrays the input alone. `sin` of a
        // finite value is in [-1, 1], past the exact reduction's reach too.
        assert_eq!(tests_in("y = exp(-x*x) * sin(3*x)", &[], false), 1);
        assert_eq!(tests_in_dtype("y = exp(-x*x) * sin(3*x)", &[], false, Dtype::Bf16), 1);
        // The operand of `exp`, `exp2` or `tanh` may be left to an infinity the function maps exactly, where the
        // inputs it reads are caught by another test: by `3*x` above, by `x` tested where it is first read for
        // `tanh(x*3) * x` and `exp(-x*x) + x` (whose results, which may overflow, are tested too); not where nothing
        // else reads `x` (`exp(-x*x)` tests `-x*x` or `x`, one test either way), nor for `sin`, which maps no
        // infinity exactly (`sin(x*3) * exp(x)`: `x*3`, `x`, `exp(x)` and the product).
        assert_eq!(tests_in("y = exp(-x*x) + x", &[], false), 2);
        assert_eq!(tests_in("y = exp(-x*x)", &[], false), 1);
        assert_eq!(tests_in("y = tanh(x*3) * x", &[], false), 2);
        assert_eq!(tests_in("y = sin(x*3) * exp(x)", &[], false), 4);
        // A bounded value times a large constant stays finite; times the input, whose magnitude reaches f32::MAX,
        // it may not (the bound of `sin` is widened for the driver's error).
        assert_eq!(tests_in("y = sin(x) * cos(x) * 1e38", &[], false), 1);
        assert_eq!(tests_in("y = sin(x) * x", &[], false), 2);
        assert_eq!(tests_in_dtype("y = exp(-x*x) * sin(3*x)", &[], false, Dtype::F16), 1);
        // The terms of a sum or a product pass on to the accumulator; a min's or a max's do not, but `abs` of a
        // tested difference is finite.
        assert_eq!(tests_in("s = sum(x*x)", &[], true), 0);
        assert_eq!(tests_in("s = sum(x*x)", &[], false), 1);
        assert_eq!(tests_in("r = sqrt(sum(x*x + z*z))", &[], true), 2);
        assert_eq!(tests_in("m = max(abs(x - z))", &[], false), 1);
        assert_eq!(tests_in("m = max(x - z)", &[], false), 1);
    }

    /// A reduction's main loop branches to the guarded fold only where a value needs a test; its tail is folded
    /// after it either way.
    #[test]
    fn a_reduction_whose_terms_need_no_test_has_no_branch_in_its_main_loop() {
        let source = |text: &str| {
            let program = Expr::parse(text).unwrap().bind(&[]).unwrap();
            reduction_source(&program, false, Dtype::F32, ReductionFinish::LastWorkgroup)
        };
        let plain = source("s = sum(x*x)");
        assert!(!plain.contains("t0.special ||") && plain.contains("acc = gw_fold(acc, 4u * q,"), "{plain}");
        let tested = source("m = max(abs(x - z))");
        assert!(tested.contains("if (t0.special ||") && tested.contains("acc = gw_fold(acc, 4u * q,"), "{tested}");
    }

    /// Values that overflow on the way and vanish from a finite-looking result (absorbed by `* 0`, cancelled by
    /// `t - t`, hidden behind a comparison or a division) still give the language's answer on the device, in maps and
    /// in reductions.
    #[test]
    fn a_value_that_overflows_on_the_way_takes_the_guarded_path() {
        let Some(backend) = gpuworthy_core::BackendKind::Wgpu.opened_or_skipped(WgpuBackend::new()) else {
            return;
        };
        let cases = [
            "y = (x*1e30*1e30) * 0",
            "let t = x*1e30*1e30; y = t - t",
            "y = where(x*1e30*1e30 > 1, 1, 0) + x",
            "y = 1 / (x*1e30*1e30) + 1",
            "y = ((x*1e30*1e30 + 1)*x + 2)*0 + x",
            "y = exp(x*100) * 0",
            // A reduction's common path adds whole vec4s of terms; a vec4 with a special term is folded lane by lane.
            "s = sum((x*1e30*1e30) * 0)",
            "s = sum(x*1e30*1e30)",
            "m = min(1 / (x*1e30*1e30))",
            "p = prod(x*1e30)",
            // A NaN on the way, hidden by a comparison: the probe adds magnitudes, and a NaN makes it a NaN.
            "y = where(sqrt(x - 2) > 0, 1, 0)",
            // Infinities of both signs on the way, whose sum would be a NaN rather than an infinity.
            "y = where(x*1e30*1e30 > 1, 1, 0) + where(-x*1e30*1e30 > 1, 2, 0)",
            // Finite values whose magnitudes add past f32's range: the vec4 takes the guarded path, which is exact.
            "y = where(x*3e37 > 1e38, 1, 0) + where(x*3e37 > 1e38, 2, 0)",
        ];
        // Every lane of a vec4 differs: some overflow, some do not, one is zero.
        let values: Vec<f32> = vec![1.0, -1.0, 1e-30, 0.0, 3.0, -2.5, 1e-20, 0.5, 1e10, -1e-10, 7.0, 1e-38];
        for source in cases {
            check_generated(&backend, source, &values, Dtype::F32);
        }
    }

    /// Runs `source`'s generated kernel on `values` stored as `dtype`, and checks it against the reference.
    fn check_generated(backend: &WgpuBackend, source: &str, values: &[f32], dtype: Dtype) {
        let program = Arc::new(Expr::parse(source).unwrap().bind(&[]).unwrap());
        let params = ExprParams::new(program, values.len(), vec![]).in_dtype(dtype);
        let input = ExprInput { params, arrays: vec![HostArray::rounded(dtype, values)] };
        let expected = Expression::reference(&input).unwrap();
        let output = Implements::<Expression>::run(backend, "generated", &input).unwrap();
        Expression::check(&input, &expected, &output, Precision::Fp32)
            .unwrap_or_else(|e| panic!("{source} in {dtype}: {e}"));
    }

    /// `sin` and `cos` take the twin without the far reduction on every storage type; an argument whose range may
    /// pass its reach is added into the probe scaled to overflow it there: `3*x` of a bf16 or f32 `x`, not of an f16
    /// one.
    #[test]
    fn trig_arguments_past_the_reduction_reach_take_the_guarded_path() {
        let program = Expr::parse("y = exp(-x*x) * sin(3*x) + cos(x)").unwrap().bind(&[]).unwrap();
        for dtype in Dtype::ALL {
            let source = elementwise_source(&program, dtype, F16Narrowing::Integer);
            assert!(source.contains("= fsin4_within_reach(w") && source.contains("= fcos4_within_reach(w"), "{source}");
            assert!(!source.contains("= fsin4(") && !source.contains("= fcos4("), "{source}");
            let scaled = source.matches(&format!(") * {FAR_SCALE};")).count();
            assert_eq!(scaled, if dtype == Dtype::F16 { 0 } else { 2 }, "{dtype:?}: {source}");
        }
    }

    /// The tests the value ranges leave out ([`finite_ranges`]) are the ones no input can need: on arrays of every
    /// storage type, inputs that are NaNs, infinities, past the overflow of `x*x` and `3*x`, past the reduction's
    /// reach or zeros of either sign, in every lane of a `vec4`, give the language's answer.
    #[test]
    fn values_left_untested_by_their_ranges_are_finite_on_the_device() {
        let Some(backend) = gpuworthy_core::BackendKind::Wgpu.opened_or_skipped(WgpuBackend::new()) else {
            return;
        };
        let cases = [
            "y = exp(-x*x) * sin(3*x)",
            "y = ((0.5*x + 0.25)*x + 0.125)*x + 1",
            "y = (x*1e30) * 0",
            "let t = x*3; y = t - t",
            "y = where(x*2 > 1, 1, 0)",
            "y = sqrt(x*x + 1) * tanh(x)",
            "y = log(x*x + 1) + cos(x * -x)",
            "m = max(abs(x - 3))",
            "s = sum(exp(-x*x))",
            // Operands of `exp2` and `tanh` left untested, their inputs caught by another test.
            "y = exp2(-x*x) * sin(3*x)",
            "y = tanh(x*3) * x",
        ];
        let (inf, nan) = (f32::INFINITY, f32::NAN);
        let values: Vec<f32> = vec![
            1.0, -1.0, 0.0, -0.0, 3.0, inf, -2.5, 0.5, nan, 7.0, -inf, 0.25, 1e19, -3e38, 65504.0, -40000.0, 300000.0,
            1e-3, 2e19, 3.3e38,
        ];
        for dtype in Dtype::ALL {
            for source in cases {
                check_generated(&backend, source, &values, dtype);
            }
        }
    }

    /// A workgroup's combine (through subgroup operations where the device has them) keeps the language's results
    /// for special values wherever they fall: in any lane, subgroup or workgroup, and in the finish, in either form.
    #[test]
    fn special_values_anywhere_give_the_languages_reduction() {
        let Some(mut backend) = gpuworthy_core::BackendKind::Wgpu.opened_or_skipped(WgpuBackend::new()) else {
            return;
        };
        let n = 300_000;
        let (inf, nan) = (f32::INFINITY, f32::NAN);
        let cases: [(&str, &[(usize, f32)]); 9] = [
            ("s = sum(x)", &[(150_001, inf)]),
            ("s = sum(x)", &[(299_999, -inf)]),
            ("s = sum(x)", &[(3, inf), (299_999, -inf)]),
            ("s = sum(x)", &[(77_777, nan)]),
            ("s = sum(x)", &[(5, inf), (6, inf)]),
            ("m = min(x)", &[(12_345, -inf), (200_000, inf)]),
            ("m = min(x)", &[(5, nan)]),
            ("m = max(x)", &[(299_998, inf)]),
            ("m = max(x)", &[(131_072, nan), (7, -inf)]),
        ];
        for (finish, (source, specials)) in [ReductionFinish::SecondPass, ReductionFinish::LastWorkgroup]
            .into_iter()
            .flat_map(|f| cases.map(|c| (f, c)))
        {
            backend.reduction_finish = finish;
            let mut values: Vec<f32> = (0..n).map(|i| ((i % 1000) as f32 - 500.0) * 1e-3).collect();
            for &(at, value) in specials {
                values[at] = value;
            }
            let program = Arc::new(Expr::parse(source).unwrap().bind(&[]).unwrap());
            let input = ExprInput { params: ExprParams::new(program, n, vec![]), arrays: vec![values.into()] };
            let expected = Expression::reference(&input).unwrap();
            let output = Implements::<Expression>::run(&backend, "generated", &input).unwrap();
            Expression::check(&input, &expected, &output, Precision::Fp32)
                .unwrap_or_else(|e| panic!("{source} with {specials:?}, {finish:?}: {e}"));
        }
    }

    #[test]
    fn the_generated_source_holds_no_text_of_the_expression() {
        let program = Expr::parse("secret_name = 0.1 * secret_input").unwrap().bind(&[]).unwrap();
        let source = elementwise_source(&program, Dtype::F32, F16Narrowing::Integer);
        let kernel = source.split("fn expr_map").nth(1).unwrap();
        assert!(!source.contains("secret") && !kernel.contains("0.1"), "{source}");
        assert!(source.contains(&format!("{:#010x}", 0.1f32.to_bits())), "{source}");
        crate::validate_wgsl(&source, "expr_map").unwrap();
        let sum = Expr::parse("s = sqrt(sum(x * x))").unwrap().bind(&[]).unwrap();
        for subgroups in [false, true] {
            let two_pass = reduction_source(&sum, subgroups, Dtype::F32, ReductionFinish::SecondPass);
            crate::validate_wgsl(&two_pass, "expr_partials").unwrap();
            crate::validate_wgsl(&two_pass, "expr_finish").unwrap();
            let one_pass = reduction_source(&sum, subgroups, Dtype::F32, ReductionFinish::LastWorkgroup);
            crate::validate_wgsl(&one_pass, "expr_reduce").unwrap();
        }
    }
}
