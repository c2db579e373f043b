// sum: s = x[0] + x[1] + ... + x[n-1], as a two-pass reduction.
//
// Pass 1 runs sum_workgroup over x with many workgroups; each writes one partial sum. Pass 2 runs the same entry
// point over those partials with a single workgroup, which leaves the total in element 0 of its output.
//
// Techniques, in the order they appear:
//   1. grid-stride loop: a fixed number of threads covers any n, so each thread reads many elements with
//      perfectly coalesced accesses and the number of partials stays small;
//   2. wide loads, several in flight: x is read as vec4s (16 bytes per load), and each trip of the loop issues
//      LOADS_IN_FLIGHT independent loads before adding any of them. A reduction does one addition per 4 bytes, so
//      the memory system is the limit, and it only reaches full bandwidth with many bytes requested at once:
//      on an H200, scalar loads, one at a time, were far slower
//      (docs/results/nvidia-h200/README.md#why-the-code-is-shaped-so);
//   3. Kahan (compensated) summation: each thread adds hundreds of values into one f32, which on its own would
//      lose the low bits of every small addend once the running total is large; a second variable carries the
//      rounding error forward and feeds it back in;
//   4. tree reduction in workgroup memory: 256 per-thread totals are combined pairwise in log2(256) = 8 steps,
//      with a barrier between steps so that every thread sees the previous step's results.

struct Params {
    n: u32,       // number of elements in x
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

const WG: u32 = 256u;
// vec4 loads each thread issues per trip of its loop.
const LOADS_IN_FLIGHT: u32 = 4u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read_write> partials: array<f32>;
// x viewed as vec4s. The host pads the buffer with zeros to whole vec4s, and zeros do not change a sum.
@group(0) @binding(3) var<storage, read> x4: array<vec4<f32>>;

var<workgroup> scratch: array<f32, WG>;

// True when v is +inf, -inf or NaN, tested on the bit pattern (exponent all ones) because a compiler may assume
// that floating-point comparisons never see NaN or infinity.
fn is_not_finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) == 0x7f800000u;
}

// One Kahan step: adds v to the running (sum, compensation) pair. After the step, the compensation holds (to first
// order) how much the rounded total exceeds the exact one; subtracting it from the next addend puts the lost bits
// back. Once the total is infinite or NaN, (t - sum) - term would be inf - inf = NaN and poison every later step
// (turning a legitimate +inf result into NaN), so the correction is only kept while t is finite.
fn kahan_add(acc: vec2<f32>, v: f32) -> vec2<f32> {
    let term = v - acc.y;
    let t = acc.x + term;
    return vec2<f32>(t, select((t - acc.x) - term, 0.0, is_not_finite(t)));
}

// The sum of this thread's share of x4: vec4s first, first + T, first + 2T, ... for T threads in the grid, read
// LOADS_IN_FLIGHT (4) at a time. The four loads are written out rather than looped over an array: an array indexed
// in a loop may be kept in slow local memory, and its bounds checks stay in the code. Each vec4's lanes are added
// pairwise first (a few ulps at most, like any four-term sum) and the result goes through one Kahan step.
fn thread_sum(first: u32, total_threads: u32) -> f32 {
    let n4 = (params.n >> 2u) + select(0u, 1u, (params.n & 3u) != 0u);
    var acc = vec2<f32>(0.0, 0.0);
    for (var i = first; i < n4; i += LOADS_IN_FLIGHT * total_threads) {
        let i1 = i + total_threads;
        let i2 = i1 + total_threads;
        let i3 = i2 + total_threads;
        let v0 = x4[i];
        var v1 = vec4<f32>(0.0);
        var v2 = vec4<f32>(0.0);
        var v3 = vec4<f32>(0.0);
        if (i1 < n4) { v1 = x4[i1]; }
        if (i2 < n4) { v2 = x4[i2]; }
        if (i3 < n4) { v3 = x4[i3]; }
        acc = kahan_add(acc, (v0.x + v0.y) + (v0.z + v0.w));
        acc = kahan_add(acc, (v1.x + v1.y) + (v1.z + v1.w));
        acc = kahan_add(acc, (v2.x + v2.y) + (v2.z + v2.w));
        acc = kahan_add(acc, (v3.x + v3.y) + (v3.z + v3.w));
    }
    // Apply the last pending correction.
    return acc.x - acc.y;
}

@compute @workgroup_size(WG)
fn sum_workgroup(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let wg = wid.x + wid.y * nwg.x;

    // 1 + 2 + 3: this thread's compensated sum.
    scratch[lid.x] = thread_sum(wg * WG + lid.x, nwg.x * nwg.y * WG);
    workgroupBarrier();

    // 4: tree reduction. At each step the lower half of the active threads adds in the upper half, halving the
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
