// s = sum(x*x) on bf16 arrays with 16-byte loads (eight elements), two or four a trip.
// With expr_helpers.wgsl (wgsl_lab expr_helpers.wgsl+half_sum_wide.wgsl).
@group(0) @binding(1) var<storage, read> in0: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> partials: array<f32>;

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
fn s_wide2(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let local = lid.x;
    var acc: f32 = bitcast<f32>(0x00000000u);
    let quads = (params.n + 7u) / 8u;
    let grid_stride = groups.x * 256u;
    var acc4 = vec4<f32>(bitcast<f32>(0x00000000u + params.zero));
    let whole = params.n / 8u;
    var q = wid.x * 256u + local;
    for (; q + 1u * grid_stride < whole; q = q + 2u * grid_stride) {
        let y0 = in0[q + 0u * grid_stride];
        let y1 = in0[q + 1u * grid_stride];
        acc4 = acc4 + gw_terms(widen_bf16(y0.xy)).value + gw_terms(widen_bf16(y0.zw)).value + gw_terms(widen_bf16(y1.xy)).value + gw_terms(widen_bf16(y1.zw)).value;
    }
    for (; q < quads; q = q + grid_stride) {
        let yy = in0[q];
        acc = gw_fold(gw_fold(acc, 8u * q, widen_bf16(yy.xy)), 8u * q + 4u, widen_bf16(yy.zw));
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
    if (local == 0u) { partials[params.base + wid.x] = shared_values[0]; }
}
@compute @workgroup_size(256)
fn s_wide4(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let local = lid.x;
    var acc: f32 = bitcast<f32>(0x00000000u);
    let quads = (params.n + 7u) / 8u;
    let grid_stride = groups.x * 256u;
    var acc4 = vec4<f32>(bitcast<f32>(0x00000000u + params.zero));
    let whole = params.n / 8u;
    var q = wid.x * 256u + local;
    for (; q + 3u * grid_stride < whole; q = q + 4u * grid_stride) {
        let y0 = in0[q + 0u * grid_stride];
        let y1 = in0[q + 1u * grid_stride];
        let y2 = in0[q + 2u * grid_stride];
        let y3 = in0[q + 3u * grid_stride];
        acc4 = acc4 + gw_terms(widen_bf16(y0.xy)).value + gw_terms(widen_bf16(y0.zw)).value + gw_terms(widen_bf16(y1.xy)).value + gw_terms(widen_bf16(y1.zw)).value + gw_terms(widen_bf16(y2.xy)).value + gw_terms(widen_bf16(y2.zw)).value + gw_terms(widen_bf16(y3.xy)).value + gw_terms(widen_bf16(y3.zw)).value;
    }
    for (; q < quads; q = q + grid_stride) {
        let yy = in0[q];
        acc = gw_fold(gw_fold(acc, 8u * q, widen_bf16(yy.xy)), 8u * q + 4u, widen_bf16(yy.zw));
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
    if (local == 0u) { partials[params.base + wid.x] = shared_values[0]; }
}
