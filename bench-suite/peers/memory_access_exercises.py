"""Chapter 23's exercises 3 to 5 on a CUDA GPU, without rebuilding the Rust workspace.

The example `gpuworthy/examples/09_memory_access.rs` times four raw kernels (a copy, a naive transpose, a tiled one
and a padded one). The exercises change them: a tile padded to 34 floats a row (exercise 3), the naive transpose
reading columns and writing rows (exercise 4), and CuPy's own `cupy.ascontiguousarray(x.T)` (exercise 5). This
script compiles the example's CUDA C and those changes with CuPy's NVRTC, checks every result against NumPy's
transpose, and times each in batches of 20 back-to-back launches between two CUDA events (as the example's `kernel`
column is timed), counting 2 x side^2 x 4 bytes moved, as the example does.

    python3 bench-suite/peers/memory_access_exercises.py [SIDE]      # default 4096

Under `ncu --kernel-name NAME -c 1 --metrics ...` with `--once`, each kernel runs once, for the profiler's counters.
"""

import sys

import cupy
import numpy

sys.path.insert(0, __import__("pathlib").Path(__file__).resolve().parent.as_posix())
from expr_peers import batch_event_ms, median_of  # noqa: E402

SIMPLE = r"""
extern "C" __global__ void copy(const float* a, float* b, int width, int height) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < height && col < width) b[row * width + col] = a[row * width + col];
}

extern "C" __global__ void transpose_naive(const float* a, float* b, int width, int height) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < height && col < width) b[col * height + row] = a[row * width + col];
}

// Exercise 4: the roles of a and b swapped. The thread (col, row) writes row `row` of b (width rows of height),
// neighbouring threads side by side, and reads a column of a, neighbouring threads `width` floats apart.
extern "C" __global__ void transpose_naive_swapped(const float* a, float* b, int width, int height) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < width && col < height) b[row * height + col] = a[col * width + row];
}
"""


def tiled(entry, tile_width):
    """The example's tiled transpose with `tile_width` floats to a row of the tile (32, 33; 34 for exercise 3)."""
    return rf"""
extern "C" __global__ void {entry}(const float* a, float* b, int width, int height) {{
    __shared__ float tile[32][{tile_width}];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    if (x < width && y < height) tile[threadIdx.y][threadIdx.x] = a[y * width + x];
    __syncthreads();
    int out_col = blockIdx.y * 32 + threadIdx.x;
    int out_row = blockIdx.x * 32 + threadIdx.y;
    if (out_col < height && out_row < width) b[out_row * height + out_col] = tile[threadIdx.x][threadIdx.y];
}}
"""


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    once = "--once" in sys.argv
    side = int(args[0]) if args else 4096
    a = cupy.random.default_rng(1).random((side, side), dtype=cupy.float32)
    expected = cupy.asnumpy(a).T.copy()
    simple = cupy.RawModule(code=SIMPLE)
    kernels = [
        ("copy", simple.get_function("copy"), (32, 8), False),
        ("transpose_naive", simple.get_function("transpose_naive"), (32, 8), True),
        ("transpose_naive_swapped", simple.get_function("transpose_naive_swapped"), (32, 8), True),
    ]
    for name, width in [("transpose_tiled", 32), ("transpose_padded", 33), ("transpose_padded34", 34)]:
        kernels.append((name, cupy.RawModule(code=tiled(name, width)).get_function(name), (32, 32), True))
    clock = median_of(11, 3, batch_event_ms(cupy, 20))
    moved = 8.0 * side * side
    props = cupy.cuda.runtime.getDeviceProperties(0)
    print(f"device: {props['name'].decode()}, CuPy {cupy.__version__}, {side} x {side} float32, 2 x {side * side * 4} bytes moved")
    for name, function, block, transposes in kernels:
        b = cupy.empty_like(a)
        grid = ((side + block[0] - 1) // block[0], (side + block[1] - 1) // block[1])
        args = (a, b, numpy.int32(side), numpy.int32(side))

        def launch(function=function, grid=grid, block=block, args=args):
            function(grid, block, args)

        launch()
        cupy.cuda.runtime.deviceSynchronize()
        want = expected if transposes else cupy.asnumpy(a)
        check = "ok" if numpy.array_equal(cupy.asnumpy(b), want) else "WRONG"
        if once:
            continue
        ms = clock(launch)
        print(f"{name:26s} {ms * 1e3:9.1f} us {moved / ms / 1e6:9.1f} GB/s  {check}")
    transposed = cupy.ascontiguousarray(a.T)
    check = "ok" if numpy.array_equal(cupy.asnumpy(transposed), expected) else "WRONG"
    if not once:
        ms = clock(lambda: cupy.ascontiguousarray(a.T))
        print(f"{'cupy.ascontiguousarray(x.T)':26s} {ms * 1e3:9.1f} us {moved / ms / 1e6:9.1f} GB/s  {check}")
    else:
        cupy.ascontiguousarray(a.T)
        cupy.cuda.runtime.deviceSynchronize()


if __name__ == "__main__":
    main()
