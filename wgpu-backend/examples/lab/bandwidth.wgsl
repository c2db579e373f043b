// Kernel shapes tried with the wgsl_lab example (see run.sh): square: threads per workgroup (sq_wgN, one vec4 per thread), grid-stride loops with U vec4 loads in flight (sq_gs_uU), and blocks of U vec4s per thread (sq_blk_uU).
// Bindings as wgsl_lab sets them: 0 the four u32 parameters, 1 the input, 2 the output.
struct Params { n4: u32, a: u32, b: u32, c: u32, }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;

@compute @workgroup_size(64)
fn sq_wg64(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = (wid.x + wid.y * nwg.x) * 64u + lid.x;
    if (i < params.n4) { let v = x[i]; y[i] = v * v; }
}

@compute @workgroup_size(128)
fn sq_wg128(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = (wid.x + wid.y * nwg.x) * 128u + lid.x;
    if (i < params.n4) { let v = x[i]; y[i] = v * v; }
}

@compute @workgroup_size(256)
fn sq_wg256(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = (wid.x + wid.y * nwg.x) * 256u + lid.x;
    if (i < params.n4) { let v = x[i]; y[i] = v * v; }
}

@compute @workgroup_size(512)
fn sq_wg512(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = (wid.x + wid.y * nwg.x) * 512u + lid.x;
    if (i < params.n4) { let v = x[i]; y[i] = v * v; }
}

@compute @workgroup_size(1024)
fn sq_wg1024(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = (wid.x + wid.y * nwg.x) * 1024u + lid.x;
    if (i < params.n4) { let v = x[i]; y[i] = v * v; }
}

@compute @workgroup_size(256)
fn sq_gs_u1(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let stride = nwg.x * nwg.y * 256u;
    for (var i = (wid.x + wid.y * nwg.x) * 256u + lid.x; i < n4; i += 1u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(0.0); if (i0 < n4) { v0 = x[i0]; }
        if (i0 < n4) { y[i0] = v0 * v0; }
    }
}

@compute @workgroup_size(256)
fn sq_blk_u1(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let base = (wid.x + wid.y * nwg.x) * 256u + lid.x;
    let i0 = base + 0u * 256u; var v0 = vec4<f32>(0.0); if (i0 < n4) { v0 = x[i0]; }
    if (i0 < n4) { y[i0] = v0 * v0; }
}

@compute @workgroup_size(256)
fn sq_gs_u2(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let stride = nwg.x * nwg.y * 256u;
    for (var i = (wid.x + wid.y * nwg.x) * 256u + lid.x; i < n4; i += 2u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(0.0); if (i0 < n4) { v0 = x[i0]; }
        let i1 = i + 1u * stride; var v1 = vec4<f32>(0.0); if (i1 < n4) { v1 = x[i1]; }
        if (i0 < n4) { y[i0] = v0 * v0; }
        if (i1 < n4) { y[i1] = v1 * v1; }
    }
}

@compute @workgroup_size(256)
fn sq_blk_u2(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let base = (wid.x + wid.y * nwg.x) * 512u + lid.x;
    let i0 = base + 0u * 256u; var v0 = vec4<f32>(0.0); if (i0 < n4) { v0 = x[i0]; }
    let i1 = base + 1u * 256u; var v1 = vec4<f32>(0.0); if (i1 < n4) { v1 = x[i1]; }
    if (i0 < n4) { y[i0] = v0 * v0; }
    if (i1 < n4) { y[i1] = v1 * v1; }
}

@compute @workgroup_size(256)
fn sq_gs_u4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let stride = nwg.x * nwg.y * 256u;
    for (var i = (wid.x + wid.y * nwg.x) * 256u + lid.x; i < n4; i += 4u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(0.0); if (i0 < n4) { v0 = x[i0]; }
        let i1 = i + 1u * stride; var v1 = vec4<f32>(0.0); if (i1 < n4) { v1 = x[i1]; }
        let i2 = i + 2u * stride; var v2 = vec4<f32>(0.0); if (i2 < n4) { v2 = x[i2]; }
        let i3 = i + 3u * stride; var v3 = vec4<f32>(0.0); if (i3 < n4) { v3 = x[i3]; }
        if (i0 < n4) { y[i0] = v0 * v0; }
        if (i1 < n4) { y[i1] = v1 * v1; }
        if (i2 < n4) { y[i2] = v2 * v2; }
        if (i3 < n4) { y[i3] = v3 * v3; }
    }
}

