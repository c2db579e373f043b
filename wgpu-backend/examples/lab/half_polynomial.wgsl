// The Horner polynomial of the expression peers on bf16 arrays, as the backend generated it (expr_wgsl_source), with the
// lab's bindings and inputs (each f32 word's upper half for both its elements: values in [0, 1)): p_now rounds with
// the NaN case on every path; p_finite and p_pair leave it out on the common path (p_pair also packs each pair as it
// takes the upper halves, as the backend now does), p_extract takes the parity bit with extractBits; p_copy copies.
// With expr_helpers.wgsl (wgsl_lab expr_helpers.wgsl+half_polynomial.wgsl).
@group(0) @binding(1) var<storage, read> in0: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> out0: array<vec4<u32>>;

fn gw_element(a0: f32) -> array<f32, 1> {
    let v0: f32 = bitcast<f32>(0x3c000000u);
    let v1: f32 = a0;
    let v2: f32 = fmul(v0, v1);
    let v3: f32 = bitcast<f32>(0x3c800000u);
    let v4: f32 = fadd(v2, v3);
    let v5: f32 = a0;
    let v6: f32 = fmul(v4, v5);
    let v7: f32 = bitcast<f32>(0x3d000000u);
    let v8: f32 = fadd(v6, v7);
    let v9: f32 = a0;
    let v10: f32 = fmul(v8, v9);
    let v11: f32 = bitcast<f32>(0x3d800000u);
    let v12: f32 = fadd(v10, v11);
    let v13: f32 = a0;
    let v14: f32 = fmul(v12, v13);
    let v15: f32 = bitcast<f32>(0x3e000000u);
    let v16: f32 = fadd(v14, v15);
    let v17: f32 = a0;
    let v18: f32 = fmul(v16, v17);
    let v19: f32 = bitcast<f32>(0x3e800000u);
    let v20: f32 = fadd(v18, v19);
    let v21: f32 = a0;
    let v22: f32 = fmul(v20, v21);
    let v23: f32 = bitcast<f32>(0x3f000000u);
    let v24: f32 = fadd(v22, v23);
    let v25: f32 = a0;
    let v26: f32 = fmul(v24, v25);
    let v27: f32 = bitcast<f32>(0x3f800000u);
    let v28: f32 = fadd(v26, v27);
    return array<f32, 1>(v28);
}
fn gw_quad(x0: vec4<f32>) -> array<vec4<f32>, 1> {
    var special = vec4<u32>(0u);
    let w0: vec4<f32> = vec4<f32>(bitcast<f32>(0x3c000000u));
    let w1: vec4<f32> = x0;
    special = max(special, bitcast<vec4<u32>>(w1) & vec4<u32>(0x7f800000u));
    let w2: vec4<f32> = (w0 * w1);
    let w3: vec4<f32> = vec4<f32>(bitcast<f32>(0x3c800000u));
    let w4: vec4<f32> = (w2 + w3);
    let w5: vec4<f32> = x0;
    let w6: vec4<f32> = (w4 * w5);
    let w7: vec4<f32> = vec4<f32>(bitcast<f32>(0x3d000000u));
    let w8: vec4<f32> = (w6 + w7);
    let w9: vec4<f32> = x0;
    let w10: vec4<f32> = (w8 * w9);
    let w11: vec4<f32> = vec4<f32>(bitcast<f32>(0x3d800000u));
    let w12: vec4<f32> = (w10 + w11);
    let w13: vec4<f32> = x0;
    let w14: vec4<f32> = (w12 * w13);
    let w15: vec4<f32> = vec4<f32>(bitcast<f32>(0x3e000000u));
    let w16: vec4<f32> = (w14 + w15);
    let w17: vec4<f32> = x0;
    let w18: vec4<f32> = (w16 * w17);
    let w19: vec4<f32> = vec4<f32>(bitcast<f32>(0x3e800000u));
    let w20: vec4<f32> = (w18 + w19);
    let w21: vec4<f32> = x0;
    let w22: vec4<f32> = (w20 * w21);
    let w23: vec4<f32> = vec4<f32>(bitcast<f32>(0x3f000000u));
    let w24: vec4<f32> = (w22 + w23);
    let w25: vec4<f32> = x0;
    let w26: vec4<f32> = (w24 * w25);
    let w27: vec4<f32> = vec4<f32>(bitcast<f32>(0x3f800000u));
    let w28: vec4<f32> = (w26 + w27);
    special = max(special, bitcast<vec4<u32>>(w28) & vec4<u32>(0x7f800000u));
    let worst = max(max(special.x, special.y), max(special.z, special.w));
    if (worst == 0x7f800000u) {
        let rx = gw_element(x0.x);
        let ry = gw_element(x0.y);
        let rz = gw_element(x0.z);
        let rw = gw_element(x0.w);
        return array<vec4<f32>, 1>(vec4<f32>(rx[0], ry[0], rz[0], rw[0]));
    }
    return array<vec4<f32>, 1>(w28);
}
@compute @workgroup_size(256)
fn p_now(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    let v0 = in0[q];
    let low = gw_quad(widen_bf16(v0.xy));
    let high = gw_quad(widen_bf16(v0.zw));
    out0[q] = vec4<u32>(narrow_bf16(low[0]), narrow_bf16(high[0]));
}

