// Note on the `enable subgroups;` directive: standard WGSL requires it before any subgroup built-in is used, but
// naga (the WGSL compiler inside wgpu) deliberately rejects it while its subgroup support is not spec-complete.
// Instead, naga accepts the built-ins when the device was created with the SUBGROUP feature, and rejects the
// module otherwise. So the directive is omitted here; the effect is the same as the standard directive.

// sum with subgroup operations: the same two-pass reduction as sum.wgsl (the same per-thread loop: vec4 loads,
// four in flight, Kahan compensation), but most of the combining is done inside
// a subgroup (a warp on NVIDIA, a wavefront on AMD): its lanes run in lockstep and can exchange registers
// directly, so subgroupAdd() sums 32 values with no workgroup memory and no barrier. Only one value per subgroup
// goes through workgroup memory, and a single barrier replaces the eight of the tree reduction.
//
// This file is separate because any use of subgroup built-ins makes the whole module invalid on devices without
// subgroup support.

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
// x viewed as vec4s, padded with zeros by the host (see sum.wgsl).
@group(0) @binding(3) var<storage, read> x4: array<vec4<f32>>;

// One slot per subgroup. Subgroups hold 4 to 128 lanes, so a 256-thread workgroup has at most 64 of them;
// sizing the array for the full workgroup keeps it valid for any subgroup size.
var<workgroup> subgroup_sums: array<f32, WG>;

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
fn sum_subgroup(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
) {
    let wg = wid.x + wid.y * nwg.x;
    let sum = thread_sum(wg * WG + lid.x, nwg.x * nwg.y * WG);

    // Every thread of the workgroup is here (the loop above has ended for all of them), so the subgroup
    // operation runs in uniform control flow with all lanes active. Each lane receives its subgroup's total.
    let sg_total = subgroupAdd(sum);

    // Lanes are grouped into subgroups by consecutive local index, so subgroup k holds threads
    // k*sg_size .. (k+1)*sg_size - 1. Its first lane publishes the subgroup's total.
    let num_subgroups = (WG + sg_size - 1u) / sg_size;
    if (sg_lane == 0u) {
        subgroup_sums[lid.x / sg_size] = sg_total;
    }
    workgroupBarrier();

    // Second level: the per-subgroup totals are summed by one more subgroupAdd. Lane j first gathers slots
    // j, j + sg_size, j + 2*sg_size, ... which covers any subgroup size (with 4 or 8 lanes there are more
    // subgroups than lanes). Every subgroup does this redundantly rather than only the first, so that the
    // subgroupAdd is again reached by all threads in uniform control flow; it costs a few broadcast reads of
    // workgroup memory.
    var v = 0.0;
    for (var j = sg_lane; j < num_subgroups; j += sg_size) {
        v = v + subgroup_sums[j];
    }
    let wg_total = subgroupAdd(v);

    if (lid.x == 0u) {
        partials[wg] = wg_total;
    }
}
