"""Tile shapes of the tensor-core matmul kernels, timed without rebuilding the Rust workspace.

Compiles `cuda/kernels/matmul_tensor_cores.cu` with CuPy's NVRTC once per shape (the launch constants the host
passes as `-D` options: cuda/src/workloads/matmul.rs), runs each kernel on the same resident inputs (bf16, fp16,
or f32 for TF32), checks its result against PyTorch's product of the same inputs, and times it with CUDA events
beside `cublasGemmEx` in the same precision with f32 output (what gpuworthy's `cublas-bf16` / `cublas-fp16` call),
and PyTorch's matmul, in the same run.

    python3 bench-suite/peers/tensor_core_lab.py [SIZE] [PRECISION ...]   # default 8192, bf16 fp16 tf32
    ... --ceiling        first, the rate of `mma.sync` alone (no memory), a few warps an SM
    ... --wgmma-only     the Hopper rung's shapes only (`cuda/kernels/matmul_wgmma.cu`, sm_90a)
    ... --tma-only       the tensor-memory-accelerator rung's shapes only (`cuda/kernels/matmul_tma.cu`, sm_90a)
    ... --edits          the `mma.sync` kernel's closest shapes as they are and with each edit of EDITS
    ... --edits=a,b      the same with the edits whose names contain `a` or `b`

A shape that wins here moves into the host's constants; the rungs are then checked by the conformance tests and
measured by `gpuworthy run matmul --precision ...`. Needs an NVIDIA GPU of compute capability 8.0 or newer, CuPy
and PyTorch.
"""

import pathlib
import statistics
import sys

import cupy
import numpy
import torch

KERNELS_DIR = pathlib.Path(__file__).resolve().parents[2] / "cuda" / "kernels"
SOURCE = (KERNELS_DIR / "matmul_tensor_cores.cu").read_text()
WGMMA_SOURCE = (KERNELS_DIR / "matmul_wgmma.cu").read_text()
TMA_SOURCE = (KERNELS_DIR / "matmul_tma.cu").read_text()

# The Hopper rung's shapes: (warpgroups, block columns, stages, extra options); 64 rows of C a warpgroup.
WGMMA_SHAPES = {
    "wgmma 192x128 k64x4 (3 wg, in use)": (3, 128, 4, ()),
    "wgmma 128x128 k64x4 (2 wg)": (2, 128, 4, ()),
    "wgmma 256x128 k64x3 (4 wg)": (4, 128, 3, ()),
}

# The tensor-memory-accelerator rung's shapes: (consumer warpgroups, stages, persistent grid); 64 rows of C a
# consumer, 256 columns, tiles of K of 128 bytes a row (64 16-bit values, 32 TF32).
TMA_SHAPES = {
    "tma 128x256 4 stages persistent": (2, 4, True),
    "tma 128x256 4 stages block a tile": (2, 4, False),
    "tma 128x256 3 stages persistent": (2, 3, True),
}


