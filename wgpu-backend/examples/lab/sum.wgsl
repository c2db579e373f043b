// Kernel shapes tried with the wgsl_lab example (see run.sh): sum: U vec4 loads in flight per trip, with Kahan compensation or plain adds, subgroup or tree combine.
// Bindings as wgsl_lab sets them: 0 the four u32 parameters, 1 the input, 2 the output.
struct Params { n4: u32, a: u32, b: u32, c: u32, }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> partials: array<f32>;
var<workgroup> sg_sums: array<f32, 256>;
var<workgroup> tree: array<f32, 256>;
fn not_finite(v: f32) -> bool { return (bitcast<u32>(v) & 0x7f800000u) == 0x7f800000u; }

@compute @workgroup_size(256)
fn sum_v4_u1_kahan(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let n4 = params.n4;
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    var sum = 0.0;
    var comp = 0.0;
    for (var i = wg * 256u + lid.x; i < n4; i += 1u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(0.0); if (i0 < n4) { v0 = x[i0]; }
        { let term = ((v0.x + v0.y) + (v0.z + v0.w)) - comp; let t = sum + term; comp = select((t - sum) - term, 0.0, not_finite(t)); sum = t; }
    }
    sum = sum - comp;
    let t = subgroupAdd(sum);
    if (sg_lane == 0u) { sg_sums[lid.x / sg_size] = t; }
    workgroupBarrier();
    var v = 0.0;
    for (var j = sg_lane; j < 256u / sg_size; j += sg_size) { v = v + sg_sums[j]; }
    let w = subgroupAdd(v);
    if (lid.x == 0u) { partials[wg] = w; }
}

@compute @workgroup_size(256)
fn sum_v4_u1_plain(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let n4 = params.n4;
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    var sum = 0.0;
    var comp = 0.0;
    for (var i = wg * 256u + lid.x; i < n4; i += 1u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(0.0); if (i0 < n4) { v0 = x[i0]; }
        sum = sum + ((v0.x + v0.y) + (v0.z + v0.w));
    }
    sum = sum - comp;
    let t = subgroupAdd(sum);
    if (sg_lane == 0u) { sg_sums[lid.x / sg_size] = t; }
    workgroupBarrier();
    var v = 0.0;
    for (var j = sg_lane; j < 256u / sg_size; j += sg_size) { v = v + sg_sums[j]; }
    let w = subgroupAdd(v);
    if (lid.x == 0u) { partials[wg] = w; }
}

@compute @workgroup_size(256)
fn sum_v4_u2_kahan(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let n4 = params.n4;
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    var sum = 0.0;
    var comp = 0.0;
    for (var i = wg * 256u + lid.x; i < n4; i += 2u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(0.0); if (i0 < n4) { v0 = x[i0]; }
        let i1 = i + 1u * stride; var v1 = vec4<f32>(0.0); if (i1 < n4) { v1 = x[i1]; }
        { let term = ((v0.x + v0.y) + (v0.z + v0.w)) - comp; let t = sum + term; comp = select((t - sum) - term, 0.0, not_finite(t)); sum = t; }
        { let term = ((v1.x + v1.y) + (v1.z + v1.w)) - comp; let t = sum + term; comp = select((t - sum) - term, 0.0, not_finite(t)); sum = t; }
    }
    sum = sum - comp;
    let t = subgroupAdd(sum);
    if (sg_lane == 0u) { sg_sums[lid.x / sg_size] = t; }
    workgroupBarrier();
    var v = 0.0;
    for (var j = sg_lane; j < 256u / sg_size; j += sg_size) { v = v + sg_sums[j]; }
    let w = subgroupAdd(v);
    if (lid.x == 0u) { partials[wg] = w; }
}

@compute @workgroup_size(256)
fn sum_v4_u2_plain(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let n4 = params.n4;
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    var sum = 0.0;
    var comp = 0.0;
    for (var i = wg * 256u + lid.x; i < n4; i += 2u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(0.0); if (i0 < n4) { v0 = x[i0]; }
        let i1 = i + 1u * stride; var v1 = vec4<f32>(0.0); if (i1 < n4) { v1 = x[i1]; }
        sum = sum + ((v0.x + v0.y) + (v0.z + v0.w));
        sum = sum + ((v1.x + v1.y) + (v1.z + v1.w));
    }
    sum = sum - comp;
    let t = subgroupAdd(sum);
    if (sg_lane == 0u) { sg_sums[lid.x / sg_size] = t; }
    workgroupBarrier();
    var v = 0.0;
    for (var j = sg_lane; j < 256u / sg_size; j += sg_size) { v = v + sg_sums[j]; }
    let w = subgroupAdd(v);
    if (lid.x == 0u) { partials[wg] = w; }
}

