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
    // The split kernels' chunks of each row (see softmax_split_stats); the other kernels ignore them.
    chunk_cols: u32,
    chunks: u32,
}

const WG: u32 = 256u;

const NAN_BITS: u32 = 0x7fc00000u;
const POS_INF_BITS: u32 = 0x7f800000u;
const NEG_INF_BITS: u32 = 0xff800000u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
// Used by the unfused kernels: stats[2r] = row max, stats[2r + 1] = row sum of exp(x - max); by the split kernels,
// the same per (row, chunk).
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
// loop is shorter and more loads are in flight per row (512 beat 256 and 1024 on an H200; measured:
// docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so). Its own reduction arrays are sized to match.
const FUSED_WG: u32 = 512u;
// vec4s of a row each thread of the fused kernel keeps in registers.
const ROW_CACHE: u32 = 4u;

var<workgroup> fused_m: array<f32, FUSED_WG>;
var<workgroup> fused_s: array<f32, FUSED_WG>;
var<workgroup> fused_bad: array<u32, FUSED_WG>;

// An online (m, s) pair and a NaN/+inf flag: one thread's, or after reduce_pairs a whole workgroup's.
struct Pair {
    m: f32,
    s: f32,
    bad: u32,
}

// Sweep 1 over `count` values of x from `base` (as vec4s when `vectorised`: base and count are then multiples of 4):
// this thread's pair, from the columns lane, lane + FUSED_WG, ...
fn sweep_pairs(lane: u32, base: u32, count: u32, vectorised: bool) -> Pair {
    var state = vec2<f32>(neg_inf_f32(), 0.0);
    var bad = 0u;
    if (vectorised) {
        let base4 = base >> 2u;
        for (var c = lane; c < (count >> 2u); c += FUSED_WG) {
            let v = x4[base4 + c];
            bad |= poisons4(v);
            state = online_add4(state, v);
        }
    } else {
        for (var c = lane; c < count; c += FUSED_WG) {
            let v = x[base + c];
            bad |= select(0u, 1u, is_nan(v) || is_pos_inf(v));
            state = online_add(state, v);
        }
    }
    return Pair(state.x, state.y, bad);
}

// The workgroup's pair from every thread's, by a tree reduction in workgroup memory; every thread gets it. Call it
// from uniform control flow (it has barriers).
fn reduce_pairs(lane: u32, pair: Pair) -> Pair {
    fused_m[lane] = pair.m;
    fused_s[lane] = pair.s;
    fused_bad[lane] = pair.bad;
    workgroupBarrier();
    for (var stride = FUSED_WG / 2u; stride > 0u; stride >>= 1u) {
        if (lane < stride) {
            let o = lane + stride;
            let p = online_combine(fused_m[lane], fused_s[lane], fused_m[o], fused_s[o]);
            fused_m[lane] = p.x;
            fused_s[lane] = p.y;
            fused_bad[lane] = fused_bad[lane] | fused_bad[o];
        }
        workgroupBarrier();
    }
    // Every thread reads the result (the last loop iteration ended with a barrier).
    return Pair(fused_m[0], fused_s[0], fused_bad[0]);
}

// Four normalised values: exp(v - m) * inv_s, exactly 0 for a -inf entry.
fn normalized4(v: vec4<f32>, m: f32, inv_s: f32) -> vec4<f32> {
    let neg_inf_lanes = bitcast<vec4<u32>>(v) == vec4<u32>(NEG_INF_BITS);
    return select(exp(v - vec4<f32>(m)) * inv_s, vec4<f32>(0.0), neg_inf_lanes);
}

