// Note on the `enable subgroups;` directive: standard WGSL requires it before any subgroup built-in is used, but
// naga (the WGSL compiler inside wgpu) deliberately rejects it while its subgroup support is not spec-complete.
// Instead, naga accepts the built-ins when the device was created with the SUBGROUP feature, and rejects the
// module otherwise. So the directive is omitted here; the effect is the same as the standard directive.

// sum with subgroup operations: the same two-pass reduction as sum.wgsl, with the same per-thread loop (vec4 loads,
// four in flight, Kahan compensation), but most of the combining is done inside a subgroup (a warp on NVIDIA, a
// wavefront on AMD): its lanes run in lockstep and can exchange registers directly, so subgroupAdd() sums 32 values
// with no workgroup memory and no barrier. Only one value per subgroup goes through workgroup memory, and a single
// barrier replaces the eight of the tree reduction.
//
// The kernel is in a file of its own because any use of subgroup built-ins makes the whole module invalid on devices
// without subgroup support.

// This file is appended to sum.wgsl to make one module: Params, the bindings, WG and thread_sum() come from there.

// One slot per subgroup. Subgroups hold 4 to 128 lanes, so a 256-thread workgroup has at most 64 of them;
// sizing the array for the full workgroup keeps it valid for any subgroup size.
var<workgroup> subgroup_sums: array<f32, WG>;

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