@compute @workgroup_size(256)
fn sum_v4_u4_kahan(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let n4 = params.n4;
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    var sum = 0.0;
    var comp = 0.0;
    for (var i = wg * 256u + lid.x; i < n4; i += 4u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(0.0); if (i0 < n4) { v0 = x[i0]; }
        let i1 = i + 1u * stride; var v1 = vec4<f32>(0.0); if (i1 < n4) { v1 = x[i1]; }
        let i2 = i + 2u * stride; var v2 = vec4<f32>(0.0); if (i2 < n4) { v2 = x[i2]; }
        let i3 = i + 3u * stride; var v3 = vec4<f32>(0.0); if (i3 < n4) { v3 = x[i3]; }
        { let term = ((v0.x + v0.y) + (v0.z + v0.w)) - comp; let t = sum + term; comp = select((t - sum) - term, 0.0, not_finite(t)); sum = t; }
        { let term = ((v1.x + v1.y) + (v1.z + v1.w)) - comp; let t = sum + term; comp = select((t - sum) - term, 0.0, not_finite(t)); sum = t; }
        { let term = ((v2.x + v2.y) + (v2.z + v2.w)) - comp; let t = sum + term; comp = select((t - sum) - term, 0.0, not_finite(t)); sum = t; }
        { let term = ((v3.x + v3.y) + (v3.z + v3.w)) - comp; let t = sum + term; comp = select((t - sum) - term, 0.0, not_finite(t)); sum = t; }
    }
    sum = sum - comp;
    let t = subgroupAdd(sum);
    if (sg_lane == 0u) { sg_sums[lid.x / sg_size] = t; }
    workgroupBarrier();
    var v = 0.0;
    for (var j = sg_lane; j < 256u / sg_size; j += sg_size) { v = v + sg_sums[j]; }
    let w = subgroupAdd(v);
    if (lid.x == 0u) { partials[wg] = w; }
}

@compute @workgroup_size(256)
fn sum_v4_u4_plain(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let n4 = params.n4;
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    var sum = 0.0;
    var comp = 0.0;
    for (var i = wg * 256u + lid.x; i < n4; i += 4u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(0.0); if (i0 < n4) { v0 = x[i0]; }
        let i1 = i + 1u * stride; var v1 = vec4<f32>(0.0); if (i1 < n4) { v1 = x[i1]; }
        let i2 = i + 2u * stride; var v2 = vec4<f32>(0.0); if (i2 < n4) { v2 = x[i2]; }
        let i3 = i + 3u * stride; var v3 = vec4<f32>(0.0); if (i3 < n4) { v3 = x[i3]; }
        sum = sum + ((v0.x + v0.y) + (v0.z + v0.w));
        sum = sum + ((v1.x + v1.y) + (v1.z + v1.w));
        sum = sum + ((v2.x + v2.y) + (v2.z + v2.w));
        sum = sum + ((v3.x + v3.y) + (v3.z + v3.w));
    }
    sum = sum - comp;
    let t = subgroupAdd(sum);
    if (sg_lane == 0u) { sg_sums[lid.x / sg_size] = t; }
    workgroupBarrier();
    var v = 0.0;
    for (var j = sg_lane; j < 256u / sg_size; j += sg_size) { v = v + sg_sums[j]; }
    let w = subgroupAdd(v);
    if (lid.x == 0u) { partials[wg] = w; }
}

@compute @workgroup_size(256)
fn sum_v4_u2_tree(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    var sum = 0.0;
    var comp = 0.0;
    for (var i = wg * 256u + lid.x; i < n4; i += 2u * stride) {
        let i0 = i; let i1 = i + stride;
        var v0 = vec4<f32>(0.0); var v1 = vec4<f32>(0.0);
        v0 = x[i0];
        if (i1 < n4) { v1 = x[i1]; }
        { let term = ((v0.x + v0.y) + (v0.z + v0.w)) - comp; let t = sum + term; comp = select((t - sum) - term, 0.0, not_finite(t)); sum = t; }
        { let term = ((v1.x + v1.y) + (v1.z + v1.w)) - comp; let t = sum + term; comp = select((t - sum) - term, 0.0, not_finite(t)); sum = t; }
    }
    tree[lid.x] = sum - comp;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (lid.x < s) { tree[lid.x] = tree[lid.x] + tree[lid.x + s]; }
        workgroupBarrier();
    }
    if (lid.x == 0u) { partials[wg] = tree[0]; }
}