// Sweep 2 over `count` values from `base`: y = exp(x - m) * inv_s (exactly 0 for a -inf entry), or NaN throughout
// when `row_bad`.
fn write_normalized(lane: u32, base: u32, count: u32, vectorised: bool, row_bad: bool, m: f32, inv_s: f32) {
    if (row_bad) {
        for (var c = lane; c < count; c += FUSED_WG) {
            y[base + c] = nan_f32();
        }
    } else if (vectorised) {
        let base4 = base >> 2u;
        for (var c = lane; c < (count >> 2u); c += FUSED_WG) {
            y4[base4 + c] = normalized4(x4[base4 + c], m, inv_s);
        }
    } else {
        for (var c = lane; c < count; c += FUSED_WG) {
            let v = x[base + c];
            y[base + c] = select(exp(v - m) * inv_s, 0.0, is_neg_inf(v));
        }
    }
}

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
    var mine: Pair;
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
        var state = vec2<f32>(neg_inf_f32(), 0.0);
        var bad = 0u;
        for (var k = 0u; k < ROW_CACHE; k += 1u) {
            bad |= poisons4(cache[k]);
            state = online_add4(state, cache[k]);
        }
        mine = Pair(state.x, state.y, bad);
    } else {
        mine = sweep_pairs(lid.x, base, cols, vectorised);
    }
    let row_pair = reduce_pairs(lid.x, mine);
    let row_m = row_pair.m;
    let inv_s = 1.0 / row_pair.s;
    let row_bad = row_pair.bad != 0u || is_neg_inf(row_m);

    // Sweep 2: write the normalised values, from registers, or reading x again (the row was read moments ago, so
    // mostly from L2, when the other rows in flight have not evicted it).
    if (cached && !row_bad) {
        for (var k = 0u; k < ROW_CACHE; k += 1u) {
            let c = lid.x + k * FUSED_WG;
            if (c < cols4) {
                y4[base4 + c] = normalized4(cache[k], row_m, inv_s);
            }
        }
    } else {
        write_normalized(lid.x, base, cols, vectorised, row_bad, row_m, inv_s);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Split rows, two kernels. One workgroup per row leaves most of a GPU idle when the rows are few and long (256
// rows of 65536 columns are 256 workgroups): too few loads in flight to keep memory busy. Here each row is cut into
// params.chunks chunks of params.chunk_cols columns (a multiple of 2048, from gpuworthy_core's split_columns), one
// workgroup per (row, chunk), numbered g = row * chunks + chunk:
//   softmax_split_stats      the chunk's online (m, s) pair into stats[2g], stats[2g + 1] (m NaN for a chunk
//                            holding NaN or +inf);
//   softmax_split_normalize  every thread combines its row's pairs (a few), then the chunk's y is written.
// Traffic is the fused kernel's (x read twice, y written once) plus two floats per chunk; the cost is a second
// dispatch.

// The (row, chunk) of a split workgroup and the chunk's first column and length; `row` is past the band's rows for
// the padding workgroups of a 2D grid.
struct Chunk {
    row: u32,
    index: u32,
    start: u32,
    count: u32,
    // The index in x and y of the chunk's first value.
    base: u32,
}

fn split_chunk(wid: vec3<u32>, nwg: vec3<u32>) -> Chunk {
    let g = row_index(wid, nwg);
    let row = g / params.chunks;
    let index = g % params.chunks;
    let start = index * params.chunk_cols;
    let count = min(params.chunk_cols, params.cols - min(start, params.cols));
    return Chunk(row, index, start, count, row * params.cols + start);
}

@compute @workgroup_size(FUSED_WG)
fn softmax_split_stats(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let chunk = split_chunk(wid, nwg);
    if (chunk.row >= params.rows) {
        return;
    }
    let pair = reduce_pairs(lid.x, sweep_pairs(lid.x, chunk.base, chunk.count, split_vectorised()));
    if (lid.x == 0u) {
        let g = chunk.row * params.chunks + chunk.index;
        stats[2u * g] = select(pair.m, nan_f32(), pair.bad != 0u);
        stats[2u * g + 1u] = pair.s;
    }
}

@compute @workgroup_size(FUSED_WG)
fn softmax_split_normalize(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let chunk = split_chunk(wid, nwg);
    if (chunk.row >= params.rows) {
        return;
    }
    var state = vec2<f32>(neg_inf_f32(), 0.0);
    var bad = false;
    let first = chunk.row * params.chunks;
    for (var k = 0u; k < params.chunks; k += 1u) {
        let m = stats[2u * (first + k)];
        if (is_nan(m)) {
            bad = true;
        } else {
            state = online_combine(state.x, state.y, m, stats[2u * (first + k) + 1u]);
        }
    }
    write_normalized(lid.x, chunk.base, chunk.count, split_vectorised(), bad || is_neg_inf(state.x), state.x, 1.0 / state.y);
}

// Whether a split chunk is read and written as vec4s: every row and every chunk starts on a 16-byte boundary.
fn split_vectorised() -> bool {
    return (params.cols & 3u) == 0u && (params.chunk_cols & 3u) == 0u;
}
