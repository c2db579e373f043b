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

// Workgroup scratch for the reductions. red_f holds a max or a sum, red_g a second float (the online sum in the
// fused kernel), red_bad a per-thread "row is poisoned" flag (NaN or +inf seen).
var<workgroup> red_f: array<f32, WG>;
var<workgroup> red_g: array<f32, WG>;
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
// of x writes y = exp(x - m) / s.
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

@compute @workgroup_size(WG)
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

    // Sweep 1: this thread's online (m, s) pair and its NaN/+inf flag.
    var m = neg_inf_f32();
    var s = 0.0;
    var bad = 0u;
    for (var c = lid.x; c < cols; c += WG) {
        let v = x[base + c];
        if (is_nan(v) || is_pos_inf(v)) {
            bad = 1u;
        } else if (is_neg_inf(v)) {
            // Contributes exp(-inf) = 0: nothing to do.
        } else if (is_neg_inf(m)) {
            // First finite value seen by this thread.
            m = v;
            s = 1.0;
        } else if (v > m) {
            // New maximum: rescale the sum accumulated so far.
            s = fma(s, exp(m - v), 1.0);
            m = v;
        } else {
            s = s + exp(v - m);
        }
    }
    red_f[lid.x] = m;
    red_g[lid.x] = s;
    red_bad[lid.x] = bad;
    workgroupBarrier();

    // Tree reduction of the (m, s) pairs and of the flags.
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid.x < stride) {
            let o = lid.x + stride;
            let p = online_combine(red_f[lid.x], red_g[lid.x], red_f[o], red_g[o]);
            red_f[lid.x] = p.x;
            red_g[lid.x] = p.y;
            red_bad[lid.x] = red_bad[lid.x] | red_bad[o];
        }
        workgroupBarrier();
    }

    // Every thread reads the row's result (the last loop iteration ended with a barrier).
    let row_m = red_f[0];
    let row_s = red_g[0];
    let row_bad = red_bad[0] != 0u || is_neg_inf(row_m);

    // Sweep 2: write the normalised values.
    for (var c = lid.x; c < cols; c += WG) {
        var out: f32;
        if (row_bad) {
            out = nan_f32();
        } else {
            let v = x[base + c];
            out = select(exp(v - row_m) / row_s, 0.0, is_neg_inf(v));
        }
        y[base + c] = out;
    }
}