fn narrow_bf16_finite(w: vec4<f32>) -> vec2<u32> {
    let b = bitcast<vec4<u32>>(w);
    let h = (b + vec4<u32>(0x7fffu) + ((b >> vec4<u32>(16u)) & vec4<u32>(1u))) >> vec4<u32>(16u);
    return vec2<u32>(h.x | (h.y << 16u), h.z | (h.w << 16u));
}
fn narrow_bf16_pair(w: vec4<f32>) -> vec2<u32> {
    let b = bitcast<vec4<u32>>(w);
    let r = b + vec4<u32>(0x7fffu) + ((b >> vec4<u32>(16u)) & vec4<u32>(1u));
    return vec2<u32>((r.x >> 16u) | (r.y & 0xffff0000u), (r.z >> 16u) | (r.w & 0xffff0000u));
}
fn narrow_bf16_extract(w: vec4<f32>) -> vec2<u32> {
    let b = bitcast<vec4<u32>>(w);
    let r = b + vec4<u32>(0x7fffu) + extractBits(b, 16u, 1u);
    return vec2<u32>((r.x >> 16u) | (r.y & 0xffff0000u), (r.z >> 16u) | (r.w & 0xffff0000u));
}
fn gw_quad_fin(x0: vec4<f32>) -> vec2<u32> {
    var special = vec4<u32>(0u);
    let w0: vec4<f32> = vec4<f32>(bitcast<f32>(0x3c000000u));
    let w1: vec4<f32> = x0;
    special = max(special, bitcast<vec4<u32>>(w1) & vec4<u32>(0x7f800000u));
    let w2: vec4<f32> = (w0 * w1);
    let w3: vec4<f32> = vec4<f32>(bitcast<f32>(0x3c800000u));
    let w4: vec4<f32> = (w2 + w3);
    let w5: vec4<f32> = x0;
    let w6: vec4<f32> = (w4 * w5);
    let w7: vec4<f32> = vec4<f32>(bitcast<f32>(0x3d000000u));
    let w8: vec4<f32> = (w6 + w7);
    let w9: vec4<f32> = x0;
    let w10: vec4<f32> = (w8 * w9);
    let w11: vec4<f32> = vec4<f32>(bitcast<f32>(0x3d800000u));
    let w12: vec4<f32> = (w10 + w11);
    let w13: vec4<f32> = x0;
    let w14: vec4<f32> = (w12 * w13);
    let w15: vec4<f32> = vec4<f32>(bitcast<f32>(0x3e000000u));
    let w16: vec4<f32> = (w14 + w15);
    let w17: vec4<f32> = x0;
    let w18: vec4<f32> = (w16 * w17);
    let w19: vec4<f32> = vec4<f32>(bitcast<f32>(0x3e800000u));
    let w20: vec4<f32> = (w18 + w19);
    let w21: vec4<f32> = x0;
    let w22: vec4<f32> = (w20 * w21);
    let w23: vec4<f32> = vec4<f32>(bitcast<f32>(0x3f000000u));
    let w24: vec4<f32> = (w22 + w23);
    let w25: vec4<f32> = x0;
    let w26: vec4<f32> = (w24 * w25);
    let w27: vec4<f32> = vec4<f32>(bitcast<f32>(0x3f800000u));
    let w28: vec4<f32> = (w26 + w27);
    special = max(special, bitcast<vec4<u32>>(w28) & vec4<u32>(0x7f800000u));
    let worst = max(max(special.x, special.y), max(special.z, special.w));
    if (worst == 0x7f800000u) {
        let rx = gw_element(x0.x);
        let ry = gw_element(x0.y);
        let rz = gw_element(x0.z);
        let rw = gw_element(x0.w);
        return narrow_bf16(vec4<f32>(rx[0], ry[0], rz[0], rw[0]));
    }
    return narrow_bf16_finite(w28);
}
fn gw_quad_pair(x0: vec4<f32>) -> vec2<u32> {
    var special = vec4<u32>(0u);
    let w0: vec4<f32> = vec4<f32>(bitcast<f32>(0x3c000000u));
    let w1: vec4<f32> = x0;
    special = max(special, bitcast<vec4<u32>>(w1) & vec4<u32>(0x7f800000u));
    let w2: vec4<f32> = (w0 * w1);
    let w3: vec4<f32> = vec4<f32>(bitcast<f32>(0x3c800000u));
    let w4: vec4<f32> = (w2 + w3);
    let w5: vec4<f32> = x0;
    let w6: vec4<f32> = (w4 * w5);
    let w7: vec4<f32> = vec4<f32>(bitcast<f32>(0x3d000000u));
    let w8: vec4<f32> = (w6 + w7);
    let w9: vec4<f32> = x0;
    let w10: vec4<f32> = (w8 * w9);
    let w11: vec4<f32> = vec4<f32>(bitcast<f32>(0x3d800000u));
    let w12: vec4<f32> = (w10 + w11);
    let w13: vec4<f32> = x0;
    let w14: vec4<f32> = (w12 * w13);
    let w15: vec4<f32> = vec4<f32>(bitcast<f32>(0x3e000000u));
    let w16: vec4<f32> = (w14 + w15);
    let w17: vec4<f32> = x0;
    let w18: vec4<f32> = (w16 * w17);
    let w19: vec4<f32> = vec4<f32>(bitcast<f32>(0x3e800000u));
    let w20: vec4<f32> = (w18 + w19);
    let w21: vec4<f32> = x0;
    let w22: vec4<f32> = (w20 * w21);
    let w23: vec4<f32> = vec4<f32>(bitcast<f32>(0x3f000000u));
    let w24: vec4<f32> = (w22 + w23);
    let w25: vec4<f32> = x0;
    let w26: vec4<f32> = (w24 * w25);
    let w27: vec4<f32> = vec4<f32>(bitcast<f32>(0x3f800000u));
    let w28: vec4<f32> = (w26 + w27);
    special = max(special, bitcast<vec4<u32>>(w28) & vec4<u32>(0x7f800000u));
    let worst = max(max(special.x, special.y), max(special.z, special.w));
    if (worst == 0x7f800000u) {
        let rx = gw_element(x0.x);
        let ry = gw_element(x0.y);
        let rz = gw_element(x0.z);
        let rw = gw_element(x0.w);
        return narrow_bf16(vec4<f32>(rx[0], ry[0], rz[0], rw[0]));
    }
    return narrow_bf16_pair(w28);
}
fn gw_quad_ext(x0: vec4<f32>) -> vec2<u32> {
    var special = vec4<u32>(0u);
    let w0: vec4<f32> = vec4<f32>(bitcast<f32>(0x3c000000u));
    let w1: vec4<f32> = x0;
    special = max(special, bitcast<vec4<u32>>(w1) & vec4<u32>(0x7f800000u));
    let w2: vec4<f32> = (w0 * w1);
    let w3: vec4<f32> = vec4<f32>(bitcast<f32>(0x3c800000u));
    let w4: vec4<f32> = (w2 + w3);
    let w5: vec4<f32> = x0;
    let w6: vec4<f32> = (w4 * w5);
    let w7: vec4<f32> = vec4<f32>(bitcast<f32>(0x3d000000u));
    let w8: vec4<f32> = (w6 + w7);
    let w9: vec4<f32> = x0;
    let w10: vec4<f32> = (w8 * w9);
    let w11: vec4<f32> = vec4<f32>(bitcast<f32>(0x3d800000u));
    let w12: vec4<f32> = (w10 + w11);
    let w13: vec4<f32> = x0;
    let w14: vec4<f32> = (w12 * w13);
    let w15: vec4<f32> = vec4<f32>(bitcast<f32>(0x3e000000u));
    let w16: vec4<f32> = (w14 + w15);
    let w17: vec4<f32> = x0;
    let w18: vec4<f32> = (w16 * w17);
    let w19: vec4<f32> = vec4<f32>(bitcast<f32>(0x3e800000u));
    let w20: vec4<f32> = (w18 + w19);
    let w21: vec4<f32> = x0;
    let w22: vec4<f32> = (w20 * w21);
    let w23: vec4<f32> = vec4<f32>(bitcast<f32>(0x3f000000u));
    let w24: vec4<f32> = (w22 + w23);
    let w25: vec4<f32> = x0;
    let w26: vec4<f32> = (w24 * w25);
    let w27: vec4<f32> = vec4<f32>(bitcast<f32>(0x3f800000u));
    let w28: vec4<f32> = (w26 + w27);
    special = max(special, bitcast<vec4<u32>>(w28) & vec4<u32>(0x7f800000u));
    let worst = max(max(special.x, special.y), max(special.z, special.w));
    if (worst == 0x7f800000u) {
        let rx = gw_element(x0.x);
        let ry = gw_element(x0.y);
        let rz = gw_element(x0.z);
        let rw = gw_element(x0.w);
        return narrow_bf16(vec4<f32>(rx[0], ry[0], rz[0], rw[0]));
    }
    return narrow_bf16_extract(w28);
}
@compute @workgroup_size(256)
fn p_finite(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    let v0 = in0[q];
    out0[q] = vec4<u32>(gw_quad_fin(widen_bf16(v0.xy)), gw_quad_fin(widen_bf16(v0.zw)));
}
@compute @workgroup_size(256)
fn p_pair(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    let v0 = in0[q];
    out0[q] = vec4<u32>(gw_quad_pair(widen_bf16(v0.xy)), gw_quad_pair(widen_bf16(v0.zw)));
}
@compute @workgroup_size(256)
fn p_extract(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    let v0 = in0[q];
    out0[q] = vec4<u32>(gw_quad_ext(widen_bf16(v0.xy)), gw_quad_ext(widen_bf16(v0.zw)));
}
@compute @workgroup_size(256)
fn p_copy(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    out0[q] = in0[q];
}
@compute @workgroup_size(256)
fn p_axpb(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x + id.y * params.row;
    if (q >= (params.n + 7u) / 8u) { return; }
    let v0 = in0[q];
    out0[q] = vec4<u32>(narrow_bf16_pair(widen_bf16(v0.xy) * 2.0 + 1.0), narrow_bf16_pair(widen_bf16(v0.zw) * 2.0 + 1.0));
}
