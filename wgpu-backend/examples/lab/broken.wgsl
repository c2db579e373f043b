// A deliberately broken shader for the guide's chapter on debugging shaders on a CPU: naga rejects it before any
// driver sees it. The lab's bindings: 0 a uniform of four u32, 1 the input floats, 2 the output.

struct Params { n: u32, p1: u32, p2: u32, p3: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> input: array<f32>;
@group(0) @binding(2) var<storage, read_write> output: array<f32>;

@compute @workgroup_size(256)
fn square_broken(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < params.n) {
        // BUG: the product of two f32 values is assigned to an i32 (the u32 index is fine).
        let v: i32 = input[i] * input[i];
        output[i] = f32(v);
    }
}
