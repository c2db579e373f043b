// s = sum(x*x) on f32 arrays in one dispatch, as the backend generates it (s_gen: expr_wgsl_source 's = sum(x*x)' -
// f32 subgroups), and where its finish by the last workgroup spends its time: shapes that stop after each step of
// the chain (the partial's store and the fence, the counter, the partials' loads) and shapes without the fences. The
// lab binds one output, so the counter of finished workgroups is its word COUNTER. P1 = 0 runs the first pass alone.
// With expr_helpers.wgsl (wgsl_lab expr_helpers.wgsl+sum_finish.wgsl); sum_finish.sh runs it.
@group(0) @binding(1) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> partials: array<atomic<u32>>;
var<workgroup> gw_ticket: u32;
var<workgroup> shared_values: array<f32, 256>;
const COUNTER: u32 = 16383u;
// A partial slot not yet written this launch (a NaN no partial takes: NaN partials are stored as 0x7fc00000).
const UNWRITTEN: u32 = 0xffffffffu;

// The generated kernel's term, fold and common path.
fn gw_term(a0: f32) -> f32 {
    let v0: f32 = a0;
    let v1: f32 = a0;
    let v2: f32 = fmul(v0, v1);
    return v2;
}
fn gw_fold(start: f32, first: u32, x0: vec4<f32>) -> f32 {
    var acc = start;
    if (first + 3u < params.n) {
        acc = fadd(acc, gw_term(x0.x));
        acc = fadd(acc, gw_term(x0.y));
        acc = fadd(acc, gw_term(x0.z));
        acc = fadd(acc, gw_term(x0.w));
    } else {
        if (first + 0u < params.n) { acc = fadd(acc, gw_term(x0.x)); }
        if (first + 1u < params.n) { acc = fadd(acc, gw_term(x0.y)); }
        if (first + 2u < params.n) { acc = fadd(acc, gw_term(x0.z)); }
        if (first + 3u < params.n) { acc = fadd(acc, gw_term(x0.w)); }
    }
    return acc;
}
struct GwTerms { value: vec4<f32>, special: bool }
fn gw_terms(x0: vec4<f32>) -> GwTerms {
    var probe = vec4<f32>(0.0);
    let w0: vec4<f32> = x0;
    let w1: vec4<f32> = x0;
    let w2: vec4<f32> = (w0 * w1);
    let probe_bits = bitcast<vec4<u32>>(probe) & vec4<u32>(0x7f800000u);
    let worst = max(max(probe_bits.x, probe_bits.y), max(probe_bits.z, probe_bits.w));
    return GwTerms(w2, worst == 0x7f800000u);
}

// The workgroup's total of its terms, in every invocation: the generated kernel's first pass and combine.
fn workgroup_total(local: u32, group: u32, groups: u32, sg_size: u32, sg_lane: u32) -> f32 {
    var acc: f32 = 0.0;
    let quads = (params.n + 3u) / 4u;
    let grid_stride = groups * 256u;
    var acc4 = vec4<f32>(bitcast<f32>(params.zero));
    let whole = params.n / 4u;
    var q = group * 256u + local;
    for (; q + 3u * grid_stride < whole; q = q + 4u * grid_stride) {
        let x0 = in0[q];
        let x1 = in0[q + grid_stride];
        let x2 = in0[q + 2u * grid_stride];
        let x3 = in0[q + 3u * grid_stride];
        acc4 = ((((acc4 + x0 * x0) + x1 * x1) + x2 * x2) + x3 * x3);
    }
    for (; q < quads; q = q + grid_stride) {
        acc = gw_fold(acc, 4u * q, in0[q]);
    }
    acc = fadd(acc, fadd(fadd(acc4.x, acc4.y), fadd(acc4.z, acc4.w)));
    return combine(acc, local, sg_size, sg_lane);
}

fn combine(value: f32, local: u32, sg_size: u32, sg_lane: u32) -> f32 {
    let sg_value = gw_subgroup_sum(subgroupAny(is_nan(value)), subgroupAny(bitcast<u32>(value) == 0x7f800000u), subgroupAny(bitcast<u32>(value) == 0xff800000u), subgroupAdd(value));
    if (sg_lane == 0u) { shared_values[local / sg_size] = sg_value; }
    workgroupBarrier();
    var gathered: f32 = 0.0;
    for (var j = sg_lane; j < (256u + sg_size - 1u) / sg_size; j = j + sg_size) { gathered = fadd(gathered, shared_values[j]); }
    let total = gw_subgroup_sum(subgroupAny(is_nan(gathered)), subgroupAny(bitcast<u32>(gathered) == 0x7f800000u), subgroupAny(bitcast<u32>(gathered) == 0xff800000u), subgroupAdd(gathered));
    workgroupBarrier();
    return total;
}

fn stored(value: f32) -> u32 { return select(bitcast<u32>(value), 0x7fc00000u, is_nan(value)); }

