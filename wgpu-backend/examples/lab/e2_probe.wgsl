// Where y = exp(-x*x) * sin(3*x)'s time goes on f32 arrays, shape by shape (with expr_helpers.wgsl+e2_f32.wgsl, which
// hold the generated helpers, e_vec4 and e_halves; e2_probe.sh runs it). Only e_vec4 and the p_probe_* shapes are
// exact for every input: the others leave out the guarded path or the tests, to measure what those cost.
@compute @workgroup_size(256)
fn p_copy(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 3u) / 4u) { return; }
    out0[q] = in0[q];
}
@compute @workgroup_size(256)
fn p_axpb(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 3u) / 4u) { return; }
    let x0 = in0[q];
    var special = vec4<u32>(0u);
    special = max(special, bitcast<vec4<u32>>(x0) & vec4<u32>(0x7f800000u));
    let w = 2.0 * x0 + 1.0;
    special = max(special, bitcast<vec4<u32>>(w) & vec4<u32>(0x7f800000u));
    let worst = max(max(special.x, special.y), max(special.z, special.w));
    if (worst == 0x7f800000u) { out0[q] = e2_guarded(x0); return; }
    out0[q] = w;
}
// Specials tracked, the guarded fallback replaced by a store of the input.
@compute @workgroup_size(256)
fn p_nofb(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 3u) / 4u) { return; }
    let x0 = in0[q];
    let a = e2_common(x0);
    if (a.worst == 0x7f800000u) { out0[q] = x0; return; }
    out0[q] = a.value;
}
// No tracking, no fallback: the vec4 twins alone.
@compute @workgroup_size(256)
fn p_nospec(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 3u) / 4u) { return; }
    let x0 = in0[q];
    out0[q] = fexp4(-x0 * x0) * fsin4(3.0 * x0);
}
// The builtins alone.
@compute @workgroup_size(256)
fn p_raw(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 3u) / 4u) { return; }
    let x0 = in0[q];
    out0[q] = exp(-x0 * x0) * sin(3.0 * x0);
}
@compute @workgroup_size(256)
fn p_sin(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 3u) / 4u) { return; }
    out0[q] = fsin4(3.0 * in0[q]);
}
@compute @workgroup_size(256)
fn p_exp(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 3u) / 4u) { return; }
    let x0 = in0[q];
    out0[q] = fexp4(-x0 * x0);
}
// The fallback taken lane by lane in a loop the compiler may keep rolled.
@compute @workgroup_size(256)
fn p_fbloop(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 3u) / 4u) { return; }
    let x0 = in0[q];
    let a = e2_common(x0);
    if (a.worst == 0x7f800000u) {
        var r = vec4<f32>(0.0);
        for (var l = params.zero; l < 4u; l++) { r[l] = gw_element(x0[l])[0]; }
        out0[q] = r;
        return;
    }
    out0[q] = a.value;
}
// Eight an invocation (one vec4 in each half) without the fallback, and with the fallback in a loop.
@compute @workgroup_size(256)
fn p_halves_nofb(@builtin(global_invocation_id) id: vec3<u32>) {
    let p = id.x + id.y * params.row;
    let quads = (params.n + 3u) / 4u;
    let half = params.base;
    if (p >= half) { return; }
    let q1 = min(p + half, quads - 1u);
    let x0 = in0[p];
    let x1 = in0[q1];
    let a = e2_common(x0);
    let b = e2_common(x1);
    if (max(a.worst, b.worst) == 0x7f800000u) { out0[p] = x0; out0[q1] = x1; return; }
    out0[p] = a.value;
    out0[q1] = b.value;
}
@compute @workgroup_size(256)
fn p_halves_fbloop(@builtin(global_invocation_id) id: vec3<u32>) {
    let p = id.x + id.y * params.row;
    let quads = (params.n + 3u) / 4u;
    let half = params.base;
    if (p >= half) { return; }
    let q1 = min(p + half, quads - 1u);
    let x0 = in0[p];
    let x1 = in0[q1];
    let a = e2_common(x0);
    let b = e2_common(x1);
    if (max(a.worst, b.worst) == 0x7f800000u) {
        for (var h = params.zero; h < 2u; h++) {
            let q = select(p, q1, h == 1u);
            let x = in0[q];
            var r = vec4<f32>(0.0);
            for (var l = params.zero; l < 4u; l++) { r[l] = gw_element(x[l])[0]; }
            out0[q] = r;
        }
        return;
    }
    out0[p] = a.value;
    out0[q1] = b.value;
}
@compute @workgroup_size(256)
fn p_halves_copy(@builtin(global_invocation_id) id: vec3<u32>) {
    let p = id.x + id.y * params.row;
    let quads = (params.n + 3u) / 4u;
    let half = params.base;
    if (p >= half) { return; }
    let q1 = min(p + half, quads - 1u);
    out0[p] = in0[p];
    out0[q1] = in0[q1];
}
// The values' magnitudes added into one probe (a NaN or an infinity anywhere makes it one; so may an overflow, which
// only sends the vec4 to the guarded path), with the fallback in a loop.
fn e2_probe(x0: vec4<f32>) -> E2Out {
    var probe = abs(x0);
    let w3: vec4<f32> = ((-x0) * x0);
    probe = probe + abs(w3);
    let w4: vec4<f32> = fexp4(w3);
    probe = probe + abs(w4);
    let w7: vec4<f32> = (vec4<f32>(bitcast<f32>(0x40400000u)) * x0);
    probe = probe + abs(w7);
    let w8: vec4<f32> = fsin4(w7);
    probe = probe + abs(w8);
    let w9: vec4<f32> = (w4 * w8);
    probe = probe + abs(w9);
    let e = bitcast<vec4<u32>>(probe) & vec4<u32>(0x7f800000u);
    return E2Out(w9, max(max(e.x, e.y), max(e.z, e.w)));
}
@compute @workgroup_size(256)
fn p_probe_fbloop(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 3u) / 4u) { return; }
    let x0 = in0[q];
    let a = e2_probe(x0);
    if (a.worst == 0x7f800000u) {
        var r = vec4<f32>(0.0);
        for (var l = params.zero; l < 4u; l++) { r[l] = gw_element(x0[l])[0]; }
        out0[q] = r;
        return;
    }
    out0[q] = a.value;
}
@compute @workgroup_size(256)
fn p_probe_unrolled(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 3u) / 4u) { return; }
    let x0 = in0[q];
    let a = e2_probe(x0);
    if (a.worst == 0x7f800000u) { out0[q] = e2_guarded(x0); return; }
    out0[q] = a.value;
}
@compute @workgroup_size(256)
fn p_halves_probe(@builtin(global_invocation_id) id: vec3<u32>) {
    let p = id.x + id.y * params.row;
    let quads = (params.n + 3u) / 4u;
    let half = params.base;
    if (p >= half) { return; }
    let q1 = min(p + half, quads - 1u);
    let x0 = in0[p];
    let x1 = in0[q1];
    let a = e2_probe(x0);
    let b = e2_probe(x1);
    if (max(a.worst, b.worst) == 0x7f800000u) {
        for (var h = params.zero; h < 2u; h++) {
            let q = select(p, q1, h == 1u);
            let x = in0[q];
            var r = vec4<f32>(0.0);
            for (var l = params.zero; l < 4u; l++) { r[l] = gw_element(x[l])[0]; }
            out0[q] = r;
        }
        return;
    }
    out0[p] = a.value;
    out0[q1] = b.value;
}
