// y = exp(-x*x) * sin(3*x) on bf16 and f16 arrays through Vulkan, eight elements an invocation, as the backend
// generated it before it tested values by their ranges (expr_wgsl_source 'y = exp(-x*x) * sin(3*x)' - bf16 on that
// build; docs/results/nvidia-h200/half/README.md, tuning 18), with the lab's bindings, beside shapes of it that
// each leave one part out, to measure what that part costs: the rounding to bf16 (e_trunc: the upper halves kept as
// they are), the probe and its guarded path (e_noprobe), both, a probe of three values instead of six (e_probe3), four
// elements an invocation instead of eight (e_four), and the f16 form this adapter takes (its pack2x16float rounding,
// e_f16); and shapes with less integer work: the probe's four lanes added before one test of the sum's exponent
// (e_probesum), sin's zero told by a float comparison (e_fzero), both (e_lean). Only e_bf16, e_four, e_f16, e_probesum,
// e_fzero and e_lean are exact for every input. The lab's input is f32 words in [0, 1): the bf16 widening takes each
// word's upper half for one element and the word itself, with its lowest bit set, for the other (two integer operations
// a pair, as the backend's widening); the f16 widening clears each half's two top bits first (values below 2; one
// operation more than the backend's). half_e2.sh runs it.

struct Params { n: u32, row: u32, zero: u32, base: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in0: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> out0: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> in1: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> out1: array<vec2<u32>>;

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
// |x| = 2^18 (the function table's reach), and the rest is off by less than an ulp of the result.
fn reduce_angle(x: f32) -> f32 {
    if (abs(x) > 262144.0) { return x; }
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
fn reduce_angle4(x: vec4<f32>) -> vec4<f32> {
    let k = round(x * 0.15915493667125702);
    let r = ((x - k * 6.28125) - k * 0.0019350051879882812) - k * 3.019916050561733e-7;
    return select(r, x, abs(x) > vec4<f32>(262144.0));
}
fn fsin4(x: vec4<f32>) -> vec4<f32> { return select(sin(reduce_angle4(x)), x, is_zero4(x)); }
fn fcos4(x: vec4<f32>) -> vec4<f32> { return cos(reduce_angle4(x)); }
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


fn widen_bf16(v: vec2<u32>) -> vec4<f32> {
    return bitcast<vec4<f32>>(vec4<u32>(v.x & 0xffff0000u, v.x | 1u, v.y & 0xffff0000u, v.y | 1u));
}
fn widen_f16(v: vec2<u32>) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(v.x & 0x3fff3fffu), unpack2x16float(v.y & 0x3fff3fffu));
}
fn narrow_f16(w: vec4<f32>) -> vec2<u32> { return vec2<u32>(pack2x16float(w.xy), pack2x16float(w.zw)); }
fn narrow_f16_finite(w: vec4<f32>) -> vec2<u32> { return narrow_f16(w); }
fn narrow_bf16_trunc(w: vec4<f32>) -> vec2<u32> {
    let b = bitcast<vec4<u32>>(w);
    return vec2<u32>((b.x >> 16u) | (b.y & 0xffff0000u), (b.z >> 16u) | (b.w & 0xffff0000u));
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

fn gw_element(a0: f32) -> array<f32, 1> {
    let v0: f32 = a0;
    let v1: f32 = fneg(v0);
    let v2: f32 = a0;
    let v3: f32 = fmul(v1, v2);
    let v4: f32 = fexp(v3);
    let v5: f32 = bitcast<f32>(0x40400000u);
    let v6: f32 = a0;
    let v7: f32 = fmul(v5, v6);
    let v8: f32 = fsin(v7);
    let v9: f32 = fmul(v4, v8);
    return array<f32, 1>(v9);
}

fn gw_quad(x0: vec4<f32>) -> array<vec2<u32>, 1> {
    var probe = vec4<f32>(0.0);
    let w0: vec4<f32> = x0;
    probe = probe + abs(w0);
    let w1: vec4<f32> = (-w0);
    let w2: vec4<f32> = x0;
    let w3: vec4<f32> = (w1 * w2);
    probe = probe + abs(w3);
    let w4: vec4<f32> = fexp4(w3);
    probe = probe + abs(w4);
    let w5: vec4<f32> = vec4<f32>(bitcast<f32>(0x40400000u));
    let w6: vec4<f32> = x0;
    let w7: vec4<f32> = (w5 * w6);
    probe = probe + abs(w7);
    let w8: vec4<f32> = fsin4(w7);
    probe = probe + abs(w8);
    let w9: vec4<f32> = (w4 * w8);
    probe = probe + abs(w9);
    let probe_bits = bitcast<vec4<u32>>(probe) & vec4<u32>(0x7f800000u);
    let worst = max(max(probe_bits.x, probe_bits.y), max(probe_bits.z, probe_bits.w));
    if (worst == 0x7f800000u) {
        let rx = gw_element(x0.x);
        let ry = gw_element(x0.y);
        let rz = gw_element(x0.z);
        let rw = gw_element(x0.w);
        return array<vec2<u32>, 1>(narrow_bf16(vec4<f32>(rx[0], ry[0], rz[0], rw[0])));
    }
    return array<vec2<u32>, 1>(narrow_bf16_finite(w9));
}

// fsin4 with its zero told by a float comparison (a finite argument is all the common path keeps): no integer work.
fn fsin4_fzero(x: vec4<f32>) -> vec4<f32> { return select(sin(reduce_angle4(x)), x, x == vec4<f32>(0.0)); }
fn gw_quad_probesum(x0: vec4<f32>) -> array<vec2<u32>, 1> {
    var probe = vec4<f32>(0.0);
    let w0: vec4<f32> = x0;
    probe = probe + abs(w0);
    let w1: vec4<f32> = (-w0);
    let w2: vec4<f32> = x0;
    let w3: vec4<f32> = (w1 * w2);
    probe = probe + abs(w3);
    let w4: vec4<f32> = fexp4(w3);
    probe = probe + abs(w4);
    let w5: vec4<f32> = vec4<f32>(bitcast<f32>(0x40400000u));
    let w6: vec4<f32> = x0;
    let w7: vec4<f32> = (w5 * w6);
    probe = probe + abs(w7);
    let w8: vec4<f32> = fsin4(w7);
    probe = probe + abs(w8);
    let w9: vec4<f32> = (w4 * w8);
    probe = probe + abs(w9);
    let probe_sum = (probe.x + probe.y) + (probe.z + probe.w);
    let worst = bitcast<u32>(probe_sum) & 0x7f800000u;
    if (worst == 0x7f800000u) {
        let rx = gw_element(x0.x);
        let ry = gw_element(x0.y);
        let rz = gw_element(x0.z);
        let rw = gw_element(x0.w);
        return array<vec2<u32>, 1>(narrow_bf16(vec4<f32>(rx[0], ry[0], rz[0], rw[0])));
    }
    return array<vec2<u32>, 1>(narrow_bf16_finite(w9));
}

fn gw_quad_fzero(x0: vec4<f32>) -> array<vec2<u32>, 1> {
    var probe = vec4<f32>(0.0);
    let w0: vec4<f32> = x0;
    probe = probe + abs(w0);
    let w1: vec4<f32> = (-w0);
    let w2: vec4<f32> = x0;
    let w3: vec4<f32> = (w1 * w2);
    probe = probe + abs(w3);
    let w4: vec4<f32> = fexp4(w3);
    probe = probe + abs(w4);
    let w5: vec4<f32> = vec4<f32>(bitcast<f32>(0x40400000u));
    let w6: vec4<f32> = x0;
    let w7: vec4<f32> = (w5 * w6);
    probe = probe + abs(w7);
    let w8: vec4<f32> = fsin4_fzero(w7);
    probe = probe + abs(w8);
    let w9: vec4<f32> = (w4 * w8);
    probe = probe + abs(w9);
    let probe_bits = bitcast<vec4<u32>>(probe) & vec4<u32>(0x7f800000u);
    let worst = max(max(probe_bits.x, probe_bits.y), max(probe_bits.z, probe_bits.w));
    if (worst == 0x7f800000u) {
        let rx = gw_element(x0.x);
        let ry = gw_element(x0.y);
        let rz = gw_element(x0.z);
        let rw = gw_element(x0.w);
        return array<vec2<u32>, 1>(narrow_bf16(vec4<f32>(rx[0], ry[0], rz[0], rw[0])));
    }
    return array<vec2<u32>, 1>(narrow_bf16_finite(w9));
}

fn gw_quad_lean(x0: vec4<f32>) -> array<vec2<u32>, 1> {
    var probe = vec4<f32>(0.0);
    let w0: vec4<f32> = x0;
    probe = probe + abs(w0);
    let w1: vec4<f32> = (-w0);
    let w2: vec4<f32> = x0;
    let w3: vec4<f32> = (w1 * w2);
    probe = probe + abs(w3);
    let w4: vec4<f32> = fexp4(w3);
    probe = probe + abs(w4);
    let w5: vec4<f32> = vec4<f32>(bitcast<f32>(0x40400000u));
    let w6: vec4<f32> = x0;
    let w7: vec4<f32> = (w5 * w6);
    probe = probe + abs(w7);
    let w8: vec4<f32> = fsin4_fzero(w7);
    probe = probe + abs(w8);
    let w9: vec4<f32> = (w4 * w8);
    probe = probe + abs(w9);
    let probe_sum = (probe.x + probe.y) + (probe.z + probe.w);
    let worst = bitcast<u32>(probe_sum) & 0x7f800000u;
    if (worst == 0x7f800000u) {
        let rx = gw_element(x0.x);
        let ry = gw_element(x0.y);
        let rz = gw_element(x0.z);
        let rw = gw_element(x0.w);
        return array<vec2<u32>, 1>(narrow_bf16(vec4<f32>(rx[0], ry[0], rz[0], rw[0])));
    }
    return array<vec2<u32>, 1>(narrow_bf16_finite(w9));
}

fn gw_quad_trunc(x0: vec4<f32>) -> array<vec2<u32>, 1> {
    var probe = vec4<f32>(0.0);
    let w0: vec4<f32> = x0;
    probe = probe + abs(w0);
    let w1: vec4<f32> = (-w0);
    let w2: vec4<f32> = x0;
    let w3: vec4<f32> = (w1 * w2);
    probe = probe + abs(w3);
    let w4: vec4<f32> = fexp4(w3);
    probe = probe + abs(w4);
    let w5: vec4<f32> = vec4<f32>(bitcast<f32>(0x40400000u));
    let w6: vec4<f32> = x0;
    let w7: vec4<f32> = (w5 * w6);
    probe = probe + abs(w7);
    let w8: vec4<f32> = fsin4(w7);
    probe = probe + abs(w8);
    let w9: vec4<f32> = (w4 * w8);
    probe = probe + abs(w9);
    let probe_bits = bitcast<vec4<u32>>(probe) & vec4<u32>(0x7f800000u);
    let worst = max(max(probe_bits.x, probe_bits.y), max(probe_bits.z, probe_bits.w));
    if (worst == 0x7f800000u) {
        let rx = gw_element(x0.x);
        let ry = gw_element(x0.y);
        let rz = gw_element(x0.z);
        let rw = gw_element(x0.w);
        return array<vec2<u32>, 1>(narrow_bf16(vec4<f32>(rx[0], ry[0], rz[0], rw[0])));
    }
    return array<vec2<u32>, 1>(narrow_bf16_trunc(w9));
}
fn gw_quad_noprobe(x0: vec4<f32>) -> array<vec2<u32>, 1> {
    let w0: vec4<f32> = x0;
    let w1: vec4<f32> = (-w0);
    let w2: vec4<f32> = x0;
    let w3: vec4<f32> = (w1 * w2);
    let w4: vec4<f32> = fexp4(w3);
    let w5: vec4<f32> = vec4<f32>(bitcast<f32>(0x40400000u));
    let w6: vec4<f32> = x0;
    let w7: vec4<f32> = (w5 * w6);
    let w8: vec4<f32> = fsin4(w7);
    let w9: vec4<f32> = (w4 * w8);
    return array<vec2<u32>, 1>(narrow_bf16_finite(w9));
}

fn gw_quad_noprobe_trunc(x0: vec4<f32>) -> array<vec2<u32>, 1> {
    let w0: vec4<f32> = x0;
    let w1: vec4<f32> = (-w0);
    let w2: vec4<f32> = x0;
    let w3: vec4<f32> = (w1 * w2);
    let w4: vec4<f32> = fexp4(w3);
    let w5: vec4<f32> = vec4<f32>(bitcast<f32>(0x40400000u));
    let w6: vec4<f32> = x0;
    let w7: vec4<f32> = (w5 * w6);
    let w8: vec4<f32> = fsin4(w7);
    let w9: vec4<f32> = (w4 * w8);
    return array<vec2<u32>, 1>(narrow_bf16_trunc(w9));
}

fn gw_quad_probe3(x0: vec4<f32>) -> array<vec2<u32>, 1> {
    var probe = vec4<f32>(0.0);
    let w0: vec4<f32> = x0;
    let w1: vec4<f32> = (-w0);
    let w2: vec4<f32> = x0;
    let w3: vec4<f32> = (w1 * w2);
    probe = probe + abs(w3);
    let w4: vec4<f32> = fexp4(w3);
    let w5: vec4<f32> = vec4<f32>(bitcast<f32>(0x40400000u));
    let w6: vec4<f32> = x0;
    let w7: vec4<f32> = (w5 * w6);
    probe = probe + abs(w7);
    let w8: vec4<f32> = fsin4(w7);
    let w9: vec4<f32> = (w4 * w8);
    probe = probe + abs(w9);
    let probe_bits = bitcast<vec4<u32>>(probe) & vec4<u32>(0x7f800000u);
    let worst = max(max(probe_bits.x, probe_bits.y), max(probe_bits.z, probe_bits.w));
    if (worst == 0x7f800000u) {
        let rx = gw_element(x0.x);
        let ry = gw_element(x0.y);
        let rz = gw_element(x0.z);
        let rw = gw_element(x0.w);
        return array<vec2<u32>, 1>(narrow_bf16(vec4<f32>(rx[0], ry[0], rz[0], rw[0])));
    }
    return array<vec2<u32>, 1>(narrow_bf16_finite(w9));
}

fn gw_quad_f16(x0: vec4<f32>) -> array<vec2<u32>, 1> {
    var probe = vec4<f32>(0.0);
    let w0: vec4<f32> = x0;
    probe = probe + abs(w0);
    let w1: vec4<f32> = (-w0);
    let w2: vec4<f32> = x0;
    let w3: vec4<f32> = (w1 * w2);
    probe = probe + abs(w3);
    let w4: vec4<f32> = fexp4(w3);
    probe = probe + abs(w4);
    let w5: vec4<f32> = vec4<f32>(bitcast<f32>(0x40400000u));
    let w6: vec4<f32> = x0;
    let w7: vec4<f32> = (w5 * w6);
    probe = probe + abs(w7);
    let w8: vec4<f32> = fsin4(w7);
    probe = probe + abs(w8);
    let w9: vec4<f32> = (w4 * w8);
    probe = probe + abs(w9);
    let probe_bits = bitcast<vec4<u32>>(probe) & vec4<u32>(0x7f800000u);
    let worst = max(max(probe_bits.x, probe_bits.y), max(probe_bits.z, probe_bits.w));
    if (worst == 0x7f800000u) {
        let rx = gw_element(x0.x);
        let ry = gw_element(x0.y);
        let rz = gw_element(x0.z);
        let rw = gw_element(x0.w);
        return array<vec2<u32>, 1>(narrow_f16(vec4<f32>(rx[0], ry[0], rz[0], rw[0])));
    }
    return array<vec2<u32>, 1>(narrow_f16_finite(w9));
}

fn gw_quad_f16_noprobe(x0: vec4<f32>) -> array<vec2<u32>, 1> {
    let w0: vec4<f32> = x0;
    let w1: vec4<f32> = (-w0);
    let w2: vec4<f32> = x0;
    let w3: vec4<f32> = (w1 * w2);
    let w4: vec4<f32> = fexp4(w3);
    let w5: vec4<f32> = vec4<f32>(bitcast<f32>(0x40400000u));
    let w6: vec4<f32> = x0;
    let w7: vec4<f32> = (w5 * w6);
    let w8: vec4<f32> = fsin4(w7);
    let w9: vec4<f32> = (w4 * w8);
    return array<vec2<u32>, 1>(narrow_f16_finite(w9));
}

@compute @workgroup_size(256)
fn e_bf16(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    let v0 = in0[q];
    let low = gw_quad(widen_bf16(v0.xy));
    let high = gw_quad(widen_bf16(v0.zw));
    out0[q] = vec4<u32>(low[0], high[0]);
}

@compute @workgroup_size(256)
fn e_trunc(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    let v0 = in0[q];
    let low = gw_quad_trunc(widen_bf16(v0.xy));
    let high = gw_quad_trunc(widen_bf16(v0.zw));
    out0[q] = vec4<u32>(low[0], high[0]);
}

@compute @workgroup_size(256)
fn e_noprobe(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    let v0 = in0[q];
    let low = gw_quad_noprobe(widen_bf16(v0.xy));
    let high = gw_quad_noprobe(widen_bf16(v0.zw));
    out0[q] = vec4<u32>(low[0], high[0]);
}

@compute @workgroup_size(256)
fn e_noprobe_trunc(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    let v0 = in0[q];
    let low = gw_quad_noprobe_trunc(widen_bf16(v0.xy));
    let high = gw_quad_noprobe_trunc(widen_bf16(v0.zw));
    out0[q] = vec4<u32>(low[0], high[0]);
}

@compute @workgroup_size(256)
fn e_probe3(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    let v0 = in0[q];
    let low = gw_quad_probe3(widen_bf16(v0.xy));
    let high = gw_quad_probe3(widen_bf16(v0.zw));
    out0[q] = vec4<u32>(low[0], high[0]);
}

@compute @workgroup_size(256)
fn e_f16(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    let v0 = in0[q];
    let low = gw_quad_f16(widen_f16(v0.xy));
    let high = gw_quad_f16(widen_f16(v0.zw));
    out0[q] = vec4<u32>(low[0], high[0]);
}

@compute @workgroup_size(256)
fn e_f16_noprobe(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    let v0 = in0[q];
    let low = gw_quad_f16_noprobe(widen_f16(v0.xy));
    let high = gw_quad_f16_noprobe(widen_f16(v0.zw));
    out0[q] = vec4<u32>(low[0], high[0]);
}

@compute @workgroup_size(256)
fn e_four(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 3u) / 4u) { return; }
    out1[q] = gw_quad(widen_bf16(in1[q]))[0];
}
@compute @workgroup_size(256)
fn e_copy(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    out0[q] = in0[q];
}
@compute @workgroup_size(256)
fn e_probesum(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    let v0 = in0[q];
    let low = gw_quad_probesum(widen_bf16(v0.xy));
    let high = gw_quad_probesum(widen_bf16(v0.zw));
    out0[q] = vec4<u32>(low[0], high[0]);
}
@compute @workgroup_size(256)
fn e_fzero(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    let v0 = in0[q];
    let low = gw_quad_fzero(widen_bf16(v0.xy));
    let high = gw_quad_fzero(widen_bf16(v0.zw));
    out0[q] = vec4<u32>(low[0], high[0]);
}
@compute @workgroup_size(256)
fn e_lean(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    let v0 = in0[q];
    let low = gw_quad_lean(widen_bf16(v0.xy));
    let high = gw_quad_lean(widen_bf16(v0.zw));
    out0[q] = vec4<u32>(low[0], high[0]);
}
