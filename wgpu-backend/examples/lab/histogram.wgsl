// Kernel shapes tried with the wgsl_lab example (see run.sh): histogram private: U vec4 loads in flight, a branching (bin_of) or branch-free (bin_fast) bin function, C interleaved private copies.
// Bindings as wgsl_lab sets them: 0 the four u32 parameters, 1 the input, 2 the output.
struct Params { n4: u32, bins: u32, b: u32, c: u32, }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> counts: array<atomic<u32>>;
var<workgroup> hist: array<atomic<u32>, 4096>;
const NO_BIN: u32 = 0xffffffffu;
fn bin_of(v: f32, bins: u32) -> u32 {
    let bits = bitcast<u32>(v);
    if ((bits & 0x7fffffffu) > 0x7f800000u) { return NO_BIN; }
    let fbins = f32(bins);
    let t = v * fbins;
    let tbits = bitcast<u32>(t);
    if (tbits == 0x7f800000u) { return bins - 1u; }
    if (tbits == 0xff800000u) { return 0u; }
    return min(u32(clamp(t, 0.0, fbins)), bins - 1u);
}
// Branch-free variant: NaN maps to NO_BIN, infinities via clamp on the bit-tested value.
fn bin_fast(v: f32, bins: u32, fbins: f32) -> u32 {
    let bits = bitcast<u32>(v);
    let t = v * fbins;
    let tb = bitcast<u32>(t);
    // +inf -> bins-1, -inf -> 0, finite -> clamp
    var b = min(u32(clamp(t, 0.0, fbins)), bins - 1u);
    b = select(b, bins - 1u, tb == 0x7f800000u);
    b = select(b, 0u, tb == 0xff800000u);
    return select(b, NO_BIN, (bits & 0x7fffffffu) > 0x7f800000u);
}
fn count(v: f32, bins: u32, fbins: f32, copies: u32, copy: u32) {
    let b = bin_fast(v, bins, fbins);
    if (b != NO_BIN) { atomicAdd(&hist[b * copies + copy], 1u); }
}