// The partial's store and the fence, then nothing.
@compute @workgroup_size(256)
fn f_fence(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let total = workgroup_total(lid.x, wid.x, groups.x, sg_size, sg_lane);
    if (lid.x == 0u) { atomicStore(&partials[wid.x], stored(total)); }
    storageBarrier();
}

// The store, the fence and the counter; the last resets the counter and reads nothing.
@compute @workgroup_size(256)
fn f_ticket(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let total = workgroup_total(lid.x, wid.x, groups.x, sg_size, sg_lane);
    if (lid.x == 0u) { atomicStore(&partials[wid.x], stored(total)); }
    storageBarrier();
    if (lid.x == 0u) { gw_ticket = atomicAdd(&partials[COUNTER], 1u); }
    if (workgroupUniformLoad(&gw_ticket) != groups.x - 1u) { return; }
    if (lid.x == 0u) { atomicStore(&partials[COUNTER], 0u); }
}

// The counter without the fence before it (not a correct finish: it measures the fence).
@compute @workgroup_size(256)
fn f_ticket_nofence(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let total = workgroup_total(lid.x, wid.x, groups.x, sg_size, sg_lane);
    if (lid.x == 0u) {
        atomicStore(&partials[wid.x], stored(total));
        gw_ticket = atomicAdd(&partials[COUNTER], 1u);
    }
    if (workgroupUniformLoad(&gw_ticket) != groups.x - 1u) { return; }
    if (lid.x == 0u) { atomicStore(&partials[COUNTER], 0u); }
}

// The whole chain with both fences, but the last workgroup reads one partial, not every one (measures the loads).
@compute @workgroup_size(256)
fn f_one_load(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let total = workgroup_total(lid.x, wid.x, groups.x, sg_size, sg_lane);
    if (lid.x == 0u) { atomicStore(&partials[wid.x], stored(total)); }
    storageBarrier();
    if (lid.x == 0u) { gw_ticket = atomicAdd(&partials[COUNTER], 1u); }
    if (workgroupUniformLoad(&gw_ticket) != groups.x - 1u) { return; }
    storageBarrier();
    if (lid.x == 0u) {
        let p = bitcast<f32>(atomicLoad(&partials[0]));
        atomicStore(&partials[groups.x], bitcast<u32>(p + total));
        atomicStore(&partials[COUNTER], 0u);
    }
}

// No fence: each workgroup stores its partial and takes its ticket; the last reads every slot until it holds a
// partial of this launch (a slot reads UNWRITTEN until its store is visible), then marks the slots unwritten for the
// next launch. A dispatch boundary orders those marks before the next launch's stores.
@compute @workgroup_size(256)
fn f_spin(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let local = lid.x;
    let total = workgroup_total(local, wid.x, groups.x, sg_size, sg_lane);
    if (local == 0u) {
        atomicStore(&partials[wid.x], stored(total));
        gw_ticket = atomicAdd(&partials[COUNTER], 1u);
    }
    if (workgroupUniformLoad(&gw_ticket) != groups.x - 1u) { return; }
    let count = groups.x;
    var acc: f32 = 0.0;
    for (var i = local; i < count; i = i + 1024u) {
        let i1 = min(i + 256u, count - 1u);
        let i2 = min(i + 512u, count - 1u);
        let i3 = min(i + 768u, count - 1u);
        var p0 = atomicLoad(&partials[i]);
        var p1 = atomicLoad(&partials[i1]);
        var p2 = atomicLoad(&partials[i2]);
        var p3 = atomicLoad(&partials[i3]);
        for (var tries = 0u; tries < 4096u && (p0 == UNWRITTEN || p1 == UNWRITTEN || p2 == UNWRITTEN || p3 == UNWRITTEN); tries = tries + 1u) {
            p0 = atomicLoad(&partials[i]);
            p1 = atomicLoad(&partials[i1]);
            p2 = atomicLoad(&partials[i2]);
            p3 = atomicLoad(&partials[i3]);
        }
        acc = fadd(acc, bitcast<f32>(p0));
        if (i + 256u < count) { acc = fadd(acc, bitcast<f32>(p1)); }
        if (i + 512u < count) { acc = fadd(acc, bitcast<f32>(p2)); }
        if (i + 768u < count) { acc = fadd(acc, bitcast<f32>(p3)); }
        atomicStore(&partials[i], UNWRITTEN);
        atomicStore(&partials[i1], UNWRITTEN);
        atomicStore(&partials[i2], UNWRITTEN);
        atomicStore(&partials[i3], UNWRITTEN);
    }
    let reduced = combine(acc, local, sg_size, sg_lane);
    if (local == 0u) {
        atomicStore(&partials[count], bitcast<u32>(reduced));
        atomicStore(&partials[COUNTER], 0u);
    }
}

