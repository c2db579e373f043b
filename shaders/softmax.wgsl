// softmax: for each row r, y[r][c] = exp(x[r][c] - max_r) / sum_c' exp(x[r][c'] - max_r).
//
// Subtracting the row maximum keeps every exponent <= 0, so exp() cannot overflow; the result is mathematically
// unchanged. One workgroup of 256 threads handles one row, striding over its columns (rows can be millions of
// columns long) and combining per-thread results with a tree reduction in workgroup memory.
//
// The ladder is about kernel fusion:
//   softmax_unfused  three kernels (max, exp + sum, normalise) launched one after another; x is read twice and y
//                    is written twice and read once, with the row statistics passed through a buffer.
//   softmax_fused    one kernel using the "online softmax" recurrence: a single sweep finds the maximum and the
//                    sum together, and a second sweep writes y. x is read twice, y written once, nothing else.
//
// Special values: a row containing NaN or +inf, or whose every entry is -inf (no finite maximum), is NaN
// throughout. An individual -inf entry in an otherwise finite row contributes exactly 0. All of these are detected
// on bit patterns, because a compiler may assume floating-point values are never NaN or infinite and fold
// comparisons accordingly.

struct Params {
    rows: u32,
    cols: u32,
    _pad0: u32,
    _pad1: u32,
}

const WG: u32 = 256u;

const NAN_BITS: u32 = 0x7fc00000u;
const POS_INF_BITS: u32 = 0x7f800000u;
const NEG_INF_BITS: u32 = 0xff800000u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
// Used by the unfused kernels only: stats[2r] = row max, stats[2r + 1] = row sum of exp(x - max).
@group(0) @binding(3) var<storage, read_write> stats: array<f32>;
// x and y viewed as vec4s, used by the fused kernel when every row starts on a 16-byte boundary. The host pads the
// buffers to whole vec4s.
@group(0) @binding(4) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> y4: array<vec4<f32>>;

// Workgroup scratch for the unfused kernels' reductions: red_f holds a max or a sum, red_bad a per-thread "row is
// poisoned" flag (NaN or +inf seen). The fused kernel has its own (fused_m, fused_s, fused_bad), sized for its
// larger workgroup.
var<workgroup> red_f: array<f32, WG>;
var<workgroup> red_bad: array<u32, WG>;

// NaN and -inf built from their bit patterns. The bits go through a function-scope `var` so that the bitcast is
// evaluated at run time: a WGSL compiler is allowed to reject a *constant* expression whose value is NaN or
// infinite.
fn nan_f32() -> f32 {
    var bits = NAN_BITS;
    return bitcast<f32>(bits);
}

fn neg_inf_f32() -> f32 {
    var bits = NEG_INF_BITS;
    return bitcast<f32>(bits);
}

fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > POS_INF_BITS;
}

fn is_pos_inf(v: f32) -> bool {
    return bitcast<u32>(v) == POS_INF_BITS;
}

fn is_neg_inf(v: f32) -> bool {
    return bitcast<u32>(v) == NEG_INF_BITS;
}

