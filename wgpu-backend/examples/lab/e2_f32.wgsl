// y = exp(-x*x) * sin(3*x) on f32 arrays: e_now as the backend generated it (expr_wgsl_source 'y = exp(-x*x) *
// sin(3*x)' - f32), which calls the guarded helpers lane by lane on its common path, and e_vec4, which calls
// branch-free vec4 twins of them there (equal for every finite argument; a NaN or an infinity argument sends the vec4
// to the guarded path either way). With expr_helpers.wgsl (wgsl_lab expr_helpers.wgsl+e2_f32.wgsl).
@group(0) @binding(1) var<storage, read> in0: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out0: array<vec4<f32>>;
fn reduce_angle4(x: vec4<f32>) -> vec4<f32> {
    let k = round(x * 0.15915493667125702);
    let r = ((x - k * 6.28125) - k * 0.0019350051879882812) - k * 3.019916050561733e-7;
    return select(r, x, abs(x) > vec4<f32>(262144.0));
}
fn fsin4(x: vec4<f32>) -> vec4<f32> { return select(sin(reduce_angle4(x)), x, x == vec4<f32>(0.0)); }
fn fexp4(x: vec4<f32>) -> vec4<f32> {
    return select(select(exp(x), vec4<f32>(inf_f()), x > vec4<f32>(88.8)), vec4<f32>(0.0), x < vec4<f32>(-104.0));
}
fn gw_element(a0: f32) -> array<f32, 1> {
    let v0: f32 = a0;
    let v1: f32 = fneg(v0);
    let v2: f32 = a0;
    let v3: f32 = fmul(v1, v2);
    let v4: f32 = fexp(v3);
    let v5: f32 = bitcast<f32>(0x40400000u);
    let v6: f32 = a0;
    let v7: f32 = fmul(v5, v6);
    let v8: f32 = fsin(v7);
    let v9: f32 = fmul(v4, v8);
    return array<f32, 1>(v9);
}
@compute @workgroup_size(256)
fn e_now(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 3u) / 4u) { return; }
    let x0 = in0[q];
    var special = vec4<u32>(0u);
    let w0: vec4<f32> = x0;
    special = max(special, bitcast<vec4<u32>>(w0) & vec4<u32>(0x7f800000u));
    let w1: vec4<f32> = (-w0);
    let w2: vec4<f32> = x0;
    let w3: vec4<f32> = (w1 * w2);
    special = max(special, bitcast<vec4<u32>>(w3) & vec4<u32>(0x7f800000u));
    let w4: vec4<f32> = vec4<f32>(fexp(w3.x), fexp(w3.y), fexp(w3.z), fexp(w3.w));
    special = max(special, bitcast<vec4<u32>>(w4) & vec4<u32>(0x7f800000u));
    let w5: vec4<f32> = vec4<f32>(bitcast<f32>(0x40400000u));
    let w6: vec4<f32> = x0;
    let w7: vec4<f32> = (w5 * w6);
    special = max(special, bitcast<vec4<u32>>(w7) & vec4<u32>(0x7f800000u));
    let w8: vec4<f32> = vec4<f32>(fsin(w7.x), fsin(w7.y), fsin(w7.z), fsin(w7.w));
    special = max(special, bitcast<vec4<u32>>(w8) & vec4<u32>(0x7f800000u));
    let w9: vec4<f32> = (w4 * w8);
    special = max(special, bitcast<vec4<u32>>(w9) & vec4<u32>(0x7f800000u));
    let worst = max(max(special.x, special.y), max(special.z, special.w));
    if (worst == 0x7f800000u) {
        let rx = gw_element(x0.x);
        let ry = gw_element(x0.y);
        let rz = gw_element(x0.z);
        let rw = gw_element(x0.w);
        out0[q] = vec4<f32>(rx[0], ry[0], rz[0], rw[0]);
        return;
    }
    out0[q] = w9;
}
@compute @workgroup_size(256)
fn e_vec4(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 3u) / 4u) { return; }
    let x0 = in0[q];
    var special = vec4<u32>(0u);
    let w0: vec4<f32> = x0;
    special = max(special, bitcast<vec4<u32>>(w0) & vec4<u32>(0x7f800000u));
    let w1: vec4<f32> = (-w0);
    let w2: vec4<f32> = x0;
    let w3: vec4<f32> = (w1 * w2);
    special = max(special, bitcast<vec4<u32>>(w3) & vec4<u32>(0x7f800000u));
    let w4: vec4<f32> = fexp4(w3);
    special = max(special, bitcast<vec4<u32>>(w4) & vec4<u32>(0x7f800000u));
    let w5: vec4<f32> = vec4<f32>(bitcast<f32>(0x40400000u));
    let w6: vec4<f32> = x0;
    let w7: vec4<f32> = (w5 * w6);
    special = max(special, bitcast<vec4<u32>>(w7) & vec4<u32>(0x7f800000u));
    let w8: vec4<f32> = fsin4(w7);
    special = max(special, bitcast<vec4<u32>>(w8) & vec4<u32>(0x7f800000u));
    let w9: vec4<f32> = (w4 * w8);
    special = max(special, bitcast<vec4<u32>>(w9) & vec4<u32>(0x7f800000u));
    let worst = max(max(special.x, special.y), max(special.z, special.w));
    if (worst == 0x7f800000u) {
        let rx = gw_element(x0.x);
        let ry = gw_element(x0.y);
        let rz = gw_element(x0.z);
        let rw = gw_element(x0.w);
        out0[q] = vec4<f32>(rx[0], ry[0], rz[0], rw[0]);
        return;
    }
    out0[q] = w9;
}
// Eight elements an invocation: e_x2 reads two neighbouring vec4s (32 bytes), e_halves one vec4 in each half of the
// array (P3 = the number of vec4s in the first half), each with its own guarded fallback.
struct E2Out { value: vec4<f32>, worst: u32 }
fn e2_common(x0: vec4<f32>) -> E2Out {
    var special = vec4<u32>(0u);
    special = max(special, bitcast<vec4<u32>>(x0) & vec4<u32>(0x7f800000u));
    let w3: vec4<f32> = ((-x0) * x0);
    special = max(special, bitcast<vec4<u32>>(w3) & vec4<u32>(0x7f800000u));
    let w4: vec4<f32> = fexp4(w3);
    special = max(special, bitcast<vec4<u32>>(w4) & vec4<u32>(0x7f800000u));
    let w7: vec4<f32> = (vec4<f32>(bitcast<f32>(0x40400000u)) * x0);
    special = max(special, bitcast<vec4<u32>>(w7) & vec4<u32>(0x7f800000u));
    let w8: vec4<f32> = fsin4(w7);
    special = max(special, bitcast<vec4<u32>>(w8) & vec4<u32>(0x7f800000u));
    let w9: vec4<f32> = (w4 * w8);
    special = max(special, bitcast<vec4<u32>>(w9) & vec4<u32>(0x7f800000u));
    return E2Out(w9, max(max(special.x, special.y), max(special.z, special.w)));
}
fn e2_guarded(x0: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(gw_element(x0.x)[0], gw_element(x0.y)[0], gw_element(x0.z)[0], gw_element(x0.w)[0]);
}
@compute @workgroup_size(256)
fn e_x2(@builtin(global_invocation_id) id: vec3<u32>) {
    let p = id.x + id.y * params.row;
    let quads = (params.n + 3u) / 4u;
    let q0 = 2u * p;
    if (q0 >= quads) { return; }
    let q1 = min(q0 + 1u, quads - 1u);
    let x0 = in0[q0];
    let x1 = in0[q1];
    let a = e2_common(x0);
    let b = e2_common(x1);
    var y0 = a.value;
    if (a.worst == 0x7f800000u) { y0 = e2_guarded(x0); }
    var y1 = b.value;
    if (b.worst == 0x7f800000u) { y1 = e2_guarded(x1); }
    out0[q0] = y0;
    out0[q1] = y1;
}
@compute @workgroup_size(256)
fn e_halves(@builtin(global_invocation_id) id: vec3<u32>) {
    let p = id.x + id.y * params.row;
    let quads = (params.n + 3u) / 4u;
    let half = params.base;
    if (p >= half) { return; }
    let q1 = min(p + half, quads - 1u);
    let x0 = in0[p];
    let x1 = in0[q1];
    let a = e2_common(x0);
    let b = e2_common(x1);
    var y0 = a.value;
    if (a.worst == 0x7f800000u) { y0 = e2_guarded(x0); }
    var y1 = b.value;
    if (b.worst == 0x7f800000u) { y1 = e2_guarded(x1); }
    out0[p] = y0;
    out0[q1] = y1;
}