// The chain with its fences and the 1024 partials' atomic loads (four an invocation), added with plain `+` and
// stored by every invocation only if the sum is impossible: measures the loads without the workgroup's combine.
@compute @workgroup_size(256)
fn f_loads(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let local = lid.x;
    let total = workgroup_total(local, wid.x, groups.x, sg_size, sg_lane);
    if (local == 0u) { atomicStore(&partials[wid.x], stored(total)); }
    storageBarrier();
    if (local == 0u) { gw_ticket = atomicAdd(&partials[COUNTER], 1u); }
    if (workgroupUniformLoad(&gw_ticket) != groups.x - 1u) { return; }
    storageBarrier();
    let count = groups.x;
    let last = count - 1u;
    let p0 = bitcast<f32>(atomicLoad(&partials[min(local, last)]));
    let p1 = bitcast<f32>(atomicLoad(&partials[min(local + 256u, last)]));
    let p2 = bitcast<f32>(atomicLoad(&partials[min(local + 512u, last)]));
    let p3 = bitcast<f32>(atomicLoad(&partials[min(local + 768u, last)]));
    let sum = (p0 + p1) + (p2 + p3);
    if (sum == -1.0) { atomicStore(&partials[count + local], bitcast<u32>(sum)); }
    if (local == 0u) { atomicStore(&partials[COUNTER], 0u); }
}

// The chain with its fences, one partial loaded an invocation (256, not 1024), then the generated kernel's combine:
// measures the combine.
@compute @workgroup_size(256)
fn f_combine(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let local = lid.x;
    let total = workgroup_total(local, wid.x, groups.x, sg_size, sg_lane);
    if (local == 0u) { atomicStore(&partials[wid.x], stored(total)); }
    storageBarrier();
    if (local == 0u) { gw_ticket = atomicAdd(&partials[COUNTER], 1u); }
    if (workgroupUniformLoad(&gw_ticket) != groups.x - 1u) { return; }
    storageBarrier();
    let count = groups.x;
    let reduced = combine(bitcast<f32>(atomicLoad(&partials[min(local, count - 1u)])), local, sg_size, sg_lane);
    if (local == 0u) {
        atomicStore(&partials[count], bitcast<u32>(reduced));
        atomicStore(&partials[COUNTER], 0u);
    }
}

// The finish's combine with one workgroup barrier: each subgroup's sum to workgroup memory, then the first subgroup
// alone adds those.
fn combine_once(value: f32, local: u32, sg_size: u32, sg_lane: u32) -> f32 {
    let sg_value = gw_subgroup_sum(subgroupAny(is_nan(value)), subgroupAny(bitcast<u32>(value) == 0x7f800000u), subgroupAny(bitcast<u32>(value) == 0xff800000u), subgroupAdd(value));
    if (sg_lane == 0u) { shared_values[local / sg_size] = sg_value; }
    workgroupBarrier();
    var gathered: f32 = 0.0;
    if (local < sg_size) {
        for (var j = sg_lane; j < (256u + sg_size - 1u) / sg_size; j = j + sg_size) { gathered = fadd(gathered, shared_values[j]); }
        gathered = gw_subgroup_sum(subgroupAny(is_nan(gathered)), subgroupAny(bitcast<u32>(gathered) == 0x7f800000u), subgroupAny(bitcast<u32>(gathered) == 0xff800000u), subgroupAdd(gathered));
    }
    return gathered;
}

// The whole finish, its partials' loads folded as loaded and its combine with one barrier (combine_once).
@compute @workgroup_size(256)
fn f_lean(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let local = lid.x;
    let total = workgroup_total(local, wid.x, groups.x, sg_size, sg_lane);
    if (local == 0u) { atomicStore(&partials[wid.x], stored(total)); }
    storageBarrier();
    if (local == 0u) { gw_ticket = atomicAdd(&partials[COUNTER], 1u); }
    if (workgroupUniformLoad(&gw_ticket) != groups.x - 1u) { return; }
    storageBarrier();
    let count = groups.x;
    var acc: f32 = 0.0;
    for (var i = local; i < count; i = i + 1024u) {
        let p0 = bitcast<f32>(atomicLoad(&partials[i]));
        let p1 = bitcast<f32>(atomicLoad(&partials[min(i + 256u, count - 1u)]));
        let p2 = bitcast<f32>(atomicLoad(&partials[min(i + 512u, count - 1u)]));
        let p3 = bitcast<f32>(atomicLoad(&partials[min(i + 768u, count - 1u)]));
        acc = fadd(acc, p0);
        if (i + 256u < count) { acc = fadd(acc, p1); }
        if (i + 512u < count) { acc = fadd(acc, p2); }
        if (i + 768u < count) { acc = fadd(acc, p3); }
    }
    let reduced = combine_once(acc, local, sg_size, sg_lane);
    if (local == 0u) {
        atomicStore(&partials[count], bitcast<u32>(reduced));
        atomicStore(&partials[COUNTER], 0u);
    }
}

