// s = sum(x*x) on bf16 arrays in one dispatch, as the backend generated it (expr_wgsl_source 's = sum(x*x)' - bf16
// subgroups): every workgroup writes its partial, and with P1 = 1 the last to finish adds them. The lab binds one
// output, so the counter of finished workgroups is its word 16383 (the backend binds it on its own); with P1 = 0 the
// kernel is the first pass alone, which says what the finish costs at each grid.
// With expr_helpers.wgsl (wgsl_lab expr_helpers.wgsl+half_sum_one_pass.wgsl).
@group(0) @binding(1) var<storage, read> in0: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> partials: array<atomic<u32>>;
var<workgroup> gw_ticket: u32;
var<workgroup> shared_values: array<f32, 256>;
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
    var special = vec4<u32>(0u);
    let w0: vec4<f32> = x0;
    let w1: vec4<f32> = x0;
    let w2: vec4<f32> = (w0 * w1);
    let worst = max(max(special.x, special.y), max(special.z, special.w));
    return GwTerms(w2, worst == 0x7f800000u);
}
@compute @workgroup_size(256)
fn s_one(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let local = lid.x;
    var acc: f32 = bitcast<f32>(0x00000000u);
    let quads = (params.n + 3u) / 4u;
    let grid_stride = groups.x * 256u;
    var acc4 = vec4<f32>(bitcast<f32>(0x00000000u + params.zero));
    let whole = params.n / 4u;
    var q = wid.x * 256u + local;
    for (; q + 3u * grid_stride < whole; q = q + 4u * grid_stride) {
        let x0_0 = widen_bf16(in0[q + 0u * grid_stride]);
        let x0_1 = widen_bf16(in0[q + 1u * grid_stride]);
        let x0_2 = widen_bf16(in0[q + 2u * grid_stride]);
        let x0_3 = widen_bf16(in0[q + 3u * grid_stride]);
        let t0 = gw_terms(x0_0);
        let t1 = gw_terms(x0_1);
        let t2 = gw_terms(x0_2);
        let t3 = gw_terms(x0_3);
        acc4 = ((((acc4 + t0.value) + t1.value) + t2.value) + t3.value);
    }
    for (; q < quads; q = q + grid_stride) {
        acc = gw_fold(acc, 4u * q, widen_bf16(in0[q]));
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
    if (local == 0u) { gw_ticket = atomicAdd(&partials[16383u], 1u); }
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
        atomicStore(&partials[16383u], 0u);
    }
    }
}
