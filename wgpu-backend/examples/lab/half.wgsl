// 16-bit arrays (see run.sh): `y = 2*x + 1` over eight elements an invocation, 16 bytes a load, with the rounding
// to f16 done in integer arithmetic (what the expression kernels generate, h_f16_int) or by `pack2x16float`
// (h_f16_pack), bf16's integer rounding (h_bf16), and a copy of the same bytes by a kernel (h_copy).
// Bindings as wgsl_lab sets them: 0 the four u32 parameters, 1 the input, 2 the output.
struct Params { n8: u32, a: u32, b: u32, c: u32, }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<u32>>;

fn widen_f16(v: vec2<u32>) -> vec4<f32> { return vec4<f32>(unpack2x16float(v.x), unpack2x16float(v.y)); }
fn narrow_f16(w: vec4<f32>) -> vec2<u32> {
    let b = bitcast<vec4<u32>>(w);
    let sign = (b >> vec4<u32>(16u)) & vec4<u32>(0x8000u);
    let a = b & vec4<u32>(0x7fffffffu);
    let normal = (a - vec4<u32>(0x38000000u) + vec4<u32>(0x0fffu) + ((a >> vec4<u32>(13u)) & vec4<u32>(1u))) >> vec4<u32>(13u);
    let tiny = bitcast<vec4<u32>>(bitcast<vec4<f32>>(a) + vec4<f32>(0.5)) - vec4<u32>(0x3f000000u);
    var r = select(tiny, normal, a >= vec4<u32>(0x38800000u));
    r = select(r, vec4<u32>(0x7c00u), a >= vec4<u32>(0x477ff000u));
    r = select(r, vec4<u32>(0x7e00u), a > vec4<u32>(0x7f800000u));
    let h = sign | r;
    return vec2<u32>(h.x | (h.y << 16u), h.z | (h.w << 16u));
}
fn narrow_f16_pack(w: vec4<f32>) -> vec2<u32> { return vec2<u32>(pack2x16float(w.xy), pack2x16float(w.zw)); }
fn widen_bf16(v: vec2<u32>) -> vec4<f32> {
    return bitcast<vec4<f32>>(vec4<u32>(v.x << 16u, v.x & 0xffff0000u, v.y << 16u, v.y & 0xffff0000u));
}
fn narrow_bf16(w: vec4<f32>) -> vec2<u32> {
    let b = bitcast<vec4<u32>>(w);
    let rounded = (b + vec4<u32>(0x7fffu) + ((b >> vec4<u32>(16u)) & vec4<u32>(1u))) >> vec4<u32>(16u);
    let h = select(rounded, (b >> vec4<u32>(16u)) | vec4<u32>(0x40u), (b & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u));
    return vec2<u32>(h.x | (h.y << 16u), h.z | (h.w << 16u));
}

@compute @workgroup_size(256)
fn h_copy(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x;
    if (q < params.n8) { y[q] = x[q]; }
}

@compute @workgroup_size(256)
fn h_f16_int(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x;
    if (q >= params.n8) { return; }
    let v = x[q];
    let lo = widen_f16(v.xy) * 2.0 + 1.0;
    let hi = widen_f16(v.zw) * 2.0 + 1.0;
    y[q] = vec4<u32>(narrow_f16(lo), narrow_f16(hi));
}

@compute @workgroup_size(256)
fn h_f16_pack(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x;
    if (q >= params.n8) { return; }
    let v = x[q];
    let lo = widen_f16(v.xy) * 2.0 + 1.0;
    let hi = widen_f16(v.zw) * 2.0 + 1.0;
    y[q] = vec4<u32>(narrow_f16_pack(lo), narrow_f16_pack(hi));
}

@compute @workgroup_size(256)
fn h_bf16(@builtin(global_invocation_id) id: vec3<u32>) {
    let q = id.x;
    if (q >= params.n8) { return; }
    let v = x[q];
    let lo = widen_bf16(v.xy) * 2.0 + 1.0;
    let hi = widen_bf16(v.zw) * 2.0 + 1.0;
    y[q] = vec4<u32>(narrow_bf16(lo), narrow_bf16(hi));
}