// 1024 invocations a workgroup at a quarter of the grid (the same invocations in all, the same grid stride): a
// quarter as many partials, one load an invocation for the finish.
fn workgroup_total_1024(local: u32, group: u32, groups: u32, sg_size: u32, sg_lane: u32) -> f32 {
    var acc: f32 = 0.0;
    let quads = (params.n + 3u) / 4u;
    let grid_stride = groups * 1024u;
    var acc4 = vec4<f32>(bitcast<f32>(params.zero));
    let whole = params.n / 4u;
    var q = group * 1024u + local;
    for (; q + 3u * grid_stride < whole; q = q + 4u * grid_stride) {
        let x0 = in0[q];
        let x1 = in0[q + grid_stride];
        let x2 = in0[q + 2u * grid_stride];
        let x3 = in0[q + 3u * grid_stride];
        acc4 = ((((acc4 + x0 * x0) + x1 * x1) + x2 * x2) + x3 * x3);
    }
    for (; q < quads; q = q + grid_stride) {
        acc = gw_fold(acc, 4u * q, in0[q]);
    }
    acc = fadd(acc, fadd(fadd(acc4.x, acc4.y), fadd(acc4.z, acc4.w)));
    let sg_value = gw_subgroup_sum(subgroupAny(is_nan(acc)), subgroupAny(bitcast<u32>(acc) == 0x7f800000u), subgroupAny(bitcast<u32>(acc) == 0xff800000u), subgroupAdd(acc));
    if (sg_lane == 0u) { shared_values[local / sg_size] = sg_value; }
    workgroupBarrier();
    var gathered: f32 = 0.0;
    for (var j = sg_lane; j < (1024u + sg_size - 1u) / sg_size; j = j + sg_size) { gathered = fadd(gathered, shared_values[j]); }
    let total = gw_subgroup_sum(subgroupAny(is_nan(gathered)), subgroupAny(bitcast<u32>(gathered) == 0x7f800000u), subgroupAny(bitcast<u32>(gathered) == 0xff800000u), subgroupAdd(gathered));
    workgroupBarrier();
    return total;
}

@compute @workgroup_size(1024)
fn f_wide(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let local = lid.x;
    let total = workgroup_total_1024(local, wid.x, groups.x, sg_size, sg_lane);
    if (local == 0u) { atomicStore(&partials[wid.x], stored(total)); }
    storageBarrier();
    if (local == 0u) { gw_ticket = atomicAdd(&partials[COUNTER], 1u); }
    if (workgroupUniformLoad(&gw_ticket) != groups.x - 1u) { return; }
    storageBarrier();
    let count = groups.x;
    var acc: f32 = 0.0;
    if (local < count) { acc = bitcast<f32>(atomicLoad(&partials[local])); }
    let sg_value = gw_subgroup_sum(subgroupAny(is_nan(acc)), subgroupAny(bitcast<u32>(acc) == 0x7f800000u), subgroupAny(bitcast<u32>(acc) == 0xff800000u), subgroupAdd(acc));
    if (sg_lane == 0u) { shared_values[local / sg_size] = sg_value; }
    workgroupBarrier();
    if (local < sg_size) {
        var gathered: f32 = 0.0;
        for (var j = sg_lane; j < (1024u + sg_size - 1u) / sg_size; j = j + sg_size) { gathered = fadd(gathered, shared_values[j]); }
        let reduced = gw_subgroup_sum(subgroupAny(is_nan(gathered)), subgroupAny(bitcast<u32>(gathered) == 0x7f800000u), subgroupAny(bitcast<u32>(gathered) == 0xff800000u), subgroupAdd(gathered));
        if (local == 0u) {
            atomicStore(&partials[count], bitcast<u32>(reduced));
            atomicStore(&partials[COUNTER], 0u);
        }
    }
}

