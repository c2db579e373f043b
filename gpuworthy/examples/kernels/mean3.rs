//! `mean3`, a raw kernel that reads its neighbours: shared by example `08_raw_kernel`, which sweeps it, and the
//! raw-kernel tests (`tests/tests/raw_kernels.rs`), which check it on every backend, so that the kernel measured is
//! the kernel tested.

use gpuworthy::core::Result;
use gpuworthy::core::raw::RawKernel;

/// A kernel that needs its own indexing: `y[i]` the mean of `x[i-1]`, `x[i]` and `x[i+1]` (the ends repeat their
/// edge). An expression reads only element `i` of each input, so this one has no expression for a reference: its CPU
/// function is the reference, and the test suite checks that function against a mean computed apart in `f64`.
pub fn neighbourhood_mean() -> Result<RawKernel> {
    Ok(RawKernel::new("mean3", &["x"], &["y"], &[])?
        .cuda(
            r#"extern "C" __global__ void mean3(const float* x, float* y, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) {
                    float left = x[i > 0 ? i - 1 : 0], right = x[i + 1 < n ? i + 1 : n - 1];
                    y[i] = (left + x[i] + right) / 3.0f;
                }
            }"#,
            "mean3",
            (128, 1),
        )?
        .wgsl(
            "struct Params { n: u32, height: u32, row: u32 }
             @group(0) @binding(0) var<uniform> p: Params;
             @group(0) @binding(1) var<storage, read> x: array<f32>;
             @group(0) @binding(2) var<storage, read_write> y: array<f32>;
             @compute @workgroup_size(128)
             fn mean3(@builtin(global_invocation_id) id: vec3<u32>) {
                 let i = id.x + id.y * p.row;
                 if (i < p.n) {
                     let left = x[select(0u, i - 1u, i > 0u)];
                     let right = x[select(p.n - 1u, i + 1u, i + 1u < p.n)];
                     y[i] = (left + x[i] + right) / 3.0;
                 }
             }",
            "mean3",
        )?
        .cpu(|args, outputs| {
            use gpuworthy::cpu::rayon::prelude::*;
            let x = args.inputs[0];
            let n = x.len();
            outputs[0].par_iter_mut().enumerate().with_min_len(1 << 14).for_each(|(i, y)| {
                *y = (x[i.saturating_sub(1)] + x[i] + x[(i + 1).min(n - 1)]) / 3.0;
            });
        })
        .flops_per_element(3))
}
