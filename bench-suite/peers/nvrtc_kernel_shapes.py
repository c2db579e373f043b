"""NVRTC's compile time and the kernel time at 2^26 of the elementwise kernels gpuworthy generates, written out here
in several shapes (how often the element function is inlined) and option sets, on a CUDA machine with CuPy:

    CUDA_CACHE_DISABLE=1 python3 bench-suite/peers/nvrtc_kernel_shapes.py shapes   # shapes x --Ofast-compile
    CUDA_CACHE_DISABLE=1 python3 bench-suite/peers/nvrtc_kernel_shapes.py trig     # sin/cos written out, or sinf/cosf
    CUDA_CACHE_DISABLE=1 python3 bench-suite/peers/nvrtc_kernel_shapes.py pairs    # current, masked, lanes2, pairs

Shapes: `current` (four lanes inlined, a separate scalar tail), `masked` (four lanes, the tail in the same loop),
`lanes2` (a loop of two trips over pairs, not unrolled: two copies), `lanes1` (one copy), `pairs` (a float2 a
thread: two copies), `scalar` (one element a thread). Each compile is timed with nothing cached (CUDA_CACHE_DISABLE=1: NVRTC keeps compiled programs in the CUDA
compute cache otherwise) after one compile that starts NVRTC; each kernel is timed with CUDA events (median of 30).
maxdiff: against the first shape's output (`shapes`), or a float64 reference (`trig`).
"""
import ctypes, glob, os, sys, time, statistics, tempfile
import cupy as cp

def find_nvrtc():
    pats = ["/usr/local/cuda*/lib64/libnvrtc.so*", "/usr/lib/x86_64-linux-gnu/libnvrtc.so*", "/usr/local/cuda*/targets/*/lib/libnvrtc.so*"]
    for p in pats:
        for f in sorted(glob.glob(p)):
            if "builtins" not in f and "alt" not in f:
                return f
    import nvidia, pathlib
    for f in pathlib.Path(nvidia.__path__[0]).rglob("libnvrtc.so*"):
        if "builtins" not in str(f): return str(f)
lib = ctypes.CDLL(find_nvrtc())
maj, mn = ctypes.c_int(), ctypes.c_int(); lib.nvrtcVersion(ctypes.byref(maj), ctypes.byref(mn))
print("nvrtc", maj.value, mn.value, find_nvrtc())

def compile_(src, opts):
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"expr.cu", 0, None, None) == 0
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    t = time.perf_counter()
    r = lib.nvrtcCompileProgram(prog, len(opts), arr)
    dt = time.perf_counter() - t
    if r != 0:
        size = ctypes.c_size_t(); lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value); lib.nvrtcGetProgramLog(prog, log)
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        return dt, None, log.value.decode()
    size = ctypes.c_size_t(); lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value); lib.nvrtcGetCUBIN(prog, buf)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return dt, buf.raw, None