// The generated kernel, as expr_wgsl_source printed it (its counter at COUNTER).
@compute @workgroup_size(256)
fn s_gen(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let local = lid.x;
    var acc: f32 = bitcast<f32>(0x00000000u);
    let quads = (params.n + 3u) / 4u;
    let grid_stride = groups.x * 256u;
    var acc4 = vec4<f32>(bitcast<f32>(0x00000000u + params.zero));
    let whole = params.n / 4u;
    var q = wid.x * 256u + local;
    for (; q + 3u * grid_stride < whole; q = q + 4u * grid_stride) {
        let x0_0 = in0[q + 0u * grid_stride];
        let x0_1 = in0[q + 1u * grid_stride];
        let x0_2 = in0[q + 2u * grid_stride];
        let x0_3 = in0[q + 3u * grid_stride];
        let t0 = gw_terms(x0_0);
        let t1 = gw_terms(x0_1);
        let t2 = gw_terms(x0_2);
        let t3 = gw_terms(x0_3);
        acc4 = ((((acc4 + t0.value) + t1.value) + t2.value) + t3.value);
    }
    for (; q < quads; q = q + grid_stride) {
        acc = gw_fold(acc, 4u * q, in0[q]);
    }
    acc = fadd(acc, fadd(fadd(acc4.x, acc4.y), fadd(acc4.z, acc4.w)));
    let sg_value = gw_subgroup_sum(subgroupAny(is_nan(acc)), subgroupAny(bitcast<u32>(acc) == 0x7f800000u), subgroupAny(bitcast<u32>(acc) == 0xff800000u), subgroupAdd(acc));
    if (sg_lane == 0u) { shared_values[local / sg_size] = sg_value; }
    workgroupBarrier();
    var gathered: f32 = bitcast<f32>(0x00000000u);
    for (var j = sg_lane; j < (256u + sg_size - 1u) / sg_size; j = j + sg_size) { gathered = fadd(gathered, shared_values[j]); }
    let wg_value = gw_subgroup_sum(subgroupAny(is_nan(gathered)), subgroupAny(bitcast<u32>(gathered) == 0x7f800000u), subgroupAny(bitcast<u32>(gathered) == 0xff800000u), subgroupAdd(gathered));
    workgroupBarrier();
    if (local == 0u) { shared_values[0] = wg_value; }
    if (local == 0u) { atomicStore(&partials[params.base + wid.x], bitcast<u32>(shared_values[0])); }
    if (params.row == 0u) { return; }
    storageBarrier();
    if (local == 0u) { gw_ticket = atomicAdd(&partials[COUNTER], 1u); }
    if (workgroupUniformLoad(&gw_ticket) != groups.x - 1u) { return; }
    storageBarrier();
    let count = params.base + groups.x;
    {
    acc = bitcast<f32>(0x00000000u);
    for (var i = local; i < count; i = i + 1024u) {
        let p0 = bitcast<f32>(atomicLoad(&partials[i]));
        let p1 = bitcast<f32>(atomicLoad(&partials[min(i + 256u, count - 1u)]));
        let p2 = bitcast<f32>(atomicLoad(&partials[min(i + 512u, count - 1u)]));
        let p3 = bitcast<f32>(atomicLoad(&partials[min(i + 768u, count - 1u)]));
        acc = fadd(acc, p0);
        if (i + 256u < count) { acc = fadd(acc, p1); }
        if (i + 512u < count) { acc = fadd(acc, p2); }
        if (i + 768u < count) { acc = fadd(acc, p3); }
    }
    let sg_value = gw_subgroup_sum(subgroupAny(is_nan(acc)), subgroupAny(bitcast<u32>(acc) == 0x7f800000u), subgroupAny(bitcast<u32>(acc) == 0xff800000u), subgroupAdd(acc));
    if (sg_lane == 0u) { shared_values[local / sg_size] = sg_value; }
    workgroupBarrier();
    var gathered: f32 = bitcast<f32>(0x00000000u);
    for (var j = sg_lane; j < (256u + sg_size - 1u) / sg_size; j = j + sg_size) { gathered = fadd(gathered, shared_values[j]); }
    let wg_value = gw_subgroup_sum(subgroupAny(is_nan(gathered)), subgroupAny(bitcast<u32>(gathered) == 0x7f800000u), subgroupAny(bitcast<u32>(gathered) == 0xff800000u), subgroupAdd(gathered));
    workgroupBarrier();
    if (local == 0u) { shared_values[0] = wg_value; }
    if (local == 0u) {
        let reduced = shared_values[0];
        let v3: f32 = reduced;
        atomicStore(&partials[count], bitcast<u32>(v3));
        atomicStore(&partials[COUNTER], 0u);
    }
    }
}