@compute @workgroup_size(256)
fn sq_blk_u4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let base = (wid.x + wid.y * nwg.x) * 1024u + lid.x;
    let i0 = base + 0u * 256u; var v0 = vec4<f32>(0.0); if (i0 < n4) { v0 = x[i0]; }
    let i1 = base + 1u * 256u; var v1 = vec4<f32>(0.0); if (i1 < n4) { v1 = x[i1]; }
    let i2 = base + 2u * 256u; var v2 = vec4<f32>(0.0); if (i2 < n4) { v2 = x[i2]; }
    let i3 = base + 3u * 256u; var v3 = vec4<f32>(0.0); if (i3 < n4) { v3 = x[i3]; }
    if (i0 < n4) { y[i0] = v0 * v0; }
    if (i1 < n4) { y[i1] = v1 * v1; }
    if (i2 < n4) { y[i2] = v2 * v2; }
    if (i3 < n4) { y[i3] = v3 * v3; }
}

@compute @workgroup_size(256)
fn sq_gs_u8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let stride = nwg.x * nwg.y * 256u;
    for (var i = (wid.x + wid.y * nwg.x) * 256u + lid.x; i < n4; i += 8u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(0.0); if (i0 < n4) { v0 = x[i0]; }
        let i1 = i + 1u * stride; var v1 = vec4<f32>(0.0); if (i1 < n4) { v1 = x[i1]; }
        let i2 = i + 2u * stride; var v2 = vec4<f32>(0.0); if (i2 < n4) { v2 = x[i2]; }
        let i3 = i + 3u * stride; var v3 = vec4<f32>(0.0); if (i3 < n4) { v3 = x[i3]; }
        let i4 = i + 4u * stride; var v4 = vec4<f32>(0.0); if (i4 < n4) { v4 = x[i4]; }
        let i5 = i + 5u * stride; var v5 = vec4<f32>(0.0); if (i5 < n4) { v5 = x[i5]; }
        let i6 = i + 6u * stride; var v6 = vec4<f32>(0.0); if (i6 < n4) { v6 = x[i6]; }
        let i7 = i + 7u * stride; var v7 = vec4<f32>(0.0); if (i7 < n4) { v7 = x[i7]; }
        if (i0 < n4) { y[i0] = v0 * v0; }
        if (i1 < n4) { y[i1] = v1 * v1; }
        if (i2 < n4) { y[i2] = v2 * v2; }
        if (i3 < n4) { y[i3] = v3 * v3; }
        if (i4 < n4) { y[i4] = v4 * v4; }
        if (i5 < n4) { y[i5] = v5 * v5; }
        if (i6 < n4) { y[i6] = v6 * v6; }
        if (i7 < n4) { y[i7] = v7 * v7; }
    }
}

@compute @workgroup_size(256)
fn sq_blk_u8(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let base = (wid.x + wid.y * nwg.x) * 2048u + lid.x;
    let i0 = base + 0u * 256u; var v0 = vec4<f32>(0.0); if (i0 < n4) { v0 = x[i0]; }
    let i1 = base + 1u * 256u; var v1 = vec4<f32>(0.0); if (i1 < n4) { v1 = x[i1]; }
    let i2 = base + 2u * 256u; var v2 = vec4<f32>(0.0); if (i2 < n4) { v2 = x[i2]; }
    let i3 = base + 3u * 256u; var v3 = vec4<f32>(0.0); if (i3 < n4) { v3 = x[i3]; }
    let i4 = base + 4u * 256u; var v4 = vec4<f32>(0.0); if (i4 < n4) { v4 = x[i4]; }
    let i5 = base + 5u * 256u; var v5 = vec4<f32>(0.0); if (i5 < n4) { v5 = x[i5]; }
    let i6 = base + 6u * 256u; var v6 = vec4<f32>(0.0); if (i6 < n4) { v6 = x[i6]; }
    let i7 = base + 7u * 256u; var v7 = vec4<f32>(0.0); if (i7 < n4) { v7 = x[i7]; }
    if (i0 < n4) { y[i0] = v0 * v0; }
    if (i1 < n4) { y[i1] = v1 * v1; }
    if (i2 < n4) { y[i2] = v2 * v2; }
    if (i3 < n4) { y[i3] = v3 * v3; }
    if (i4 < n4) { y[i4] = v4 * v4; }
    if (i5 < n4) { y[i5] = v5 * v5; }
    if (i6 < n4) { y[i6] = v6 * v6; }
    if (i7 < n4) { y[i7] = v7 * v7; }
}
