// Kernel shapes tried with the wgsl_lab example (see run.sh): fused softmax: threads per row, with the row read twice (sm_l2), kept in workgroup memory (sm_smem) or in registers (sm_reg).
// Bindings as wgsl_lab sets them: 0 the four u32 parameters, 1 the input, 2 the output.
struct Params { n4: u32, rows: u32, cols: u32, c: u32, }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;
var<workgroup> sh_m: array<f32, 64>;
var<workgroup> sh_s: array<f32, 64>;
var<workgroup> sh_bad: array<u32, 64>;
var<workgroup> row_cache: array<vec4<f32>, 2048>;
fn neg_inf() -> f32 { var b = 0xff800000u; return bitcast<f32>(b); }
fn nan() -> f32 { var b = 0x7fc00000u; return bitcast<f32>(b); }
fn is_ninf(v: f32) -> bool { return bitcast<u32>(v) == 0xff800000u; }
fn poisons(v: vec4<f32>) -> u32 {
    // NaN or +inf in any lane
    let b = bitcast<vec4<u32>>(v);
    let nanl = (b & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u);
    let pinf = b == vec4<u32>(0x7f800000u);
    return select(0u, 1u, any(nanl) || any(pinf));
}
fn combine(m1: f32, s1: f32, m2: f32, s2: f32) -> vec2<f32> {
    let m = max(m1, m2);
    if (is_ninf(m)) { return vec2<f32>(m, 0.0); }
    return vec2<f32>(m, s1 * exp(m1 - m) + s2 * exp(m2 - m));
}


@compute @workgroup_size(128)
fn sm_l2_wg128(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= params.rows) { return; }
    let c4 = params.cols / 4u;
    let base = row * c4;
    var m = neg_inf();
    var s = 0.0;
    var bad = 0u;

    for (var c = lid.x; c < c4; c += 128u) {
        let v = x[base + c];
        bad |= poisons(v);
        let vmax = max(max(v.x, v.y), max(v.z, v.w));
        if (vmax > m) { let scale = exp(m - vmax); s = s * scale; m = vmax; }
        if (!is_ninf(m)) { s = s + ((exp(v.x - m) + exp(v.y - m)) + (exp(v.z - m) + exp(v.w - m))); }
    }
    for (var o = sg_size / 2u; o > 0u; o >>= 1u) {
        let m2 = subgroupShuffleXor(m, o);
        let s2 = subgroupShuffleXor(s, o);
        let p = combine(m, s, m2, s2);
        m = p.x; s = p.y;
    }
    bad = subgroupOr(bad);
    let nsg = 128u / sg_size;
    if (sg_lane == 0u) { let w = lid.x / sg_size; sh_m[w] = m; sh_s[w] = s; sh_bad[w] = bad; }
    workgroupBarrier();
    m = sh_m[0]; s = sh_s[0]; bad = sh_bad[0];
    for (var w = 1u; w < nsg; w += 1u) { let p = combine(m, s, sh_m[w], sh_s[w]); m = p.x; s = p.y; bad |= sh_bad[w]; }
    let inv = 1.0 / s;
    if (bad != 0u || is_ninf(m)) {
        for (var c = lid.x; c < c4; c += 128u) { y[base + c] = vec4<f32>(nan()); }
        return;
    }

    for (var c = lid.x; c < c4; c += 128u) {
        y[base + c] = exp(x[base + c] - vec4<f32>(m)) * inv;
    }
}