// The generated kernel of a build whose finish was one subgroup's, 32 loads a lane masked by select and no workgroup
// barrier: slower on the H200 than the finish it replaced, and reverted (docs/results/nvidia-h200/half/README.md,
// tuning 15).
@compute @workgroup_size(256)
fn s_new(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let local = lid.x;
    var acc: f32 = bitcast<f32>(0x00000000u);
    let quads = (params.n + 3u) / 4u;
    let grid_stride = groups.x * 256u;
    var acc4 = vec4<f32>(bitcast<f32>(0x00000000u + params.zero));
    let whole = params.n / 4u;
    var q = wid.x * 256u + local;
    for (; q + 3u * grid_stride < whole; q = q + 4u * grid_stride) {
        let x0_0 = in0[q + 0u * grid_stride];
        let x0_1 = in0[q + 1u * grid_stride];
        let x0_2 = in0[q + 2u * grid_stride];
        let x0_3 = in0[q + 3u * grid_stride];
        let t0 = gw_terms(x0_0);
        let t1 = gw_terms(x0_1);
        let t2 = gw_terms(x0_2);
        let t3 = gw_terms(x0_3);
        acc4 = ((((acc4 + t0.value) + t1.value) + t2.value) + t3.value);
    }
    for (; q < quads; q = q + grid_stride) {
        acc = gw_fold(acc, 4u * q, in0[q]);
    }
    acc = fadd(acc, fadd(fadd(acc4.x, acc4.y), fadd(acc4.z, acc4.w)));
    let sg_value = gw_subgroup_sum(subgroupAny(is_nan(acc)), subgroupAny(bitcast<u32>(acc) == 0x7f800000u), subgroupAny(bitcast<u32>(acc) == 0xff800000u), subgroupAdd(acc));
    if (sg_lane == 0u) { shared_values[local / sg_size] = sg_value; }
    workgroupBarrier();
    var gathered: f32 = bitcast<f32>(0x00000000u);
    for (var j = sg_lane; j < (256u + sg_size - 1u) / sg_size; j = j + sg_size) { gathered = fadd(gathered, shared_values[j]); }
    let wg_value = gw_subgroup_sum(subgroupAny(is_nan(gathered)), subgroupAny(bitcast<u32>(gathered) == 0x7f800000u), subgroupAny(bitcast<u32>(gathered) == 0xff800000u), subgroupAdd(gathered));
    workgroupBarrier();
    if (local == 0u) { shared_values[0] = wg_value; }
    if (local == 0u) { atomicStore(&partials[params.base + wid.x], bitcast<u32>(shared_values[0])); }
    if (params.row == 0u) { return; }
    storageBarrier();
    if (local == 0u) { gw_ticket = atomicAdd(&partials[COUNTER], 1u); }
    if (workgroupUniformLoad(&gw_ticket) != groups.x - 1u) { return; }
    storageBarrier();
    let count = params.base + groups.x;
    {
    acc = bitcast<f32>(0x00000000u);
    if (!subgroupAny(local == 0u)) { return; }
    for (var i = sg_lane; i < count; i = i + 32u * sg_size) {
        let p0 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i, count - 1u)])), i < count);
        let p1 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 1u * sg_size, count - 1u)])), i + 1u * sg_size < count);
        let p2 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 2u * sg_size, count - 1u)])), i + 2u * sg_size < count);
        let p3 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 3u * sg_size, count - 1u)])), i + 3u * sg_size < count);
        let p4 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 4u * sg_size, count - 1u)])), i + 4u * sg_size < count);
        let p5 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 5u * sg_size, count - 1u)])), i + 5u * sg_size < count);
        let p6 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 6u * sg_size, count - 1u)])), i + 6u * sg_size < count);
        let p7 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 7u * sg_size, count - 1u)])), i + 7u * sg_size < count);
        let p8 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 8u * sg_size, count - 1u)])), i + 8u * sg_size < count);
        let p9 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 9u * sg_size, count - 1u)])), i + 9u * sg_size < count);
        let p10 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 10u * sg_size, count - 1u)])), i + 10u * sg_size < count);
        let p11 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 11u * sg_size, count - 1u)])), i + 11u * sg_size < count);
        let p12 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 12u * sg_size, count - 1u)])), i + 12u * sg_size < count);
        let p13 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 13u * sg_size, count - 1u)])), i + 13u * sg_size < count);
        let p14 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 14u * sg_size, count - 1u)])), i + 14u * sg_size < count);
        let p15 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 15u * sg_size, count - 1u)])), i + 15u * sg_size < count);
        let p16 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 16u * sg_size, count - 1u)])), i + 16u * sg_size < count);
        let p17 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 17u * sg_size, count - 1u)])), i + 17u * sg_size < count);
        let p18 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 18u * sg_size, count - 1u)])), i + 18u * sg_size < count);
        let p19 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 19u * sg_size, count - 1u)])), i + 19u * sg_size < count);
        let p20 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 20u * sg_size, count - 1u)])), i + 20u * sg_size < count);
        let p21 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 21u * sg_size, count - 1u)])), i + 21u * sg_size < count);
        let p22 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 22u * sg_size, count - 1u)])), i + 22u * sg_size < count);
        let p23 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 23u * sg_size, count - 1u)])), i + 23u * sg_size < count);
        let p24 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 24u * sg_size, count - 1u)])), i + 24u * sg_size < count);
        let p25 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 25u * sg_size, count - 1u)])), i + 25u * sg_size < count);
        let p26 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 26u * sg_size, count - 1u)])), i + 26u * sg_size < count);
        let p27 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 27u * sg_size, count - 1u)])), i + 27u * sg_size < count);
        let p28 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 28u * sg_size, count - 1u)])), i + 28u * sg_size < count);
        let p29 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 29u * sg_size, count - 1u)])), i + 29u * sg_size < count);
        let p30 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 30u * sg_size, count - 1u)])), i + 30u * sg_size < count);
        let p31 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 31u * sg_size, count - 1u)])), i + 31u * sg_size < count);
        acc = fadd(acc, fadd(fadd(fadd(fadd(fadd(p0, p1), fadd(p2, p3)), fadd(fadd(p4, p5), fadd(p6, p7))), fadd(fadd(fadd(p8, p9), fadd(p10, p11)), fadd(fadd(p12, p13), fadd(p14, p15)))), fadd(fadd(fadd(fadd(p16, p17), fadd(p18, p19)), fadd(fadd(p20, p21), fadd(p22, p23))), fadd(fadd(fadd(p24, p25), fadd(p26, p27)), fadd(fadd(p28, p29), fadd(p30, p31))))));
    }
    let reduced = gw_subgroup_sum(subgroupAny(is_nan(acc)), subgroupAny(bitcast<u32>(acc) == 0x7f800000u), subgroupAny(bitcast<u32>(acc) == 0xff800000u), subgroupAdd(acc));
    if (sg_lane == 0u) {
        let v3: f32 = reduced;
        atomicStore(&partials[count], bitcast<u32>(v3));
        atomicStore(&partials[COUNTER], 0u);
    }
    }
}