HELPERS = """
static __device__ __noinline__ float gw_sin_far(float x) { return sinf(x); }
static __device__ __noinline__ float gw_cos_far(float x) { return cosf(x); }
#define GW_TRIG(NAME, FAR, QUADRANT_SHIFT) \\
static __device__ __forceinline__ float NAME(float x) { \\
    if (!(fabsf(x) <= 8192.0f)) return FAR(x); \\
    const float q = rintf(x * 0.636619772f); \\
    const int quadrant = (int)q + QUADRANT_SHIFT; \\
    float r = fmaf(-q, 1.5703125f, x); \\
    r = fmaf(-q, 4.837513e-4f, r); \\
    r = fmaf(-q, 7.54979e-8f, r); \\
    const float z = r * r; \\
    const float s = fmaf(fmaf(fmaf(-1.9515296e-4f, z, 8.332161e-3f), z, -0.16666655f), z * r, r); \\
    const float c = fmaf(fmaf(fmaf(2.4433157e-5f, z, -1.3887316e-3f), z, 4.1666646e-2f), z * z, fmaf(-0.5f, z, 1.0f)); \\
    float v = (quadrant & 1) ? c : s; \\
    v = (quadrant & 2) ? -v : v; \\
    return (QUADRANT_SHIFT == 0 && x == 0.0f) ? x : v; \\
}
// gw_: the far arguments out of line; gi_: sinf and cosf inline.
GW_TRIG(gw_sin, gw_sin_far, 0)
GW_TRIG(gw_cos, gw_cos_far, 1)
GW_TRIG(gi_sin, sinf, 0)
GW_TRIG(gi_cos, cosf, 1)
static __device__ __noinline__ float gw_sinf(float x) { return sinf(x); }
static __device__ __noinline__ float gw_expf(float x) { return expf(x); }
static __device__ __forceinline__ float gw_sign(float x) {
    return (isnan(x) || x == 0.0f) ? x : (x > 0.0f ? 1.0f : -1.0f);
}
static __device__ __forceinline__ float gw_pow(float x, float y) {
    return (x < 0.0f && isfinite(y) && y != truncf(y)) ? __uint_as_float(0x7fc00000u) : powf(x, y);
}
"""
EXPRS = {
 "E2-own": "const float v1 = i0 * i0; const float v2 = -v1; const float v3 = expf(v2); const float v5 = __uint_as_float(0x40400000u) * i0; const float v6 = gw_sin(v5); const float v7 = v3 * v6; const float v9 = v7 + __uint_as_float(0x3e800000u); o0 = v9;",
 "E2-owni": "const float v1 = i0 * i0; const float v2 = -v1; const float v3 = expf(v2); const float v5 = __uint_as_float(0x40400000u) * i0; const float v6 = gi_sin(v5); const float v7 = v3 * v6; const float v9 = v7 + __uint_as_float(0x3e800000u); o0 = v9;",
 "cs-own": "const float v1 = gw_cos(i0); const float v2 = gw_sin(i0); o0 = v1 + v2;",
 "cs-owni": "const float v1 = gi_cos(i0); const float v2 = gi_sin(i0); o0 = v1 + v2;",
 "E2-noinl": "const float v1 = i0 * i0; const float v2 = -v1; const float v3 = gw_expf(v2); const float v5 = __uint_as_float(0x40400000u) * i0; const float v6 = gw_sinf(v5); const float v7 = v3 * v6; const float v9 = v7 + __uint_as_float(0x3e800000u); o0 = v9;",
 "a*x+b": "const float v1 = s0 * i0; const float v2 = v1 + s1; o0 = v2;",
 "horner": "o0 = ((((((__uint_as_float(0x3c000000u)*i0 + __uint_as_float(0x3c800000u))*i0 + __uint_as_float(0x3d000000u))*i0 + __uint_as_float(0x3d800000u))*i0 + __uint_as_float(0x3e000000u))*i0 + __uint_as_float(0x3e800000u))*i0 + __uint_as_float(0x3f000000u))*i0 + __uint_as_float(0x3f800000u);",
 "x*x+1": "const float v1 = i0 * i0; const float v2 = v1 + __uint_as_float(0x3f800000u); o0 = v2;",
 "E2+0.25": "const float v1 = i0 * i0; const float v2 = -v1; const float v3 = expf(v2); const float v5 = __uint_as_float(0x40400000u) * i0; const float v6 = sinf(v5); const float v7 = v3 * v6; const float v9 = v7 + __uint_as_float(0x3e800000u); o0 = v9;",
 "cos+sin": "const float v1 = cosf(i0); const float v2 = sinf(i0); o0 = v1 + v2;",
 "tanh": "const float v1 = tanhf(i0); const float v2 = v1 * __uint_as_float(0x3f400000u); o0 = v2 - __uint_as_float(0x3f000000u);",
}
def element(body):
    return HELPERS + "static __device__ __forceinline__ void gw_element(float i0, float s0, float s1, float& o0) {\n    " + body + "\n}\n"
