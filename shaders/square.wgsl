// square: y[i] = x[i] * x[i].
//
// The simplest possible GPU kernel: purely memory bound, one multiply per 8 bytes moved. The two variants are the
// first two rungs of the optimisation ladder:
//   square_naive  one thread per element, 4-byte loads and stores.
//   square_vec4   one thread per four elements, 16-byte loads and stores: a quarter of the threads and of the
//                 memory instructions for the same bytes.

struct Params {
    n: u32,       // number of f32 elements
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// Threads per workgroup: a pipeline-overridable constant, so that the block-size lesson can set it per pipeline
// (`WgpuBackend::with_elementwise_workgroup_size`) without another copy of the shader.
override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> params: Params;

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

// The same buffers viewed as vec4: the host pads them to a multiple of 4 floats.
@group(0) @binding(3) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> y4: array<vec4<f32>>;

// A dispatch is limited to 65535 workgroups per dimension, so large 1D launches are folded into a 2D grid
// (gx, gy). This turns the 2D workgroup id back into one linear index.
fn linear_workgroup(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// Rung 1: one thread per element. Neighbouring threads touch neighbouring addresses, so each warp's accesses
// coalesce into a few wide memory transactions. The guard handles n not being a multiple of 256.
@compute @workgroup_size(WG)
fn square_naive(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let i = linear_workgroup(wid, nwg) * WG + lid.x;
    if (i < params.n) {
        let v = x[i];
        y[i] = v * v;
    }
}

// Rung 2: vectorised memory access. Each thread moves a vec4 (16 bytes) in one load and one store instruction,
// and the multiply is applied lane-wise. The host pads the buffers, so the last vec4 may hold up to three
// padding floats; squaring them is harmless and the host ignores them.
@compute @workgroup_size(WG)
fn square_vec4(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    // ceil(n / 4) written so that it cannot overflow for n close to 2^32.
    let n4 = (params.n >> 2u) + select(0u, 1u, (params.n & 3u) != 0u);
    let i = linear_workgroup(wid, nwg) * WG + lid.x;
    if (i < n4) {
        let v = x4[i];
        y4[i] = v * v;
    }
}
