// saxpy: y[i] = a * x[i] + y[i].
//
// Memory bound like square, but with two input streams and one fused multiply-add per element.
//   saxpy_naive  one thread per element.
//   saxpy_vec4   one thread per four elements, 16-byte loads and stores.

struct Params {
    n: u32,       // number of f32 elements
    a: f32,       // the scalar multiplier
    _pad0: u32,
    _pad1: u32,
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

// Large 1D launches are folded into a 2D grid of workgroups; recover the linear workgroup index.
fn linear_workgroup(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// Rung 1: one thread per element. fma() computes a * x + y with a single rounding, the same operation the
// hardware's fused multiply-add unit performs.
@compute @workgroup_size(WG)
fn saxpy_naive(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let i = linear_workgroup(wid, nwg) * WG + lid.x;
    if (i < params.n) {
        y[i] = fma(params.a, x[i], y[i]);
    }
}

// Rung 2: vectorised memory access. One vec4 from each input and one vec4 store per thread; fma() works lane-wise
// on vectors, with the scalar a splatted to all four lanes. Padding lanes are computed and ignored by the host.
@compute @workgroup_size(WG)
fn saxpy_vec4(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    // ceil(n / 4) written so that it cannot overflow for n close to 2^32.
    let n4 = (params.n >> 2u) + select(0u, 1u, (params.n & 3u) != 0u);
    let i = linear_workgroup(wid, nwg) * WG + lid.x;
    if (i < n4) {
        y4[i] = fma(vec4<f32>(params.a), x4[i], y4[i]);
    }
}