@compute @workgroup_size(256)
fn sm_l2_wg256(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= params.rows) { return; }
    let c4 = params.cols / 4u;
    let base = row * c4;
    var m = neg_inf();
    var s = 0.0;
    var bad = 0u;

    for (var c = lid.x; c < c4; c += 256u) {
        let v = x[base + c];
        bad |= poisons(v);
        let vmax = max(max(v.x, v.y), max(v.z, v.w));
        if (vmax > m) { let scale = exp(m - vmax); s = s * scale; m = vmax; }
        if (!is_ninf(m)) { s = s + ((exp(v.x - m) + exp(v.y - m)) + (exp(v.z - m) + exp(v.w - m))); }
    }
    for (var o = sg_size / 2u; o > 0u; o >>= 1u) {
        let m2 = subgroupShuffleXor(m, o);
        let s2 = subgroupShuffleXor(s, o);
        let p = combine(m, s, m2, s2);
        m = p.x; s = p.y;
    }
    bad = subgroupOr(bad);
    let nsg = 256u / sg_size;
    if (sg_lane == 0u) { let w = lid.x / sg_size; sh_m[w] = m; sh_s[w] = s; sh_bad[w] = bad; }
    workgroupBarrier();
    m = sh_m[0]; s = sh_s[0]; bad = sh_bad[0];
    for (var w = 1u; w < nsg; w += 1u) { let p = combine(m, s, sh_m[w], sh_s[w]); m = p.x; s = p.y; bad |= sh_bad[w]; }
    let inv = 1.0 / s;
    if (bad != 0u || is_ninf(m)) {
        for (var c = lid.x; c < c4; c += 256u) { y[base + c] = vec4<f32>(nan()); }
        return;
    }

    for (var c = lid.x; c < c4; c += 256u) {
        y[base + c] = exp(x[base + c] - vec4<f32>(m)) * inv;
    }
}

@compute @workgroup_size(512)
fn sm_l2_wg512(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= params.rows) { return; }
    let c4 = params.cols / 4u;
    let base = row * c4;
    var m = neg_inf();
    var s = 0.0;
    var bad = 0u;

    for (var c = lid.x; c < c4; c += 512u) {
        let v = x[base + c];
        bad |= poisons(v);
        let vmax = max(max(v.x, v.y), max(v.z, v.w));
        if (vmax > m) { let scale = exp(m - vmax); s = s * scale; m = vmax; }
        if (!is_ninf(m)) { s = s + ((exp(v.x - m) + exp(v.y - m)) + (exp(v.z - m) + exp(v.w - m))); }
    }
    for (var o = sg_size / 2u; o > 0u; o >>= 1u) {
        let m2 = subgroupShuffleXor(m, o);
        let s2 = subgroupShuffleXor(s, o);
        let p = combine(m, s, m2, s2);
        m = p.x; s = p.y;
    }
    bad = subgroupOr(bad);
    let nsg = 512u / sg_size;
    if (sg_lane == 0u) { let w = lid.x / sg_size; sh_m[w] = m; sh_s[w] = s; sh_bad[w] = bad; }
    workgroupBarrier();
    m = sh_m[0]; s = sh_s[0]; bad = sh_bad[0];
    for (var w = 1u; w < nsg; w += 1u) { let p = combine(m, s, sh_m[w], sh_s[w]); m = p.x; s = p.y; bad |= sh_bad[w]; }
    let inv = 1.0 / s;
    if (bad != 0u || is_ninf(m)) {
        for (var c = lid.x; c < c4; c += 512u) { y[base + c] = vec4<f32>(nan()); }
        return;
    }

    for (var c = lid.x; c < c4; c += 512u) {
        y[base + c] = exp(x[base + c] - vec4<f32>(m)) * inv;
    }
}

@compute @workgroup_size(1024)
fn sm_l2_wg1024(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= params.rows) { return; }
    let c4 = params.cols / 4u;
    let base = row * c4;
    var m = neg_inf();
    var s = 0.0;
    var bad = 0u;

    for (var c = lid.x; c < c4; c += 1024u) {
        let v = x[base + c];
        bad |= poisons(v);
        let vmax = max(max(v.x, v.y), max(v.z, v.w));
        if (vmax > m) { let scale = exp(m - vmax); s = s * scale; m = vmax; }
        if (!is_ninf(m)) { s = s + ((exp(v.x - m) + exp(v.y - m)) + (exp(v.z - m) + exp(v.w - m))); }
    }
    for (var o = sg_size / 2u; o > 0u; o >>= 1u) {
        let m2 = subgroupShuffleXor(m, o);
        let s2 = subgroupShuffleXor(s, o);
        let p = combine(m, s, m2, s2);
        m = p.x; s = p.y;
    }
    bad = subgroupOr(bad);
    let nsg = 1024u / sg_size;
    if (sg_lane == 0u) { let w = lid.x / sg_size; sh_m[w] = m; sh_s[w] = s; sh_bad[w] = bad; }
    workgroupBarrier();
    m = sh_m[0]; s = sh_s[0]; bad = sh_bad[0];
    for (var w = 1u; w < nsg; w += 1u) { let p = combine(m, s, sh_m[w], sh_s[w]); m = p.x; s = p.y; bad |= sh_bad[w]; }
    let inv = 1.0 / s;
    if (bad != 0u || is_ninf(m)) {
        for (var c = lid.x; c < c4; c += 1024u) { y[base + c] = vec4<f32>(nan()); }
        return;
    }

    for (var c = lid.x; c < c4; c += 1024u) {
        y[base + c] = exp(x[base + c] - vec4<f32>(m)) * inv;
    }
}

