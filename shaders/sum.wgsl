// sum: s = x[0] + x[1] + ... + x[n-1], as a two-pass reduction.
//
// Pass 1 runs sum_workgroup over x with many workgroups; each writes one partial sum. Pass 2 runs the same entry
// point over those partials with a single workgroup, which leaves the total in element 0 of its output.
//
// Techniques, in the order they appear:
//   1. grid-stride loop: a fixed number of threads covers any n, so each thread reads many elements with
//      perfectly coalesced accesses and the number of partials stays small;
//   2. Kahan (compensated) summation: each thread adds thousands of values into one f32, which on its own would
//      lose the low bits of every small addend once the running total is large; a second variable carries the
//      rounding error forward and feeds it back in;
//   3. tree reduction in workgroup memory: 256 per-thread totals are combined pairwise in log2(256) = 8 steps,
//      with a barrier between steps so that every thread sees the previous step's results.

struct Params {
    n: u32,       // number of elements in x
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

const WG: u32 = 256u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> partials: array<f32>;

var<workgroup> scratch: array<f32, WG>;

// True when v is +inf, -inf or NaN, tested on the bit pattern (exponent all ones) because a compiler may assume
// that floating-point comparisons never see NaN or infinity.
fn is_not_finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) == 0x7f800000u;
}

@compute @workgroup_size(WG)
fn sum_workgroup(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let wg = wid.x + wid.y * nwg.x;
    let total_threads = nwg.x * nwg.y * WG;

    // 1 + 2: grid-stride loop with Kahan summation. After each step, `comp` holds (to first order) how much the
    // rounded total exceeds the exact one; subtracting it from the next addend puts the lost bits back.
    var sum = 0.0;
    var comp = 0.0;
    for (var i = wg * WG + lid.x; i < params.n; i += total_threads) {
        let term = x[i] - comp;
        let t = sum + term;
        // Once the total is infinite or NaN, (t - sum) - term would be inf - inf = NaN and poison every later
        // step (turning a legitimate +inf result into NaN), so the correction is only kept while t is finite.
        comp = select((t - sum) - term, 0.0, is_not_finite(t));
        sum = t;
    }
    // Apply the last pending correction.
    scratch[lid.x] = sum - comp;
    workgroupBarrier();

    // 3: tree reduction. At each step the lower half of the active threads adds in the upper half, halving the
    // number of live values. The loop bounds are constants, so every thread reaches every barrier.
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid.x < stride) {
            scratch[lid.x] = scratch[lid.x] + scratch[lid.x + stride];
        }
        workgroupBarrier();
    }

    if (lid.x == 0u) {
        partials[wg] = scratch[0];
    }
}
