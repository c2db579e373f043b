// Note on the `enable subgroups;` directive: standard WGSL requires it before any subgroup built-in is used, but
// naga (the WGSL compiler inside wgpu) deliberately rejects it while its subgroup support is not spec-complete.
// Instead, naga accepts the built-ins when the device was created with the SUBGROUP feature, and rejects the
// module otherwise. So the directive is omitted here; the effect is the same as the standard directive.

// sum with subgroup operations: the same two-pass reduction as sum.wgsl, but most of the combining is done inside
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

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> partials: array<f32>;

// One slot per subgroup. Subgroups hold 4 to 128 lanes, so a 256-thread workgroup has at most 64 of them;
// sizing the array for the full workgroup keeps it valid for any subgroup size.
var<workgroup> subgroup_sums: array<f32, WG>;

// True when v is +inf, -inf or NaN, tested on the bit pattern (see sum.wgsl).
fn is_not_finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) == 0x7f800000u;
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
    let total_threads = nwg.x * nwg.y * WG;

    // Grid-stride loop with Kahan (compensated) summation, exactly as in sum.wgsl.
    var sum = 0.0;
    var comp = 0.0;
    for (var i = wg * WG + lid.x; i < params.n; i += total_threads) {
        let term = x[i] - comp;
        let t = sum + term;
        comp = select((t - sum) - term, 0.0, is_not_finite(t));
        sum = t;
    }
    sum = sum - comp;

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
