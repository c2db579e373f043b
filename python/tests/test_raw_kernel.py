"""RawKernel from Python: the seeds' load_inline square_matrix_kernel, with its WGSL twin, on the backends it has a
body for; a kernel without a CPU body refused on the CPU by name."""

import os

import numpy as np
import pytest

import gpuworthy

SQUARE_CUDA = r"""
extern "C" __global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < height && col < width) {
        int idx = row * width + col;
        result[idx] = matrix[idx] * matrix[idx];
    }
}
"""

SQUARE_WGSL = """
struct Shape { width: u32, height: u32, row: u32 }
@group(0) @binding(0) var<uniform> shape: Shape;
@group(0) @binding(1) var<storage, read> matrix: array<f32>;
@group(0) @binding(2) var<storage, read_write> result: array<f32>;

@compute @workgroup_size(16, 16)
fn square_matrix(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.y < shape.height && id.x < shape.width) {
        let idx = id.y * shape.width + id.x;
        result[idx] = matrix[idx] * matrix[idx];
    }
}
"""

AVAILABLE = {d.backend for d in gpuworthy.devices() if d.available}
REQUIRED = {b for b in os.environ.get("GPUWORTHY_REQUIRE", "").split(",") if b}


def kernel():
    return gpuworthy.RawKernel(
        "square_matrix",
        inputs=["matrix"],
        outputs=["result"],
        cuda=(SQUARE_CUDA, "square_matrix_kernel", (16, 16)),
        wgsl=(SQUARE_WGSL, "square_matrix"),
        reference="result = matrix * matrix",
    )


@pytest.mark.parametrize("backend", ["wgpu", "cuda"])
def test_the_seeds_kernel_squares_a_matrix_on_each_gpu_backend(backend):
    if backend not in AVAILABLE:
        if backend in REQUIRED:
            pytest.fail(f"GPUWORTHY_REQUIRE names {backend}, which cannot run here")
        pytest.skip(f"{backend} cannot run here")
    matrix = np.random.default_rng(3).uniform(-2, 2, (33, 47)).astype(np.float32)
    k = kernel()
    result = k(matrix=matrix, device=backend)
    assert result.shape == (33, 47) and result.dtype == np.float32
    np.testing.assert_allclose(result, matrix * matrix, rtol=1e-6)
    assert k.last_run["device"].startswith(backend)


def test_a_kernel_without_a_cpu_body_is_refused_on_the_cpu_by_name():
    with pytest.raises(ValueError) as e:
        kernel()(matrix=np.ones((4, 4), dtype=np.float32), device="cpu")
    assert "square_matrix" in str(e.value) or "raw" in str(e.value)


def test_bad_kernels_and_arguments_are_refused():
    with pytest.raises(ValueError):
        gpuworthy.RawKernel("bad name!", ["x"], ["y"])
    with pytest.raises(ValueError) as e:
        kernel()(matrix=np.ones((4, 4), dtype=np.float32), shape=(5, 5), device="cpu")
    assert "(5, 5)" in str(e.value) or "shape" in str(e.value)


SCALE_CUDA = r"""
extern "C" __global__ void scale(const float* x, float* y, float a, int width, int height) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < height && col < width) y[row * width + col] = a * x[row * width + col];
}
"""

SCALE_WGSL = """
struct Shape { width: u32, height: u32, row: u32, a: f32 }
@group(0) @binding(0) var<uniform> shape: Shape;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(16, 16)
fn scale(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.y < shape.height && id.x < shape.width) { let i = id.y * shape.width + id.x; y[i] = shape.a * x[i]; }
}
"""


@pytest.mark.parametrize("backend", ["wgpu", "cuda"])
def test_a_raw_kernel_is_measured_phase_by_phase_and_checked(backend):
    """measure() times a kernel as run() times a built-in workload: over a (height, width) grid, with its scalars by
    name, every phase timed and the output checked against the reference."""
    if backend not in AVAILABLE:
        if backend in REQUIRED:
            pytest.fail(f"GPUWORTHY_REQUIRE names {backend}, which cannot run here")
        pytest.skip(f"{backend} cannot run here")
    k = gpuworthy.RawKernel("scale", inputs=["x"], outputs=["y"], scalars=["a"], cuda=(SCALE_CUDA, "scale", (16, 16)),
                            wgsl=(SCALE_WGSL, "scale"), reference="y = a * x")
    r = k.measure((64, 128), device=backend, quick=True, a=2.0)
    assert r.passed and r.workload == "scale" and r.size == "128x64", r
    assert r.device.startswith(backend) and r.kernel.median_s > 0 and r.bytes == 2 * 4 * 64 * 128, r
    assert kernel().measure(1 << 12, device=backend, quick=True).passed


def test_measuring_a_raw_kernel_refuses_what_it_cannot_run_by_name():
    k = kernel()
    with pytest.raises(ValueError, match="CPU function"):
        k.measure(1 << 10, device="cpu", quick=True)
    with pytest.raises(ValueError, match="`a`"):
        k.measure(1 << 10, quick=True, a=1.0)
    with pytest.raises(ValueError, match="not a size"):
        k.measure("lots", quick=True)
    with pytest.raises(TypeError):
        k.measure(1 << 10, quick=True, a="2")  # type: ignore[arg-type]