HEAD = "extern \"C\" __global__ void expr_map(const float* __restrict__ p_in0, float* __restrict__ p_out0, float s0, float s1, long long n) {\n    const long long stride = (long long)gridDim.x * blockDim.x;\n    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
SHAPES = {
 "current": HEAD + """    for (long long q = first; q < n / 4; q += stride) {
        const float4 x0 = reinterpret_cast<const float4*>(p_in0)[q];
        float4 y0;
        gw_element(x0.x, s0, s1, y0.x); gw_element(x0.y, s0, s1, y0.y); gw_element(x0.z, s0, s1, y0.z); gw_element(x0.w, s0, s1, y0.w);
        reinterpret_cast<float4*>(p_out0)[q] = y0;
    }
    for (long long i = n / 4 * 4 + first; i < n; i += stride) { float y0; gw_element(p_in0[i], s0, s1, y0); p_out0[i] = y0; }
}
""",
 "masked": HEAD + """    for (long long q = first; q < (n + 3) / 4; q += stride) {
        const bool whole = 4 * q + 4 <= n;
        float4 x0;
        if (whole) { x0 = reinterpret_cast<const float4*>(p_in0)[q]; }
        else { const long long i = 4 * q; x0.x = p_in0[i]; x0.y = i + 1 < n ? p_in0[i + 1] : 0.0f; x0.z = i + 2 < n ? p_in0[i + 2] : 0.0f; x0.w = 0.0f; }
        float4 y0;
        gw_element(x0.x, s0, s1, y0.x); gw_element(x0.y, s0, s1, y0.y); gw_element(x0.z, s0, s1, y0.z); gw_element(x0.w, s0, s1, y0.w);
        if (whole) { reinterpret_cast<float4*>(p_out0)[q] = y0; }
        else { const long long i = 4 * q; p_out0[i] = y0.x; if (i + 1 < n) p_out0[i + 1] = y0.y; if (i + 2 < n) p_out0[i + 2] = y0.z; }
    }
}
""",
 "lanes1": HEAD + """    for (long long q = first; q < (n + 3) / 4; q += stride) {
        const bool whole = 4 * q + 4 <= n;
        float4 x0;
        if (whole) { x0 = reinterpret_cast<const float4*>(p_in0)[q]; }
        else { const long long i = 4 * q; x0.x = p_in0[i]; x0.y = i + 1 < n ? p_in0[i + 1] : 0.0f; x0.z = i + 2 < n ? p_in0[i + 2] : 0.0f; x0.w = 0.0f; }
        float4 y0;
#pragma unroll 1
        for (int l = 0; l < 4; ++l) {
            const float a0 = l == 0 ? x0.x : l == 1 ? x0.y : l == 2 ? x0.z : x0.w;
            float r0; gw_element(a0, s0, s1, r0);
            y0.x = l == 0 ? r0 : y0.x; y0.y = l == 1 ? r0 : y0.y; y0.z = l == 2 ? r0 : y0.z; y0.w = l == 3 ? r0 : y0.w;
        }
        if (whole) { reinterpret_cast<float4*>(p_out0)[q] = y0; }
        else { const long long i = 4 * q; p_out0[i] = y0.x; if (i + 1 < n) p_out0[i + 1] = y0.y; if (i + 2 < n) p_out0[i + 2] = y0.z; }
    }
}
""",

 "lanes2": HEAD + """    for (long long q = first; q < (n + 3) / 4; q += stride) {
        const bool whole = 4 * q + 4 <= n;
        float4 x0;
        if (whole) { x0 = reinterpret_cast<const float4*>(p_in0)[q]; }
        else { const long long i = 4 * q; x0.x = p_in0[i]; x0.y = i + 1 < n ? p_in0[i + 1] : 0.0f; x0.z = i + 2 < n ? p_in0[i + 2] : 0.0f; x0.w = 0.0f; }
        float4 y0;
#pragma unroll 1
        for (int l = 0; l < 4; l += 2) {
            const float a0 = l == 0 ? x0.x : x0.z; const float b0 = l == 0 ? x0.y : x0.w;
            float r0, r1; gw_element(a0, s0, s1, r0); gw_element(b0, s0, s1, r1);
            y0.x = l == 0 ? r0 : y0.x; y0.y = l == 0 ? r1 : y0.y; y0.z = l == 2 ? r0 : y0.z; y0.w = l == 2 ? r1 : y0.w;
        }
        if (whole) { reinterpret_cast<float4*>(p_out0)[q] = y0; }
        else { const long long i = 4 * q; p_out0[i] = y0.x; if (i + 1 < n) p_out0[i + 1] = y0.y; if (i + 2 < n) p_out0[i + 2] = y0.z; }
    }
}
""",

 "pairs": HEAD + """    for (long long q = first; q < (n + 1) / 2; q += stride) {
        const long long i = 2 * q;
        const bool whole = i + 2 <= n;
        const float2 x0 = whole ? reinterpret_cast<const float2*>(p_in0)[q] : make_float2(p_in0[i], 0.0f);
        float2 y0;
        gw_element(x0.x, s0, s1, y0.x); gw_element(x0.y, s0, s1, y0.y);
        if (whole) { reinterpret_cast<float2*>(p_out0)[q] = y0; } else { p_out0[i] = y0.x; }
    }
}
""",
 "scalar": HEAD + """    for (long long i = first; i < n; i += stride) { float y0; gw_element(p_in0[i], s0, s1, y0); p_out0[i] = y0; }
}
""",
}
BASE = ["--gpu-architecture=sm_" + cp.cuda.Device().compute_capability, "--std=c++17", "-lineinfo", "-minimal"]
OPTS = {"base": BASE, "Oft=min": BASE + ["--Ofast-compile=min"]}
print("options", BASE)
t0 = time.perf_counter(); compile_(element(EXPRS["x*x+1"]) + SHAPES["current"], BASE); print("first compile in the process (NVRTC start-up included): %.1f ms" % ((time.perf_counter() - t0) * 1000))