// The generated kernel with its finish's loads masked by select rather than guarded by branches, every invocation
// loading four: no faster on the H200.
@compute @workgroup_size(256)
fn s_wg(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let local = lid.x;
    var acc: f32 = bitcast<f32>(0x00000000u);
    let quads = (params.n + 3u) / 4u;
    let grid_stride = groups.x * 256u;
    var acc4 = vec4<f32>(bitcast<f32>(0x00000000u + params.zero));
    let whole = params.n / 4u;
    var q = wid.x * 256u + local;
    for (; q + 3u * grid_stride < whole; q = q + 4u * grid_stride) {
        let x0_0 = in0[q + 0u * grid_stride];
        let x0_1 = in0[q + 1u * grid_stride];
        let x0_2 = in0[q + 2u * grid_stride];
        let x0_3 = in0[q + 3u * grid_stride];
        let t0 = gw_terms(x0_0);
        let t1 = gw_terms(x0_1);
        let t2 = gw_terms(x0_2);
        let t3 = gw_terms(x0_3);
        acc4 = ((((acc4 + t0.value) + t1.value) + t2.value) + t3.value);
    }
    for (; q < quads; q = q + grid_stride) {
        acc = gw_fold(acc, 4u * q, in0[q]);
    }
    acc = fadd(acc, fadd(fadd(acc4.x, acc4.y), fadd(acc4.z, acc4.w)));
    let sg_value = gw_subgroup_sum(subgroupAny(is_nan(acc)), subgroupAny(bitcast<u32>(acc) == 0x7f800000u), subgroupAny(bitcast<u32>(acc) == 0xff800000u), subgroupAdd(acc));
    if (sg_lane == 0u) { shared_values[local / sg_size] = sg_value; }
    workgroupBarrier();
    var gathered: f32 = bitcast<f32>(0x00000000u);
    for (var j = sg_lane; j < (256u + sg_size - 1u) / sg_size; j = j + sg_size) { gathered = fadd(gathered, shared_values[j]); }
    let wg_value = gw_subgroup_sum(subgroupAny(is_nan(gathered)), subgroupAny(bitcast<u32>(gathered) == 0x7f800000u), subgroupAny(bitcast<u32>(gathered) == 0xff800000u), subgroupAdd(gathered));
    workgroupBarrier();
    if (local == 0u) { shared_values[0] = wg_value; }
    if (local == 0u) { atomicStore(&partials[params.base + wid.x], bitcast<u32>(shared_values[0])); }
    if (params.row == 0u) { return; }
    storageBarrier();
    if (local == 0u) { gw_ticket = atomicAdd(&partials[COUNTER], 1u); }
    if (workgroupUniformLoad(&gw_ticket) != groups.x - 1u) { return; }
    storageBarrier();
    let count = params.base + groups.x;
    {
    acc = bitcast<f32>(0x00000000u);
    for (var i = local; i < count; i = i + 1024u) {
        let p0 = select(0.0, bitcast<f32>(atomicLoad(&partials[min(i, count - 1u)])), i < count);
        let p1 = select(0.0, bitcast<f32>(atomicLoad(&partials[min(i + 256u, count - 1u)])), i + 256u < count);
        let p2 = select(0.0, bitcast<f32>(atomicLoad(&partials[min(i + 512u, count - 1u)])), i + 512u < count);
        let p3 = select(0.0, bitcast<f32>(atomicLoad(&partials[min(i + 768u, count - 1u)])), i + 768u < count);
        acc = fadd(acc, fadd(fadd(p0, p1), fadd(p2, p3)));
    }
    let sg_value = gw_subgroup_sum(subgroupAny(is_nan(acc)), subgroupAny(bitcast<u32>(acc) == 0x7f800000u), subgroupAny(bitcast<u32>(acc) == 0xff800000u), subgroupAdd(acc));
    if (sg_lane == 0u) { shared_values[local / sg_size] = sg_value; }
    workgroupBarrier();
    var gathered: f32 = bitcast<f32>(0x00000000u);
    for (var j = sg_lane; j < (256u + sg_size - 1u) / sg_size; j = j + sg_size) { gathered = fadd(gathered, shared_values[j]); }
    let wg_value = gw_subgroup_sum(subgroupAny(is_nan(gathered)), subgroupAny(bitcast<u32>(gathered) == 0x7f800000u), subgroupAny(bitcast<u32>(gathered) == 0xff800000u), subgroupAdd(gathered));
    workgroupBarrier();
    if (local == 0u) { shared_values[0] = wg_value; }
    if (local == 0u) {
        let reduced = shared_values[0];
        let v3: f32 = reduced;
        atomicStore(&partials[count], bitcast<u32>(v3));
        atomicStore(&partials[COUNTER], 0u);
    }
    }
}