// The workgroup handles row wid.x + wid.y * nwg.x (the grid is 2D when there are more than 65535 rows).
fn row_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// ---------------------------------------------------------------------------------------------------------------
// Unfused, kernel 1 of 3: the row maximum.
// Each thread keeps the maximum of its strided columns and a flag for NaN/+inf; both are then reduced across the
// workgroup (max for the value, OR for the flag). A poisoned row stores NaN as its maximum, which tells the next
// kernel to produce NaN.
@compute @workgroup_size(WG)
fn softmax_unfused_max(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let row = row_index(wid, nwg);
    // The same for every thread of the workgroup, so returning here skips the barriers for all of them at once.
    if (row >= params.rows) {
        return;
    }
    let cols = params.cols;
    let base = row * cols;

    var m = neg_inf_f32();
    var bad = 0u;
    for (var c = lid.x; c < cols; c += WG) {
        let v = x[base + c];
        if (is_nan(v) || is_pos_inf(v)) {
            bad = 1u;
        } else {
            m = max(m, v);
        }
    }
    red_f[lid.x] = m;
    red_bad[lid.x] = bad;
    workgroupBarrier();

    // Tree reduction: 256 -> 128 -> ... -> 1 values, one barrier per level.
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid.x < stride) {
            red_f[lid.x] = max(red_f[lid.x], red_f[lid.x + stride]);
            red_bad[lid.x] = red_bad[lid.x] | red_bad[lid.x + stride];
        }
        workgroupBarrier();
    }

    if (lid.x == 0u) {
        stats[2u * row] = select(red_f[0], nan_f32(), red_bad[0] != 0u);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Unfused, kernel 2 of 3: y = exp(x - max) and the row sum of those values.
// The row maximum comes back from global memory. If it is NaN (poisoned row) or -inf (no finite entry), the whole
// row and its sum become NaN.
@compute @workgroup_size(WG)
fn softmax_unfused_exp(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let row = row_index(wid, nwg);
    if (row >= params.rows) {
        return;
    }
    let cols = params.cols;
    let base = row * cols;

    let m = stats[2u * row];
    let row_bad = is_nan(m) || is_neg_inf(m);

    var s = 0.0;
    for (var c = lid.x; c < cols; c += WG) {
        var e: f32;
        if (row_bad) {
            e = nan_f32();
        } else {
            let v = x[base + c];
            // exp(-inf) is 0 mathematically; set it explicitly rather than relying on exp() of -inf.
            e = select(exp(v - m), 0.0, is_neg_inf(v));
        }
        y[base + c] = e;
        s = s + e;
    }
    red_f[lid.x] = s;
    workgroupBarrier();

    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid.x < stride) {
            red_f[lid.x] = red_f[lid.x] + red_f[lid.x + stride];
        }
        workgroupBarrier();
    }

    if (lid.x == 0u) {
        stats[2u * row + 1u] = select(red_f[0], nan_f32(), row_bad);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Unfused, kernel 3 of 3: y = y / sum. No reduction, so no barriers; NaN rows stay NaN (NaN / NaN).
@compute @workgroup_size(WG)
fn softmax_unfused_normalize(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let row = row_index(wid, nwg);
    if (row >= params.rows) {
        return;
    }
    let cols = params.cols;
    let base = row * cols;
    let s = stats[2u * row + 1u];
    for (var c = lid.x; c < cols; c += WG) {
        y[base + c] = y[base + c] / s;
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Fused: online softmax.
//
// A running pair (m, s) means "the maximum so far is m and the sum so far is sum exp(v - m)". Adding a value v:
//   v <= m:  s += exp(v - m)
//   v >  m:  the old terms were scaled for the old maximum; rescale them: s = s * exp(m - v) + 1, m = v.
// Two pairs combine the same way: m = max(m1, m2), s = s1 * exp(m1 - m) + s2 * exp(m2 - m). So every thread
// builds a pair from its columns in one read of x, the pairs are combined by a tree reduction, and a second read
// of x writes y = exp(x - m) * (1 / s).
//
// An empty pair (no finite entry seen) is m = -inf, s = 0. It is handled explicitly: exp(m1 - m) with both -inf
// would be exp(NaN).

// Combines (m1, s1) with (m2, s2).
fn online_combine(m1: f32, s1: f32, m2: f32, s2: f32) -> vec2<f32> {
    if (is_neg_inf(m1)) {
        return vec2<f32>(m2, s2);
    }
    if (is_neg_inf(m2)) {
        return vec2<f32>(m1, s1);
    }
    let m = max(m1, m2);
    return vec2<f32>(m, s1 * exp(m1 - m) + s2 * exp(m2 - m));
}

// One value into a running (m, s) pair. NaN and +inf are not added (the caller flags the row instead); -inf adds
// exp(-inf) = 0, that is nothing.
fn online_add(state: vec2<f32>, v: f32) -> vec2<f32> {
    let m = state.x;
    let s = state.y;
    if (is_nan(v) || is_pos_inf(v) || is_neg_inf(v)) {
        return state;
    }
    if (is_neg_inf(m)) {
        return vec2<f32>(v, 1.0); // the first finite value
    }
    if (v > m) {
        return vec2<f32>(v, fma(s, exp(m - v), 1.0)); // a new maximum: rescale the sum so far
    }
    return vec2<f32>(m, s + exp(v - m));
}

// Four values into a running (m, s) pair with one rescale at most: the new maximum is the largest of the four.
// A row holding NaN or +inf is flagged by the caller and its pair ignored, so only -inf lanes need care here:
// they add exactly 0, chosen explicitly rather than trusting exp(-inf).
fn online_add4(state: vec2<f32>, v: vec4<f32>) -> vec2<f32> {
    var m = state.x;
    var s = state.y;
    let v_max = max(max(v.x, v.y), max(v.z, v.w));
    if (v_max > m) {
        // Nothing accumulated yet when m is -inf: no rescale (exp(-inf - v_max) would be 0 anyway).
        s = select(s * exp(m - v_max), 0.0, is_neg_inf(m));
        m = v_max;
    }
    if (!is_neg_inf(m)) {
        let neg_inf_lanes = bitcast<vec4<u32>>(v) == vec4<u32>(NEG_INF_BITS);
        let e = select(exp(v - vec4<f32>(m)), vec4<f32>(0.0), neg_inf_lanes);
        s = s + ((e.x + e.y) + (e.z + e.w));
    }
    return vec2<f32>(m, s);
}

// 1 when v holds NaN or +inf in any lane.
fn poisons4(v: vec4<f32>) -> u32 {
    let bits = bitcast<vec4<u32>>(v);
    let nan_lanes = (bits & vec4<u32>(0x7fffffffu)) > vec4<u32>(POS_INF_BITS);
    let pos_inf_lanes = bits == vec4<u32>(POS_INF_BITS);
    return select(0u, 1u, any(nan_lanes) || any(pos_inf_lanes));
}

// The fused kernel uses 512 threads per row, not 256: with a row's work spread over more threads, each thread's
// loop is shorter and more loads are in flight per row (on an H200, with a version of this kernel that read x twice,
// 512 threads took 7% less time than 256, and 1024 twice as long). Its own reduction arrays are sized to match.
const FUSED_WG: u32 = 512u;
// vec4s of a row each thread of the fused kernel keeps in registers.
const ROW_CACHE: u32 = 4u;

var<workgroup> fused_m: array<f32, FUSED_WG>;
var<workgroup> fused_s: array<f32, FUSED_WG>;
var<workgroup> fused_bad: array<u32, FUSED_WG>;

@compute @workgroup_size(FUSED_WG)
fn softmax_fused(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let row = row_index(wid, nwg);
    if (row >= params.rows) {
        return;
    }
    let cols = params.cols;
    let base = row * cols;
    // When every row starts on a 16-byte boundary (cols a multiple of 4), the row is read and written as vec4s:
    // a quarter of the memory instructions, four times the bytes per load. The test is uniform, so the whole
    // workgroup takes the same path.
    let vectorised = (cols & 3u) == 0u;
    let cols4 = cols >> 2u;
    let base4 = base >> 2u;

    // A row of at most FUSED_WG * ROW_CACHE vec4s (8192 floats) is held in registers between the two sweeps, so x
    // is read once; a longer row is read again in sweep 2. Uniform too.
    let cached = vectorised && cols4 <= FUSED_WG * ROW_CACHE;
    var cache: array<vec4<f32>, ROW_CACHE>;

    // Sweep 1: this thread's online (m, s) pair and its NaN/+inf flag.
    var state = vec2<f32>(neg_inf_f32(), 0.0);
    var bad = 0u;
    if (cached) {
        // All ROW_CACHE loads are issued before any is used. Columns past the end read as -inf, which adds
        // nothing. The loops have constant trip counts, so the compiler unrolls them and `cache` lives in registers.
        for (var k = 0u; k < ROW_CACHE; k += 1u) {
            let c = lid.x + k * FUSED_WG;
            var v = vec4<f32>(neg_inf_f32());
            if (c < cols4) {
                v = x4[base4 + c];
            }
            cache[k] = v;
        }
        for (var k = 0u; k < ROW_CACHE; k += 1u) {
            bad |= poisons4(cache[k]);
            state = online_add4(state, cache[k]);
        }
    } else if (vectorised) {
        for (var c = lid.x; c < cols4; c += FUSED_WG) {
            let v = x4[base4 + c];
            bad |= poisons4(v);
            state = online_add4(state, v);
        }
    } else {
        for (var c = lid.x; c < cols; c += FUSED_WG) {
            let v = x[base + c];
            bad |= select(0u, 1u, is_nan(v) || is_pos_inf(v));
            state = online_add(state, v);
        }
    }
    fused_m[lid.x] = state.x;
    fused_s[lid.x] = state.y;
    fused_bad[lid.x] = bad;
    workgroupBarrier();

    // Tree reduction of the (m, s) pairs and of the flags.
    for (var stride = FUSED_WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid.x < stride) {
            let o = lid.x + stride;
            let p = online_combine(fused_m[lid.x], fused_s[lid.x], fused_m[o], fused_s[o]);
            fused_m[lid.x] = p.x;
            fused_s[lid.x] = p.y;
            fused_bad[lid.x] = fused_bad[lid.x] | fused_bad[o];
        }
        workgroupBarrier();
    }

    // Every thread reads the row's result (the last loop iteration ended with a barrier).
    let row_m = fused_m[0];
    let inv_s = 1.0 / fused_s[0];
    let row_bad = fused_bad[0] != 0u || is_neg_inf(row_m);

    // Sweep 2: write the normalised values, from registers, or reading x again (the row was read moments ago, so
    // mostly from L2, when the other rows in flight have not evicted it).
    if (row_bad) {
        for (var c = lid.x; c < cols; c += FUSED_WG) {
            y[base + c] = nan_f32();
        }
    } else if (cached) {
        for (var k = 0u; k < ROW_CACHE; k += 1u) {
            let c = lid.x + k * FUSED_WG;
            if (c < cols4) {
                let v = cache[k];
                let neg_inf_lanes = bitcast<vec4<u32>>(v) == vec4<u32>(NEG_INF_BITS);
                y4[base4 + c] = select(exp(v - vec4<f32>(row_m)) * inv_s, vec4<f32>(0.0), neg_inf_lanes);
            }
        }
    } else if (vectorised) {
        for (var c = lid.x; c < cols4; c += FUSED_WG) {
            let v = x4[base4 + c];
            let neg_inf_lanes = bitcast<vec4<u32>>(v) == vec4<u32>(NEG_INF_BITS);
            y4[base4 + c] = select(exp(v - vec4<f32>(row_m)) * inv_s, vec4<f32>(0.0), neg_inf_lanes);
        }
    } else {
        for (var c = lid.x; c < cols; c += FUSED_WG) {
            let v = x[base + c];
            y[base + c] = select(exp(v - row_m) * inv_s, 0.0, is_neg_inf(v));
        }
    }
}