@compute @workgroup_size(256)
fn sm_smem_wg256(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= params.rows) { return; }
    let c4 = params.cols / 4u;
    let base = row * c4;
    var m = neg_inf();
    var s = 0.0;
    var bad = 0u;

    for (var c = lid.x; c < c4; c += 256u) {
        let v = x[base + c];
        row_cache[c] = v;
        bad |= poisons(v);
        let vmax = max(max(v.x, v.y), max(v.z, v.w));
        if (vmax > m) { let scale = exp(m - vmax); s = s * scale; m = vmax; }
        if (!is_ninf(m)) { s = s + ((exp(v.x - m) + exp(v.y - m)) + (exp(v.z - m) + exp(v.w - m))); }
    }
    for (var o = sg_size / 2u; o > 0u; o >>= 1u) {
        let m2 = subgroupShuffleXor(m, o);
        let s2 = subgroupShuffleXor(s, o);
        let p = combine(m, s, m2, s2);
        m = p.x; s = p.y;
    }
    bad = subgroupOr(bad);
    let nsg = 256u / sg_size;
    if (sg_lane == 0u) { let w = lid.x / sg_size; sh_m[w] = m; sh_s[w] = s; sh_bad[w] = bad; }
    workgroupBarrier();
    m = sh_m[0]; s = sh_s[0]; bad = sh_bad[0];
    for (var w = 1u; w < nsg; w += 1u) { let p = combine(m, s, sh_m[w], sh_s[w]); m = p.x; s = p.y; bad |= sh_bad[w]; }
    let inv = 1.0 / s;
    if (bad != 0u || is_ninf(m)) {
        for (var c = lid.x; c < c4; c += 256u) { y[base + c] = vec4<f32>(nan()); }
        return;
    }

    for (var c = lid.x; c < c4; c += 256u) {
        y[base + c] = exp(row_cache[c] - vec4<f32>(m)) * inv;
    }
}

@compute @workgroup_size(512)
fn sm_smem_wg512(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= params.rows) { return; }
    let c4 = params.cols / 4u;
    let base = row * c4;
    var m = neg_inf();
    var s = 0.0;
    var bad = 0u;

    for (var c = lid.x; c < c4; c += 512u) {
        let v = x[base + c];
        row_cache[c] = v;
        bad |= poisons(v);
        let vmax = max(max(v.x, v.y), max(v.z, v.w));
        if (vmax > m) { let scale = exp(m - vmax); s = s * scale; m = vmax; }
        if (!is_ninf(m)) { s = s + ((exp(v.x - m) + exp(v.y - m)) + (exp(v.z - m) + exp(v.w - m))); }
    }
    for (var o = sg_size / 2u; o > 0u; o >>= 1u) {
        let m2 = subgroupShuffleXor(m, o);
        let s2 = subgroupShuffleXor(s, o);
        let p = combine(m, s, m2, s2);
        m = p.x; s = p.y;
    }
    bad = subgroupOr(bad);
    let nsg = 512u / sg_size;
    if (sg_lane == 0u) { let w = lid.x / sg_size; sh_m[w] = m; sh_s[w] = s; sh_bad[w] = bad; }
    workgroupBarrier();
    m = sh_m[0]; s = sh_s[0]; bad = sh_bad[0];
    for (var w = 1u; w < nsg; w += 1u) { let p = combine(m, s, sh_m[w], sh_s[w]); m = p.x; s = p.y; bad |= sh_bad[w]; }
    let inv = 1.0 / s;
    if (bad != 0u || is_ninf(m)) {
        for (var c = lid.x; c < c4; c += 512u) { y[base + c] = vec4<f32>(nan()); }
        return;
    }

    for (var c = lid.x; c < c4; c += 512u) {
        y[base + c] = exp(row_cache[c] - vec4<f32>(m)) * inv;
    }
}

