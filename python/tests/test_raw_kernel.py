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