def tma_runs(precision, a_c, b_c, c, size, reference, scale, flops):
    """The TMA rung's shapes: tensor maps encoded and the kernel launched through the driver, as the host does."""
    import ctypes

    driver = ctypes.CDLL("libcuda.so.1")
    sms = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["multiProcessorCount"]
    keep = []

    element_bytes = 4 if precision == "tf32" else 2

    def tensor_map(matrix, rows, columns, box_columns, box_rows):
        storage = ctypes.create_string_buffer(128 + 128)
        address = (ctypes.addressof(storage) + 127) // 128 * 128
        keep.append(storage)
        dims = (ctypes.c_uint64 * 2)(columns, rows)
        strides = (ctypes.c_uint64 * 1)(columns * element_bytes)
        box = (ctypes.c_uint32 * 2)(box_columns, box_rows)
        steps = (ctypes.c_uint32 * 2)(1, 1)
        # UINT16 (FLOAT32) data, rank 2, no interleave, 128-byte swizzle, 256-byte L2 promotion, zeros past the edges.
        data_type = 7 if element_bytes == 4 else 1
        status = driver.cuTensorMapEncodeTiled(ctypes.c_void_p(address), data_type, 2, ctypes.c_void_p(matrix.data.ptr), dims,
                                               strides, box, steps, 0, 3, 3, 0)
        if status != 0:
            raise RuntimeError(f"cuTensorMapEncodeTiled: CUresult {status}")
        return address

    for label, (consumers, stages, persistent) in TMA_SHAPES.items():
        rows = 64 * consumers
        shared = stages * (rows + 256) * 64 * 2 + stages * 16 + 1024
        try:
            options = ("--std=c++17", "-lineinfo", "--gpu-architecture=sm_90a", f"-DTMA_STAGES={stages}",
                       f"-DTMA_CONSUMERS={consumers}")
            module = cupy.RawModule(code=TMA_SOURCE, options=options)
            kernel = module.get_function({"bf16": "matmul_tma_bf16", "fp16": "matmul_tma_f16",
                                          "tf32": "matmul_tma_tf32"}[precision])
            kernel.max_dynamic_shared_size_bytes = shared
            depth = 128 // element_bytes
            map_a = tensor_map(a_c, size, size, depth, rows)
            if precision == "tf32":  # B transposed (N x K), as the host copies it
                b_t = cupy.ascontiguousarray(b_c.T)
                keep.append(b_t)
                map_b = tensor_map(b_t, size, size, depth, 256)
            else:
                map_b = tensor_map(b_c, size, size, 64, depth)
            c_pointer = ctypes.c_uint64(c.data.ptr)
            m = k = n = ctypes.c_int32(size)
            arguments = (ctypes.c_void_p * 6)(map_a, map_b, ctypes.addressof(c_pointer), ctypes.addressof(m),
                                              ctypes.addressof(k), ctypes.addressof(n))
            tiles = ((size + rows - 1) // rows) * ((size + 255) // 256)
            grid = min(tiles, sms) if persistent else tiles
            threads = 128 * (consumers + 1)

            def launch():
                status = driver.cuLaunchKernel(ctypes.c_void_p(kernel.kernel.ptr), grid, 1, 1, threads, 1, 1, shared,
                                               ctypes.c_void_p(cupy.cuda.get_current_stream().ptr), arguments, None)
                if status != 0:
                    raise RuntimeError(f"cuLaunchKernel: CUresult {status}")

            c.fill(0)
            ms, lo, hi = median_ms(launch)
            error = (torch.from_dlpack(c).double() - reference).abs().max().item() / scale
            print(f"  {label:32} {ms * 1e3:9.1f} us  {flops / ms / 1e9:8.1f} TFLOP/s  "
                  f"[{lo * 1e3:.1f}, {hi * 1e3:.1f}]  max|err|/scale {error:.2e}  {kernel.num_regs} regs, "
                  f"{kernel.local_size_bytes} B local, {shared // 1024} KiB shared", flush=True)
        except Exception as e:
            print(f"  {label:32} failed: {type(e).__name__}: {str(e)[:1500]}", flush=True)


# The ceiling of `mma.sync` itself: every warp issues independent m16n8k16 products on registers, no memory.
PEAK_SOURCE = r"""
extern "C" __global__ void mma_peak(float* out, int iterations)
{
    unsigned a[4], b[2];
    for (int i = 0; i < 4; ++i) a[i] = 0x3f803f80u ^ (threadIdx.x * 7 + i);
    for (int i = 0; i < 2; ++i) b[i] = 0x3f803f80u ^ (threadIdx.x * 3 + i);
    float acc[8][4] = {};
    for (int it = 0; it < iterations; ++it) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                         : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        }
    }
    float s = 0.0f;
    for (int j = 0; j < 8; ++j) s += acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3];
    if (s == 1234.5f) out[0] = s;
}
"""


def mma_sync_ceiling():
    """TFLOP/s of bf16 `mma.sync` with no memory traffic, for a few warps per SM."""
    kernel = cupy.RawModule(code=PEAK_SOURCE, options=("--std=c++17",)).get_function("mma_peak")
    sms = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["multiProcessorCount"]
    out = cupy.zeros(1, dtype=cupy.float32)
    iterations = 4096
    for blocks_per_sm, threads in ((1, 128), (1, 256), (2, 256), (4, 256)):
        blocks = sms * blocks_per_sm
        ms, lo, hi = median_ms(lambda: kernel((blocks,), (threads,), (out, numpy.int32(iterations))), repeats=7)
        flops = blocks * (threads // 32) * iterations * 8 * 2.0 * 16 * 8 * 16
        print(f"  mma.sync bf16 ceiling, {blocks_per_sm * threads // 32:2d} warps an SM: {flops / ms / 1e9:8.1f} TFLOP/s")

# name: (threads, block rows, block columns, warp rows, warp columns, min blocks per SM,
#        16-bit tile depth, 16-bit stages, TF32 tile depth, TF32 stages)
SHAPES = {
    "128x256 w64x64 k64x3": (256, 128, 256, 64, 64, 1, 64, 3, 32, 3),
    "128x256 w64x64 k32x4": (256, 128, 256, 64, 64, 1, 32, 4, 16, 4),
    "128x256 w64x64 k32x3": (256, 128, 256, 64, 64, 1, 32, 3, 16, 3),
    "256x128 w64x64 k32x4": (256, 256, 128, 64, 64, 1, 32, 4, 16, 4),
    "256x128 w64x64 k64x3 (now)": (256, 256, 128, 64, 64, 1, 64, 3, 32, 3),
    "128x128 4w w64x64 k32x4 2/SM": (128, 128, 128, 64, 64, 2, 32, 4, 16, 4),
    "128x128 4w w64x64 k64x3 2/SM": (128, 128, 128, 64, 64, 2, 64, 3, 32, 3),
    "128x128 8w w64x32 k32x4 2/SM": (256, 128, 128, 64, 32, 2, 32, 4, 16, 4),
    "128x128 8w w32x64 k32x4 2/SM": (256, 128, 128, 32, 64, 2, 32, 4, 16, 4),
    "128x256 8w w64x64 k32x2 2/SM": (256, 128, 256, 64, 64, 2, 32, 2, 16, 2),
}

# Edits of the kernel file tried beside it (`--edits`): each a name and a function of the source. Those marked "cut"
# leave out part of the work, so their results are wrong (their error is printed): they say what the rest costs.
# Earlier edits, measured and taken or not, are in docs/results/nvidia-h200/precision/README.md.
COPIES = "            if (refill < tiles) {\n                copy(refill, step);\n            }\n"
BARRIER = "            if (step == STEPS - 1) {\n                tc_wait<P::STAGES - 2>();\n                __syncthreads();\n            }\n"
# The copies of an inside tile addressed by stepping one pointer a matrix, or by 32-bit element offsets from the
# matrix's start (every matmul whose matrices have under 2^31 elements), instead of a 64-bit product for each chunk.
COPY_A = """#pragma unroll
        for (int i = 0; i < TC_BM / A_ROWS_PER_PASS; ++i) {
            tc_copy16_to(stage + a_to + i * A_ROWS_PER_PASS * P::A_STRIDE * sizeof(T),
                         a_from + k0 + (size_t)i * A_ROWS_PER_PASS * K);
        }"""
COPY_B = """#pragma unroll
        for (int i = 0; i < P::BK / B_ROWS_PER_PASS; ++i) {
            tc_copy16_to(stage + b_to + i * B_ROWS_PER_PASS * P::B_STRIDE * sizeof(T),
                         b_from + (size_t)(k0 + i * B_ROWS_PER_PASS) * N);
        }"""
STEPPED_A = """const typename P::T* a = a_from + k0;
#pragma unroll
        for (int i = 0; i < TC_BM / A_ROWS_PER_PASS; ++i) {
            tc_copy16_to(stage + a_to + i * A_ROWS_PER_PASS * P::A_STRIDE * sizeof(T), a);
            a += (size_t)A_ROWS_PER_PASS * K;
        }"""
STEPPED_B = """const typename P::T* b = b_from + (size_t)k0 * N;
#pragma unroll
        for (int i = 0; i < P::BK / B_ROWS_PER_PASS; ++i) {
            tc_copy16_to(stage + b_to + i * B_ROWS_PER_PASS * P::B_STRIDE * sizeof(T), b);
            b += (size_t)B_ROWS_PER_PASS * N;
        }"""
OFFSET_A = """unsigned a = (unsigned)(a_from - a_base) + (unsigned)k0;
#pragma unroll
        for (int i = 0; i < TC_BM / A_ROWS_PER_PASS; ++i) {
            tc_copy16_to(stage + a_to + i * A_ROWS_PER_PASS * P::A_STRIDE * sizeof(T), a_base + a);
            a += (unsigned)(A_ROWS_PER_PASS * K);
        }"""
OFFSET_B = """unsigned b = (unsigned)(b_from - b_base) + (unsigned)k0 * (unsigned)N;
#pragma unroll
        for (int i = 0; i < P::BK / B_ROWS_PER_PASS; ++i) {
            tc_copy16_to(stage + b_to + i * B_ROWS_PER_PASS * P::B_STRIDE * sizeof(T), b_base + b);
            b += (unsigned)(B_ROWS_PER_PASS * N);
        }"""


def offsets(source):
    """32-bit offsets from the matrices' starts, passed to `tc_copy_inside` (the lab's matrices are 2^26 elements)."""
    source = source.replace(COPY_A, OFFSET_A).replace(COPY_B, OFFSET_B)
    source = source.replace("""                                               unsigned a_to, unsigned b_to)
{
    using T = typename P::T;
    constexpr int VECTOR = 16 / sizeof(T);
    constexpr int A_ROWS_PER_PASS""", """                                               unsigned a_to, unsigned b_to, const typename P::T* a_base,
                                               const typename P::T* b_base)
{
    using T = typename P::T;
    constexpr int VECTOR = 16 / sizeof(T);
    constexpr int A_ROWS_PER_PASS""")
    source = source.replace("tc_copy_inside<P>(stage, true, true, K, N, k0, a_from, b_from, a_to, b_to);",
                            "tc_copy_inside<P>(stage, true, true, K, N, k0, a_from, b_from, a_to, b_to, A, B);")
    return source.replace("tile * P::BK, a_from, b_from, a_to, b_to);", "tile * P::BK, a_from, b_from, a_to, b_to, A, B);")


INSIDE_OR_EDGES = """    if (block_inside && K % P::BK == 0) {
        tc_main_loop<P>(copy_inside, acc, shared, a_lane, b_lane, tiles);
    } else {
        tc_main_loop<P>(copy_with_edges, acc, shared, a_lane, b_lane, tiles);
    }"""

EDITS = {
    # Right only where every block is inside (the lab's 8192^3): does the loop for blocks with edges cost the inside
    # loop registers?
    "cut: no loop for edges": lambda source: source.replace(
        INSIDE_OR_EDGES, "    tc_main_loop<P>(copy_inside, acc, shared, a_lane, b_lane, tiles);"),
    "copies by stepped pointers": lambda source: source.replace(COPY_A, STEPPED_A).replace(COPY_B, STEPPED_B),
    "copies by 32-bit offsets": offsets,
    "cut: no copies in the loop": lambda source: source.replace(COPIES, ""),
    "cut: no copies, no barrier": lambda source: source.replace(COPIES, "").replace(BARRIER, ""),
}

MODULES = {}


def module_of(shape, extra=(), edit=None):
    """The kernel file (edited by `EDITS[edit]`) compiled with `shape`'s constants and `extra` options, once."""
    if (shape, extra, edit) not in MODULES:
        threads, bm, bn, wm, wn, min_blocks, bk16, st16, bk32, st32 = shape
        defines = dict(TC_THREADS=threads, TC_BM=bm, TC_BN=bn, TC_WARP_M=wm, TC_WARP_N=wn, TC_MIN_BLOCKS=min_blocks,
                       TC16_BK=bk16, TC16_STAGES=st16, TC32_BK=bk32, TC32_STAGES=st32)
        options = ("--std=c++17", "-lineinfo") + tuple(f"-D{k}={v}" for k, v in defines.items()) + extra
        source = EDITS[edit](SOURCE) if edit else SOURCE
        if edit:
            assert source != SOURCE, f"the edit {edit!r} changed nothing"
        MODULES[(shape, extra, edit)] = cupy.RawModule(code=source, options=options)
    return MODULES[(shape, extra, edit)]


KERNELS = {"bf16": "matmul_mma_bf16", "fp16": "matmul_mma_f16", "tf32": "matmul_mma_tf32"}


def shared_bytes(shape, element_bytes):
    _, bm, bn, _, _, _, bk16, st16, bk32, st32 = shape
    depth, stages = (bk32, st32) if element_bytes == 4 else (bk16, st16)
    return stages * element_bytes * (bm * (depth + 16 // element_bytes) + depth * (bn + 8))


def median_ms(launch, repeats=15):
    for _ in range(3):
        launch()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(repeats):
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return statistics.median(times), min(times), max(times)


def cublas_gemm_ex(precision, a, b, c, size):
    """`cublasGemmEx` as gpuworthy calls it: row-major C (f32) = A B as column-major C^T = B^T A^T."""
    from cupy_backends.cuda.libs import cublas

    handle = cupy.cuda.device.get_cublas_handle()
    data = {"bf16": 14, "fp16": 2, "tf32": 0}[precision]  # CUDA_R_16BF, CUDA_R_16F, CUDA_R_32F
    one, zero = numpy.array(1.0, numpy.float32), numpy.array(0.0, numpy.float32)
    compute = 68 if precision != "tf32" else 77  # CUBLAS_COMPUTE_32F, _32F_FAST_TF32

    def launch():
        cublas.gemmEx(handle, 0, 0, size, size, size, one.ctypes.data, b.data.ptr, data, size, a.data.ptr, data,
                      size, zero.ctypes.data, c.data.ptr, 0, size, compute, 99)  # CUBLAS_GEMM_DEFAULT_TENSOR_OP

    return launch


def main():
    words = [w for w in sys.argv[1:] if not w.startswith("--")]
    size = int(words[0]) if words else 8192
    precisions = words[1:] or ["bf16", "fp16", "tf32"]
    only_hopper = "--wgmma-only" in sys.argv or "--tma-only" in sys.argv
    edits_option = [w for w in sys.argv[1:] if w == "--edits" or w.startswith("--edits=")]
    edits_only = bool(edits_option)
    edit_words = [w for w in edits_option[0].split("=", 1)[1].split(",") if w] if "=" in "".join(edits_option) else []
    shapes = {} if only_hopper else SHAPES
    device = cupy.cuda.Device()
    name = cupy.cuda.runtime.getDeviceProperties(device.id)["name"].decode()
    print(f"device: {name}, CuPy {cupy.__version__}, torch {torch.__version__}; matmul {size}^3, median of 15")
    flops = 2.0 * size**3
    if "--ceiling" in sys.argv:
        mma_sync_ceiling()
    torch.manual_seed(0)
    a32 = torch.rand(size, size, device="cuda") * 2 - 1
    b32 = torch.rand(size, size, device="cuda") * 2 - 1
    for precision in precisions:
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}[precision]
        a_t, b_t = a32.to(dtype), b32.to(dtype)
        if precision == "tf32":
            a_c, b_c = cupy.from_dlpack(a_t), cupy.from_dlpack(b_t)
        else:
            a_c, b_c = cupy.from_dlpack(a_t.view(torch.int16)), cupy.from_dlpack(b_t.view(torch.int16))
        reference = a_t.double() @ b_t.double()
        scale = (a_t.double().abs() @ b_t.double().abs()).max().item()
        c = cupy.empty((size, size), dtype=cupy.float32)
        print(f"== {precision}")
        try:
            ms, lo, hi = median_ms(cublas_gemm_ex(precision, a_c, b_c, c, size))
            error = (torch.from_dlpack(c).double() - reference).abs().max().item() / scale
            print(f"  {'cublasGemmEx (f32 C)':32} {ms * 1e3:9.1f} us  {flops / ms / 1e9:8.1f} TFLOP/s  "
                  f"[{lo * 1e3:.1f}, {hi * 1e3:.1f}]  max|err|/scale {error:.2e}")
        except Exception as e:  # the peer is informative; the shapes are what this lab is for
            print(f"  cublasGemmEx: {type(e).__name__}: {e}")
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        ms, lo, hi = median_ms(lambda: torch.matmul(a_t, b_t))
        print(f"  {'torch.matmul (' + str(dtype).split('.')[-1] + ' C)':32} {ms * 1e3:9.1f} us  "
              f"{flops / ms / 1e9:8.1f} TFLOP/s  [{lo * 1e3:.1f}, {hi * 1e3:.1f}]")
        element_bytes = 4 if precision == "tf32" else 2
        runs = [(label, shape, (), None) for label, shape in shapes.items()]
        if edits_only:
            # Each edit (or those whose names contain a word of `--edits=word,word`) on the shapes that came
            # closest, beside them as they are.
            close = ["256x128 w64x64 k64x3 (now)", "128x256 w64x64 k64x3", "256x128 w64x64 k32x4"]
            chosen = [e for e in EDITS if not edit_words or any(w in e for w in edit_words)]
            runs = [(label, SHAPES[label], (), None) for label in close]
            runs += [(f"{label}, {edit}", SHAPES[label], (), edit) for edit in chosen for label in close]
        hopper = cupy.cuda.Device().compute_capability == "90"
        if hopper and "--wgmma-only" not in sys.argv and not edits_only:
            tma_runs(precision, a_c, b_c, c, size, reference, scale, flops)
        if hopper and precision != "tf32" and "--tma-only" not in sys.argv and not edits_only:
            for label, (warpgroups, columns, stages, extra) in WGMMA_SHAPES.items():
                rows = 64 * warpgroups
                shared = stages * (rows + columns) * 64 * 2 + 1024
                try:
                    options = ("--std=c++17", "-lineinfo", "--gpu-architecture=sm_90a", f"-DWG_BN={columns}",
                               f"-DWG_STAGES={stages}", f"-DWG_WARPGROUPS={warpgroups}") + extra
                    module = cupy.RawModule(code=WGMMA_SOURCE, options=options)
                    kernel = module.get_function("matmul_wgmma_bf16" if precision == "bf16" else "matmul_wgmma_f16")
                    kernel.max_dynamic_shared_size_bytes = shared
                    grid = ((size + columns - 1) // columns, (size + rows - 1) // rows)
                    args = (a_c, b_c, c, numpy.int32(size), numpy.int32(size), numpy.int32(size))
                    c.fill(0)
                    threads = 128 * warpgroups
                    ms, lo, hi = median_ms(lambda: kernel(grid, (threads,), args, shared_mem=shared))
                    error = (torch.from_dlpack(c).double() - reference).abs().max().item() / scale
                    print(f"  {label:32} {ms * 1e3:9.1f} us  {flops / ms / 1e9:8.1f} TFLOP/s  "
                          f"[{lo * 1e3:.1f}, {hi * 1e3:.1f}]  max|err|/scale {error:.2e}  {kernel.num_regs} regs, "
                          f"{kernel.local_size_bytes} B local, {shared // 1024} KiB shared")
                except Exception as e:
                    print(f"  {label:32} failed: {type(e).__name__}: {str(e)[:1500]}")
        for label, shape, extra, edit in runs:
            threads, bm, bn = shape[:3]
            shared = shared_bytes(shape, element_bytes)
            try:
                kernel = module_of(shape, extra, edit).get_function(KERNELS[precision])
                kernel.max_dynamic_shared_size_bytes = shared
                grid = ((size + bn - 1) // bn, (size + bm - 1) // bm)
                args = (a_c, b_c, c, numpy.int32(size), numpy.int32(size), numpy.int32(size))
                c.fill(0)
                ms, lo, hi = median_ms(lambda: kernel(grid, (threads,), args, shared_mem=shared))
                error = (torch.from_dlpack(c).double() - reference).abs().max().item() / scale
                regs = kernel.num_regs
                spill = kernel.local_size_bytes
                print(f"  {label:32} {ms * 1e3:9.1f} us  {flops / ms / 1e9:8.1f} TFLOP/s  "
                      f"[{lo * 1e3:.1f}, {hi * 1e3:.1f}]  max|err|/scale {error:.2e}  {regs} regs, "
                      f"{spill} B local, {shared // 1024} KiB shared")
            except Exception as e:
                print(f"  {label:32} failed: {type(e).__name__}: {str(e)[:300]}")


if __name__ == "__main__":
    main()
