// copy: dst = src, as vec4s. Not a workload: the backend times it to measure the bandwidth its compute units reach
// (a buffer-to-buffer copy command may run on a DMA engine instead, which is slower on some GPUs), the "peak" that
// memory-bound kernels are compared with.

struct Params {
    n4: u32,      // number of vec4 elements
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

const WG: u32 = 256u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<f32>>;

@compute @workgroup_size(WG)
fn copy_vec4(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let i = (wid.x + wid.y * nwg.x) * WG + lid.x;
    if (i < params.n4) {
        dst[i] = src[i];
    }
}