// s_new with 16 loads a lane: two trips of the finishing subgroup.
@compute @workgroup_size(256)
fn s_new16(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let local = lid.x;
    var acc: f32 = bitcast<f32>(0x00000000u);
    let quads = (params.n + 3u) / 4u;
    let grid_stride = groups.x * 256u;
    var acc4 = vec4<f32>(bitcast<f32>(0x00000000u + params.zero));
    let whole = params.n / 4u;
    var q = wid.x * 256u + local;
    for (; q + 3u * grid_stride < whole; q = q + 4u * grid_stride) {
        let x0_0 = in0[q + 0u * grid_stride];
        let x0_1 = in0[q + 1u * grid_stride];
        let x0_2 = in0[q + 2u * grid_stride];
        let x0_3 = in0[q + 3u * grid_stride];
        let t0 = gw_terms(x0_0);
        let t1 = gw_terms(x0_1);
        let t2 = gw_terms(x0_2);
        let t3 = gw_terms(x0_3);
        acc4 = ((((acc4 + t0.value) + t1.value) + t2.value) + t3.value);
    }
    for (; q < quads; q = q + grid_stride) {
        acc = gw_fold(acc, 4u * q, in0[q]);
    }
    acc = fadd(acc, fadd(fadd(acc4.x, acc4.y), fadd(acc4.z, acc4.w)));
    let sg_value = gw_subgroup_sum(subgroupAny(is_nan(acc)), subgroupAny(bitcast<u32>(acc) == 0x7f800000u), subgroupAny(bitcast<u32>(acc) == 0xff800000u), subgroupAdd(acc));
    if (sg_lane == 0u) { shared_values[local / sg_size] = sg_value; }
    workgroupBarrier();
    var gathered: f32 = bitcast<f32>(0x00000000u);
    for (var j = sg_lane; j < (256u + sg_size - 1u) / sg_size; j = j + sg_size) { gathered = fadd(gathered, shared_values[j]); }
    let wg_value = gw_subgroup_sum(subgroupAny(is_nan(gathered)), subgroupAny(bitcast<u32>(gathered) == 0x7f800000u), subgroupAny(bitcast<u32>(gathered) == 0xff800000u), subgroupAdd(gathered));
    workgroupBarrier();
    if (local == 0u) { shared_values[0] = wg_value; }
    if (local == 0u) { atomicStore(&partials[params.base + wid.x], bitcast<u32>(shared_values[0])); }
    if (params.row == 0u) { return; }
    storageBarrier();
    if (local == 0u) { gw_ticket = atomicAdd(&partials[COUNTER], 1u); }
    if (workgroupUniformLoad(&gw_ticket) != groups.x - 1u) { return; }
    storageBarrier();
    let count = params.base + groups.x;
    {
    acc = bitcast<f32>(0x00000000u);
    if (!subgroupAny(local == 0u)) { return; }
    for (var i = sg_lane; i < count; i = i + 16u * sg_size) {
        let p0 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i, count - 1u)])), i < count);
        let p1 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 1u * sg_size, count - 1u)])), i + 1u * sg_size < count);
        let p2 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 2u * sg_size, count - 1u)])), i + 2u * sg_size < count);
        let p3 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 3u * sg_size, count - 1u)])), i + 3u * sg_size < count);
        let p4 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 4u * sg_size, count - 1u)])), i + 4u * sg_size < count);
        let p5 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 5u * sg_size, count - 1u)])), i + 5u * sg_size < count);
        let p6 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 6u * sg_size, count - 1u)])), i + 6u * sg_size < count);
        let p7 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 7u * sg_size, count - 1u)])), i + 7u * sg_size < count);
        let p8 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 8u * sg_size, count - 1u)])), i + 8u * sg_size < count);
        let p9 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 9u * sg_size, count - 1u)])), i + 9u * sg_size < count);
        let p10 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 10u * sg_size, count - 1u)])), i + 10u * sg_size < count);
        let p11 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 11u * sg_size, count - 1u)])), i + 11u * sg_size < count);
        let p12 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 12u * sg_size, count - 1u)])), i + 12u * sg_size < count);
        let p13 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 13u * sg_size, count - 1u)])), i + 13u * sg_size < count);
        let p14 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 14u * sg_size, count - 1u)])), i + 14u * sg_size < count);
        let p15 = select(bitcast<f32>(0x00000000u), bitcast<f32>(atomicLoad(&partials[min(i + 15u * sg_size, count - 1u)])), i + 15u * sg_size < count);
        acc = fadd(acc, fadd(fadd(fadd(fadd(p0, p1), fadd(p2, p3)), fadd(fadd(p4, p5), fadd(p6, p7))), fadd(fadd(fadd(p8, p9), fadd(p10, p11)), fadd(fadd(p12, p13), fadd(p14, p15)))));
    }
    let reduced = gw_subgroup_sum(subgroupAny(is_nan(acc)), subgroupAny(bitcast<u32>(acc) == 0x7f800000u), subgroupAny(bitcast<u32>(acc) == 0xff800000u), subgroupAdd(acc));
    if (sg_lane == 0u) {
        let v3: f32 = reduced;
        atomicStore(&partials[count], bitcast<u32>(v3));
        atomicStore(&partials[COUNTER], 0u);
    }
    }
}