@compute @workgroup_size(1024)
fn sm_smem_wg1024(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= params.rows) { return; }
    let c4 = params.cols / 4u;
    let base = row * c4;
    var m = neg_inf();
    var s = 0.0;
    var bad = 0u;

    for (var c = lid.x; c < c4; c += 1024u) {
        let v = x[base + c];
        row_cache[c] = v;
        bad |= poisons(v);
        let vmax = max(max(v.x, v.y), max(v.z, v.w));
        if (vmax > m) { let scale = exp(m - vmax); s = s * scale; m = vmax; }
        if (!is_ninf(m)) { s = s + ((exp(v.x - m) + exp(v.y - m)) + (exp(v.z - m) + exp(v.w - m))); }
    }
    for (var o = sg_size / 2u; o > 0u; o >>= 1u) {
        let m2 = subgroupShuffleXor(m, o);
        let s2 = subgroupShuffleXor(s, o);
        let p = combine(m, s, m2, s2);
        m = p.x; s = p.y;
    }
    bad = subgroupOr(bad);
    let nsg = 1024u / sg_size;
    if (sg_lane == 0u) { let w = lid.x / sg_size; sh_m[w] = m; sh_s[w] = s; sh_bad[w] = bad; }
    workgroupBarrier();
    m = sh_m[0]; s = sh_s[0]; bad = sh_bad[0];
    for (var w = 1u; w < nsg; w += 1u) { let p = combine(m, s, sh_m[w], sh_s[w]); m = p.x; s = p.y; bad |= sh_bad[w]; }
    let inv = 1.0 / s;
    if (bad != 0u || is_ninf(m)) {
        for (var c = lid.x; c < c4; c += 1024u) { y[base + c] = vec4<f32>(nan()); }
        return;
    }

    for (var c = lid.x; c < c4; c += 1024u) {
        y[base + c] = exp(row_cache[c] - vec4<f32>(m)) * inv;
    }
}

@compute @workgroup_size(256)
fn sm_reg_wg256(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= params.rows) { return; }
    let c4 = params.cols / 4u;
    let base = row * c4;
    var m = neg_inf();
    var s = 0.0;
    var bad = 0u;

    var cache: array<vec4<f32>, 8>;
    for (var k = 0u; k < 8u; k += 1u) {
        let c = lid.x + k * 256u;
        var v = vec4<f32>(neg_inf());
        if (c < c4) { v = x[base + c]; }
        cache[k] = v;
    }
    for (var k = 0u; k < 8u; k += 1u) {
        let v = cache[k];
        bad |= poisons(v);
        let vmax = max(max(v.x, v.y), max(v.z, v.w));
        if (vmax > m) { let scale = exp(m - vmax); s = s * scale; m = vmax; }
        if (!is_ninf(m)) { s = s + ((exp(v.x - m) + exp(v.y - m)) + (exp(v.z - m) + exp(v.w - m))); }
    }
    for (var o = sg_size / 2u; o > 0u; o >>= 1u) {
        let m2 = subgroupShuffleXor(m, o);
        let s2 = subgroupShuffleXor(s, o);
        let p = combine(m, s, m2, s2);
        m = p.x; s = p.y;
    }
    bad = subgroupOr(bad);
    let nsg = 256u / sg_size;
    if (sg_lane == 0u) { let w = lid.x / sg_size; sh_m[w] = m; sh_s[w] = s; sh_bad[w] = bad; }
    workgroupBarrier();
    m = sh_m[0]; s = sh_s[0]; bad = sh_bad[0];
    for (var w = 1u; w < nsg; w += 1u) { let p = combine(m, s, sh_m[w], sh_s[w]); m = p.x; s = p.y; bad |= sh_bad[w]; }
    let inv = 1.0 / s;
    if (bad != 0u || is_ninf(m)) {
        for (var c = lid.x; c < c4; c += 256u) { y[base + c] = vec4<f32>(nan()); }
        return;
    }

    for (var k = 0u; k < 8u; k += 1u) {
        let c = lid.x + k * 256u;
        if (c < c4) { y[base + c] = exp(cache[k] - vec4<f32>(m)) * inv; }
    }
}