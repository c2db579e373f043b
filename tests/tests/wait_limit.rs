//! A kernel that never ends is an error naming the wait limit, not a hang: on every GPU backend, a raw kernel whose
//! loop waits for a value no one writes is launched with a short wait limit; the run must fail with
//! `GPUWORTHY_WAIT_LIMIT` named, soon after the limit, and the backend must then refuse at once (it is still busy)
//! and be dropped without waiting for the kernel.
//!
//! On a GPU the kernel never ends. Mesa's llvmpipe stops a shader invocation's loops after 65535 trips, so there the
//! kernel is made long instead: enough invocations that 65535 trips each take seconds on a CPU, far past the limit.
//! It is its own test binary so that the kernel left running does not slow other tests.

use std::sync::Arc;
use std::time::{Duration, Instant};

use gpuworthy::core::raw::{Raw, RawKernel, RawParams, Shape};
use gpuworthy::core::{BackendKind, Error, Implements, Workload};
use gpuworthy_cuda::CudaBackend;
use gpuworthy_wgpu::WgpuBackend;

/// The limit the test waits under.
const LIMIT: Duration = Duration::from_millis(500);

/// Invocations of the kernel: on llvmpipe, 65535 trips of each take several seconds on two cores.
const INVOCATIONS: usize = 1 << 16;

/// Loops until element 0 of its output holds 0x12345, which nothing writes (outputs start at zero); the loads are
/// atomic (WGSL) or volatile (CUDA) so that no compiler may read the value once and decide the loop's fate.
fn kernel_that_never_ends() -> RawKernel {
    RawKernel::new("never_ends", &["x"], &["y"], &[])
        .unwrap()
        .cuda(
            r#"extern "C" __global__ void never_ends(const float* x, float* y, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                volatile const unsigned int* flag = (volatile const unsigned int*)y;
                float v = i < n ? x[i] : 0.0f;
                while (flag[0] != 0x12345u) { v = v * 0.999f + 0.5f; }
                if (i < n) { y[i] = v; }
            }"#,
            "never_ends",
            (256, 1),
        )
        .unwrap()
        .wgsl(
            "struct Params { n: u32, height: u32, row: u32 }
             @group(0) @binding(0) var<uniform> p: Params;
             @group(0) @binding(1) var<storage, read> x: array<f32>;
             @group(0) @binding(2) var<storage, read_write> y: array<atomic<u32>>;
             @compute @workgroup_size(64)
             fn never_ends(@builtin(global_invocation_id) id: vec3<u32>) {
                 let i = id.x + id.y * p.row;
                 if (i >= p.n) { return; }
                 var v = x[i];
                 loop {
                     if (atomicLoad(&y[0]) == 0x12345u) { break; }
                     v = sin(v) * 0.999 + 0.5;
                 }
                 atomicStore(&y[i], bitcast<u32>(v));
             }",
            "never_ends",
        )
        .unwrap()
        // Inputs are generated only for a kernel with something to check against; no run here gets that far.
        .cpu(|args, out| out[0].copy_from_slice(args.inputs[0]))
}

/// Runs the kernel on `backend` (already bounded by [`LIMIT`]) and checks the error, the refusal after it, and that
/// dropping the backend does not wait for the kernel.
fn ends_in_an_error<B: Implements<Raw>>(backend: B, label: &str) {
    let params = RawParams::new(Arc::new(kernel_that_never_ends()), Shape::Line(INVOCATIONS), vec![]).unwrap();
    let input = Raw::generate(&params, 1).unwrap();
    let start = Instant::now();
    let got = backend.run("kernel", &input);
    let Err(err) = got else { panic!("{label}: a kernel that never ends cannot succeed") };
    let waited = start.elapsed();
    let text = err.to_string();
    eprintln!("{label}: {text} (after {waited:.2?})");
    assert!(matches!(err, Error::Device { .. }), "{label}: {text}");
    assert!(text.contains("GPUWORTHY_WAIT_LIMIT") && text.contains("0.5 s"), "{label}: {text}");
    // The shader's compilation and the upload come before the wait; the wait itself ends at the limit.
    assert!(waited >= LIMIT && waited < LIMIT + Duration::from_secs(60), "{label}: waited {waited:?}");

    let start = Instant::now();
    let again = backend.run("kernel", &input).expect_err("the backend is still busy with the kernel").to_string();
    assert!(again.contains("earlier") && again.contains("cannot be used again"), "{label}: {again}");
    assert!(start.elapsed() < LIMIT, "{label}: the second run waited instead of failing at once");

    let start = Instant::now();
    drop(backend);
    assert!(start.elapsed() < LIMIT, "{label}: dropping the backend waited for the kernel");
}

#[test]
fn a_kernel_that_never_ends_is_an_error_naming_the_wait_limit() {
    if let Some(cuda) = BackendKind::Cuda.opened_or_skipped(CudaBackend::new(0)) {
        ends_in_an_error(cuda.with_wait_limit(LIMIT), "cuda");
    }
    if let Some(wgpu) = BackendKind::Wgpu.opened_or_skipped(WgpuBackend::new()) {
        ends_in_an_error(wgpu.with_wait_limit(LIMIT), "wgpu");
    }
}