@compute @workgroup_size(256)
fn h_u1_c1(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let bins = params.bins;
    let fbins = f32(bins);
    var nanb = 0x7fc00000u;
    let nan_v = bitcast<f32>(nanb);
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    for (var j = lid.x; j < bins * 1u; j += 256u) { atomicStore(&hist[j], 0u); }
    workgroupBarrier();
    let copy = 0u;
    for (var i = wg * 256u + lid.x; i < n4; i += 1u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(nan_v); if (i0 < n4) { v0 = x[i0]; }
        { let b = bin_of(v0.x, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v0.y, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v0.z, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v0.w, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
    }
    workgroupBarrier();
    for (var j = lid.x; j < bins; j += 256u) {
        var v = 0u;
        for (var c = 0u; c < 1u; c += 1u) { v += atomicLoad(&hist[j * 1u + c]); }
        if (v != 0u) { atomicAdd(&counts[j], v); }
    }
}


@compute @workgroup_size(256)
fn h_u1_c1_fast(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let bins = params.bins;
    let fbins = f32(bins);
    var nanb = 0x7fc00000u;
    let nan_v = bitcast<f32>(nanb);
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    for (var j = lid.x; j < bins * 1u; j += 256u) { atomicStore(&hist[j], 0u); }
    workgroupBarrier();
    let copy = 0u;
    for (var i = wg * 256u + lid.x; i < n4; i += 1u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(nan_v); if (i0 < n4) { v0 = x[i0]; }
        count(v0.x, bins, fbins, 1u, copy); count(v0.y, bins, fbins, 1u, copy); count(v0.z, bins, fbins, 1u, copy); count(v0.w, bins, fbins, 1u, copy);
    }
    workgroupBarrier();
    for (var j = lid.x; j < bins; j += 256u) {
        var v = 0u;
        for (var c = 0u; c < 1u; c += 1u) { v += atomicLoad(&hist[j * 1u + c]); }
        if (v != 0u) { atomicAdd(&counts[j], v); }
    }
}


@compute @workgroup_size(256)
fn h_u2_c1(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let bins = params.bins;
    let fbins = f32(bins);
    var nanb = 0x7fc00000u;
    let nan_v = bitcast<f32>(nanb);
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    for (var j = lid.x; j < bins * 1u; j += 256u) { atomicStore(&hist[j], 0u); }
    workgroupBarrier();
    let copy = 0u;
    for (var i = wg * 256u + lid.x; i < n4; i += 2u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(nan_v); if (i0 < n4) { v0 = x[i0]; }
        let i1 = i + 1u * stride; var v1 = vec4<f32>(nan_v); if (i1 < n4) { v1 = x[i1]; }
        { let b = bin_of(v0.x, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v0.y, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v0.z, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v0.w, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v1.x, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v1.y, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v1.z, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v1.w, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
    }
    workgroupBarrier();
    for (var j = lid.x; j < bins; j += 256u) {
        var v = 0u;
        for (var c = 0u; c < 1u; c += 1u) { v += atomicLoad(&hist[j * 1u + c]); }
        if (v != 0u) { atomicAdd(&counts[j], v); }
    }
}


@compute @workgroup_size(256)
fn h_u2_c1_fast(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let bins = params.bins;
    let fbins = f32(bins);
    var nanb = 0x7fc00000u;
    let nan_v = bitcast<f32>(nanb);
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    for (var j = lid.x; j < bins * 1u; j += 256u) { atomicStore(&hist[j], 0u); }
    workgroupBarrier();
    let copy = 0u;
    for (var i = wg * 256u + lid.x; i < n4; i += 2u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(nan_v); if (i0 < n4) { v0 = x[i0]; }
        let i1 = i + 1u * stride; var v1 = vec4<f32>(nan_v); if (i1 < n4) { v1 = x[i1]; }
        count(v0.x, bins, fbins, 1u, copy); count(v0.y, bins, fbins, 1u, copy); count(v0.z, bins, fbins, 1u, copy); count(v0.w, bins, fbins, 1u, copy);
        count(v1.x, bins, fbins, 1u, copy); count(v1.y, bins, fbins, 1u, copy); count(v1.z, bins, fbins, 1u, copy); count(v1.w, bins, fbins, 1u, copy);
    }
    workgroupBarrier();
    for (var j = lid.x; j < bins; j += 256u) {
        var v = 0u;
        for (var c = 0u; c < 1u; c += 1u) { v += atomicLoad(&hist[j * 1u + c]); }
        if (v != 0u) { atomicAdd(&counts[j], v); }
    }
}


@compute @workgroup_size(256)
fn h_u4_c1(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let bins = params.bins;
    let fbins = f32(bins);
    var nanb = 0x7fc00000u;
    let nan_v = bitcast<f32>(nanb);
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    for (var j = lid.x; j < bins * 1u; j += 256u) { atomicStore(&hist[j], 0u); }
    workgroupBarrier();
    let copy = 0u;
    for (var i = wg * 256u + lid.x; i < n4; i += 4u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(nan_v); if (i0 < n4) { v0 = x[i0]; }
        let i1 = i + 1u * stride; var v1 = vec4<f32>(nan_v); if (i1 < n4) { v1 = x[i1]; }
        let i2 = i + 2u * stride; var v2 = vec4<f32>(nan_v); if (i2 < n4) { v2 = x[i2]; }
        let i3 = i + 3u * stride; var v3 = vec4<f32>(nan_v); if (i3 < n4) { v3 = x[i3]; }
        { let b = bin_of(v0.x, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v0.y, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v0.z, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v0.w, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v1.x, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v1.y, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v1.z, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v1.w, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v2.x, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v2.y, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v2.z, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v2.w, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v3.x, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v3.y, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v3.z, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
        { let b = bin_of(v3.w, bins); if (b != NO_BIN) { atomicAdd(&hist[b * 1u + copy], 1u); } }
    }
    workgroupBarrier();
    for (var j = lid.x; j < bins; j += 256u) {
        var v = 0u;
        for (var c = 0u; c < 1u; c += 1u) { v += atomicLoad(&hist[j * 1u + c]); }
        if (v != 0u) { atomicAdd(&counts[j], v); }
    }
}


@compute @workgroup_size(256)
fn h_u4_c1_fast(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let bins = params.bins;
    let fbins = f32(bins);
    var nanb = 0x7fc00000u;
    let nan_v = bitcast<f32>(nanb);
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    for (var j = lid.x; j < bins * 1u; j += 256u) { atomicStore(&hist[j], 0u); }
    workgroupBarrier();
    let copy = 0u;
    for (var i = wg * 256u + lid.x; i < n4; i += 4u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(nan_v); if (i0 < n4) { v0 = x[i0]; }
        let i1 = i + 1u * stride; var v1 = vec4<f32>(nan_v); if (i1 < n4) { v1 = x[i1]; }
        let i2 = i + 2u * stride; var v2 = vec4<f32>(nan_v); if (i2 < n4) { v2 = x[i2]; }
        let i3 = i + 3u * stride; var v3 = vec4<f32>(nan_v); if (i3 < n4) { v3 = x[i3]; }
        count(v0.x, bins, fbins, 1u, copy); count(v0.y, bins, fbins, 1u, copy); count(v0.z, bins, fbins, 1u, copy); count(v0.w, bins, fbins, 1u, copy);
        count(v1.x, bins, fbins, 1u, copy); count(v1.y, bins, fbins, 1u, copy); count(v1.z, bins, fbins, 1u, copy); count(v1.w, bins, fbins, 1u, copy);
        count(v2.x, bins, fbins, 1u, copy); count(v2.y, bins, fbins, 1u, copy); count(v2.z, bins, fbins, 1u, copy); count(v2.w, bins, fbins, 1u, copy);
        count(v3.x, bins, fbins, 1u, copy); count(v3.y, bins, fbins, 1u, copy); count(v3.z, bins, fbins, 1u, copy); count(v3.w, bins, fbins, 1u, copy);
    }
    workgroupBarrier();
    for (var j = lid.x; j < bins; j += 256u) {
        var v = 0u;
        for (var c = 0u; c < 1u; c += 1u) { v += atomicLoad(&hist[j * 1u + c]); }
        if (v != 0u) { atomicAdd(&counts[j], v); }
    }
}


@compute @workgroup_size(256)
fn h_u4_c2_fast(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let bins = params.bins;
    let fbins = f32(bins);
    var nanb = 0x7fc00000u;
    let nan_v = bitcast<f32>(nanb);
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    for (var j = lid.x; j < bins * 2u; j += 256u) { atomicStore(&hist[j], 0u); }
    workgroupBarrier();
    let copy = lid.x % 2u;
    for (var i = wg * 256u + lid.x; i < n4; i += 4u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(nan_v); if (i0 < n4) { v0 = x[i0]; }
        let i1 = i + 1u * stride; var v1 = vec4<f32>(nan_v); if (i1 < n4) { v1 = x[i1]; }
        let i2 = i + 2u * stride; var v2 = vec4<f32>(nan_v); if (i2 < n4) { v2 = x[i2]; }
        let i3 = i + 3u * stride; var v3 = vec4<f32>(nan_v); if (i3 < n4) { v3 = x[i3]; }
        count(v0.x, bins, fbins, 2u, copy); count(v0.y, bins, fbins, 2u, copy); count(v0.z, bins, fbins, 2u, copy); count(v0.w, bins, fbins, 2u, copy);
        count(v1.x, bins, fbins, 2u, copy); count(v1.y, bins, fbins, 2u, copy); count(v1.z, bins, fbins, 2u, copy); count(v1.w, bins, fbins, 2u, copy);
        count(v2.x, bins, fbins, 2u, copy); count(v2.y, bins, fbins, 2u, copy); count(v2.z, bins, fbins, 2u, copy); count(v2.w, bins, fbins, 2u, copy);
        count(v3.x, bins, fbins, 2u, copy); count(v3.y, bins, fbins, 2u, copy); count(v3.z, bins, fbins, 2u, copy); count(v3.w, bins, fbins, 2u, copy);
    }
    workgroupBarrier();
    for (var j = lid.x; j < bins; j += 256u) {
        var v = 0u;
        for (var c = 0u; c < 2u; c += 1u) { v += atomicLoad(&hist[j * 2u + c]); }
        if (v != 0u) { atomicAdd(&counts[j], v); }
    }
}


@compute @workgroup_size(256)
fn h_u4_c4_fast(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let bins = params.bins;
    let fbins = f32(bins);
    var nanb = 0x7fc00000u;
    let nan_v = bitcast<f32>(nanb);
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    for (var j = lid.x; j < bins * 4u; j += 256u) { atomicStore(&hist[j], 0u); }
    workgroupBarrier();
    let copy = lid.x % 4u;
    for (var i = wg * 256u + lid.x; i < n4; i += 4u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(nan_v); if (i0 < n4) { v0 = x[i0]; }
        let i1 = i + 1u * stride; var v1 = vec4<f32>(nan_v); if (i1 < n4) { v1 = x[i1]; }
        let i2 = i + 2u * stride; var v2 = vec4<f32>(nan_v); if (i2 < n4) { v2 = x[i2]; }
        let i3 = i + 3u * stride; var v3 = vec4<f32>(nan_v); if (i3 < n4) { v3 = x[i3]; }
        count(v0.x, bins, fbins, 4u, copy); count(v0.y, bins, fbins, 4u, copy); count(v0.z, bins, fbins, 4u, copy); count(v0.w, bins, fbins, 4u, copy);
        count(v1.x, bins, fbins, 4u, copy); count(v1.y, bins, fbins, 4u, copy); count(v1.z, bins, fbins, 4u, copy); count(v1.w, bins, fbins, 4u, copy);
        count(v2.x, bins, fbins, 4u, copy); count(v2.y, bins, fbins, 4u, copy); count(v2.z, bins, fbins, 4u, copy); count(v2.w, bins, fbins, 4u, copy);
        count(v3.x, bins, fbins, 4u, copy); count(v3.y, bins, fbins, 4u, copy); count(v3.z, bins, fbins, 4u, copy); count(v3.w, bins, fbins, 4u, copy);
    }
    workgroupBarrier();
    for (var j = lid.x; j < bins; j += 256u) {
        var v = 0u;
        for (var c = 0u; c < 4u; c += 1u) { v += atomicLoad(&hist[j * 4u + c]); }
        if (v != 0u) { atomicAdd(&counts[j], v); }
    }
}


@compute @workgroup_size(256)
fn h_u4_c8_fast(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n4 = params.n4;
    let bins = params.bins;
    let fbins = f32(bins);
    var nanb = 0x7fc00000u;
    let nan_v = bitcast<f32>(nanb);
    let wg = wid.x + wid.y * nwg.x;
    let stride = nwg.x * nwg.y * 256u;
    for (var j = lid.x; j < bins * 8u; j += 256u) { atomicStore(&hist[j], 0u); }
    workgroupBarrier();
    let copy = lid.x % 8u;
    for (var i = wg * 256u + lid.x; i < n4; i += 4u * stride) {
        let i0 = i + 0u * stride; var v0 = vec4<f32>(nan_v); if (i0 < n4) { v0 = x[i0]; }
        let i1 = i + 1u * stride; var v1 = vec4<f32>(nan_v); if (i1 < n4) { v1 = x[i1]; }
        let i2 = i + 2u * stride; var v2 = vec4<f32>(nan_v); if (i2 < n4) { v2 = x[i2]; }
        let i3 = i + 3u * stride; var v3 = vec4<f32>(nan_v); if (i3 < n4) { v3 = x[i3]; }
        count(v0.x, bins, fbins, 8u, copy); count(v0.y, bins, fbins, 8u, copy); count(v0.z, bins, fbins, 8u, copy); count(v0.w, bins, fbins, 8u, copy);
        count(v1.x, bins, fbins, 8u, copy); count(v1.y, bins, fbins, 8u, copy); count(v1.z, bins, fbins, 8u, copy); count(v1.w, bins, fbins, 8u, copy);
        count(v2.x, bins, fbins, 8u, copy); count(v2.y, bins, fbins, 8u, copy); count(v2.z, bins, fbins, 8u, copy); count(v2.w, bins, fbins, 8u, copy);
        count(v3.x, bins, fbins, 8u, copy); count(v3.y, bins, fbins, 8u, copy); count(v3.z, bins, fbins, 8u, copy); count(v3.w, bins, fbins, 8u, copy);
    }
    workgroupBarrier();
    for (var j = lid.x; j < bins; j += 256u) {
        var v = 0u;
        for (var c = 0u; c < 8u; c += 1u) { v += atomicLoad(&hist[j * 8u + c]); }
        if (v != 0u) { atomicAdd(&counts[j], v); }
    }
}