n = 1 << 26
x = cp.random.rand(n, dtype=cp.float32) * 40 - 20
y = cp.empty_like(x)
cubin_source_hint = [b""]
def time_kernel(cubin):
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin); path = f.name
    mod = cp.RawModule(path=path); fn = mod.get_function("expr_map")
    per_thread = 2 if b"float2" in cubin_source_hint[0] else 4
    grid = min(65535, ((n + per_thread - 1) // per_thread + 255) // 256)
    args = (x, y, cp.float32(2), cp.float32(1), cp.int64(n))
    for _ in range(5): fn((grid,), (256,), args)
    ts = []
    s, e = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(30):
        s.record(); fn((grid,), (256,), args); e.record(); e.synchronize(); ts.append(cp.cuda.get_elapsed_time(s, e) * 1000)
    return statistics.median(ts), y.copy()
def copy_peak():
    ts = []; s, e = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(30):
        s.record(); y.data.copy_from_device(x.data, 4 * n); e.record(); e.synchronize(); ts.append(cp.cuda.get_elapsed_time(s, e) * 1000)
    return statistics.median(ts)
print("copy 2^26: %.1f us" % copy_peak())
mode = sys.argv[1] if len(sys.argv) > 1 else "shapes"
for rnd in range(3):
    for ename, body in EXPRS.items():
        ref = None
        for shape, ssrc in SHAPES.items():
            for oname, opts in OPTS.items():
                if shape in ("scalar", "masked", "pairs") and oname != "base": continue
                if ename.endswith("noinl") and shape != "current": continue
                trig = ("E2+0.25", "E2-own", "E2-owni", "cos+sin", "cs-own", "cs-owni", "a*x+b")
                if mode == "trig" and (shape not in ("current", "lanes2") or oname != "base" or ename not in trig): continue
                if mode == "pairs" and (shape not in ("current", "lanes2", "pairs", "masked") or oname != "base" or ename not in ("a*x+b", "E2+0.25", "horner", "cos+sin", "tanh")): continue
                if mode == "shapes" and shape == "pairs": continue
                if mode == "shapes" and ename in ("E2-own", "E2-owni", "cs-own", "cs-owni"): continue
                dt, cubin, log = compile_(element(body) + ssrc, opts)
                cubin_source_hint[0] = ssrc.encode()
                if cubin is None:
                    print(f"r{rnd} {ename:8} {shape:8} {oname:8} FAILED {log[:300]}"); continue
                if True:
                    kt, out = time_kernel(cubin)
                    if ref is None: ref = out
                    diff = float(cp.max(cp.abs(out - ref)))
                    x64 = x.astype(cp.float64)
                    if ename.startswith("E2"): diff = float(cp.max(cp.abs(out - (cp.exp(-x64*x64)*cp.sin(3*x64)+0.25))))
                    if ename.startswith("cs") or ename == "cos+sin": diff = float(cp.max(cp.abs(out - (cp.cos(x64)+cp.sin(x64)))))
                    print(f"r{rnd} {ename:8} {shape:8} {oname:8} compile {dt*1000:7.1f} ms  cubin {len(cubin):7d} B  kernel {kt:7.1f} us  maxdiff {diff:.3g}", flush=True)
                else:
                    print(f"r{rnd} {ename:8} {shape:8} {oname:8} compile {dt*1000:7.1f} ms", flush=True)
print("copy 2^26: %.1f us" % copy_peak())
