"""Peers of gpuworthy's expression engine (`gpuworthy run --expr`): CuPy, torch eager, torch.compile, numexpr, Numba
and NumPy, on the same five float32 expressions of n elements and the same seeded inputs, uniform in [-1, 1).

Prints gpuworthy's command for each expression (its twin, to run on the same machine), then one line per peer and
expression: median time, GB/s with gpuworthy's cost model (4 bytes x (inputs + outputs) x n; a sum reads 4n) and
`err`, the largest error against a float64 reference over every 4099th element (relative for a sum; `!` past 1e-5,
1e-4 for a sum). GPU peers are timed with CUDA events (median of --repeat after 3 warm-ups), with the first call of
torch.compile and of a CuPy kernel on a cold and a warm disk cache (wall clock, compile included) and the host time
per call at n = 1024; CPU peers with the wall clock (median of --repeat after 2 warm-ups). Events around one call
on an idle GPU include the host's launch time, which shows for torch.compile (tens of us); the lines `in batches of
20` time 20 back-to-back calls between two events, per call, as gpuworthy's `kernel` column is timed, so that a
call's launch hides behind the kernel before it. On a GPU machine:

    python3 bench-suite/peers/expr_peers.py                         # n = 2^26, GPU and CPU peers
    python3 bench-suite/peers/expr_peers.py --only cpu --n 2^24 --repeat 5
    gpuworthy run --expr 'y = a*x + b' --set a=2,b=1 --size 2^26   # a twin, as printed

A peer whose package is missing prints `skipped: <package> not installed`; without a GPU each GPU section prints one
`skipped: <reason>` line and the CPU sections still run. Where numexpr is not installed, carry its wheel in .whl/:

    python3 -m pip install --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
"""

import argparse
import importlib
import math
import os
import subprocess
import sys
import tempfile
import time

C = (1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125)  # E3's c0..c7
COS, SIN = math.cos(0.3), math.sin(0.3)  # E4's c and s
STRIDE = 4099  # the check looks at every STRIDE-th element
CUPY_E2 = "y = expf(-x * x) * sinf(3.0f * x)"


def horner_text(coef):
    """E3's right-hand side, each constant written by `coef`."""
    text = f"{coef(C[7])}*x + {coef(C[6])}"
    for c in reversed(C[:6]):
        text = f"({text})*x + {coef(c)}"
    return text


def horner(x):
    acc = x * C[7] + C[6]
    for c in reversed(C[:6]):
        acc = acc * x + c
    return acc


# name: (gpuworthy's expression, its --set, bytes per element)
EXPRS = {
    "E1": ("y = a*x + b", "a=2,b=1", 8),
    "E2": ("y = exp(-x*x) * sin(3*x)", None, 8),
    "E3": ("y = " + horner_text(lambda c: f"{c:g}"), None, 8),
    "E4": ("u = x*c - y*s; v = x*s + y*c", f"c={COS:.9g},s={SIN:.9g}", 16),
    "R1": ("s = sum(x*x)", None, 4),
}


class Skip(Exception):
    pass


def need(module):
    try:
        return importlib.import_module(module)
    except ImportError as e:
        missing = isinstance(e, ModuleNotFoundError) and e.name == module
        raise Skip(f"{module} not installed" if missing else f"{module} cannot be imported: {e}") from None


def gpu(module):
    """torch or cupy, where it sees a CUDA device."""
    lib = need(module)
    if not lib.cuda.is_available():
        raise Skip(f"no CUDA device visible to {module}")
    return lib


def parse_n(text):
    """A count as gpuworthy writes one: 67108864, 2^26 (or 2**26), 64K, 16M, 1G (binary suffixes)."""
    s = text.strip().replace("_", "").replace("**", "^")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    n = int(s.split("^")[0]) ** int(s.split("^")[1]) if "^" in s else int(s[:-1] if scale > 1 else s) * scale
    if n < 1:
        raise ValueError(text)
    return n


def say(name, text):
    print(f"{name:<46} {text}", flush=True)


def failure(e):
    return f"failed: {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"


def wall_ms(fn):
    """A clock of one call of `fn`: wall-clock milliseconds."""
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def event_ms(lib):
    """A clock of one call of `fn`: milliseconds between CUDA events of torch or of CuPy (`lib`) around it."""
    torch = lib.__name__ == "torch"

    def clock(fn):
        start, end = [lib.cuda.Event(enable_timing=True) if torch else lib.cuda.Event() for _ in range(2)]
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) if torch else lib.cuda.get_elapsed_time(start, end)

    return clock


def batch_event_ms(lib, batch=20):
    """A clock of `batch` back-to-back calls of `fn` between two CUDA events, per call: the host enqueues the next
    call while the GPU runs the last, so a call's launch hides behind the kernel before it, as in gpuworthy's `kernel`
    column, which is timed in batches too."""
    one = event_ms(lib)

    def clock(fn):
        return one(lambda: [fn() for _ in range(batch)]) / batch

    return clock


def median_of(repeat, warmups, clock):
    """Median milliseconds of `repeat` calls, each timed by `clock`, after `warmups` calls."""

    def median_ms(fn):
        for _ in range(warmups):
            fn()
        return sorted(clock(fn) for _ in range(repeat))[repeat // 2]

    return median_ms


def make_inputs(np, n):
    """x and y, and the float64 reference of each expression over every STRIDE-th element (R1 over all of x)."""
    rng = np.random.default_rng(1)
    x, y = rng.random(n, dtype=np.float32) * 2 - 1, rng.random(n, dtype=np.float32) * 2 - 1
    xs, ys = x[::STRIDE].astype(np.float64), y[::STRIDE].astype(np.float64)
    chunks = (x[i : i + (1 << 22)].astype(np.float64) for i in range(0, n, 1 << 22))
    ref = {"copy": [xs], "E1": [2 * xs + 1], "E2": [np.exp(-xs * xs) * np.sin(3 * xs)], "E3": [horner(xs)]}
    ref["E4"] = [xs * COS - ys * SIN, xs * SIN + ys * COS]
    ref["R1"] = sum(float(np.dot(ch, ch)) for ch in chunks)
    return x, y, ref


def error_note(ctx, key, got):
    """`err` of a result (an array, a tuple of arrays or a scalar; on the host or a GPU) against the reference."""
    np, ref = ctx.np, ctx.ref[key]
    if key == "R1":
        err, limit = abs(float(got) - ref) / abs(ref), 1e-4
    else:
        err, limit = 0.0, 1e-5
        for out, want in zip(got if isinstance(got, tuple) else (got,), ref):
            part = out[::STRIDE]
            part = part.get() if hasattr(part, "get") else part.cpu().numpy() if hasattr(part, "cpu") else part
            err = max(err, float(np.max(np.abs(part - want) / np.maximum(1.0, np.abs(want)))))
    return f"err {err:.1e}" + (" !" if err > limit else "")


def measure(ctx, name, key, timer, fn, bytes_moved=None):
    """Times `fn`, checks what it returns against `key`'s reference and prints one line (name, us, GB/s, err)."""
    try:
        ms = timer(fn)
        note = error_note(ctx, key, fn())
        say(name, f"{ms * 1e3:10.1f} us  {(bytes_moved or EXPRS[key][2] * ctx.n) / ms / 1e6:8.1f} GB/s  {note}")
    except Exception as e:
        say(name, failure(e))


def gpu_copy(ctx):
    torch = gpu("torch")
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    x, out = torch.from_numpy(ctx.x).cuda(), torch.empty(ctx.n, device="cuda")
    timer = median_of(ctx.gpu_repeat, 3, event_ms(torch))
    measure(ctx, "device-to-device copy (copy peak)", "copy", timer, lambda: out.copy_(x), 8 * ctx.n)
    batched = median_of(ctx.gpu_repeat, 3, batch_event_ms(torch))
    measure(ctx, "device-to-device copy, in batches of 20", "copy", batched, lambda: out.copy_(x), 8 * ctx.n)


def cupy_kernels(ctx):
    cp, f32 = gpu("cupy"), ctx.np.float32
    print(f"CuPy {cp.__version__}")
    x, y = cp.asarray(ctx.x), cp.asarray(ctx.y)
    out, out2, a, b, c, s = cp.empty_like(x), cp.empty_like(x), f32(2), f32(1), f32(COS), f32(SIN)
    e1 = cp.ElementwiseKernel("float32 x, float32 a, float32 b", "float32 y", "y = a * x + b", "peer_e1")
    e2 = cp.ElementwiseKernel("float32 x", "float32 y", CUPY_E2, "peer_e2")
    e3 = cp.ElementwiseKernel("float32 x", "float32 y", "y = " + horner_text(lambda v: f"{v!r}f"), "peer_e3")
    e4_body = "u = x * c - y * s; v = x * s + y * c"
    e4 = cp.ElementwiseKernel("float32 x, float32 y, float32 c, float32 s", "float32 u, float32 v", e4_body, "peer_e4")
    r1 = cp.ReductionKernel("float32 x", "float32 s", "x * x", "a + b", "s = a", "0", "peer_r1")
    timer = median_of(ctx.gpu_repeat, 3, event_ms(cp))
    measure(ctx, "CuPy ElementwiseKernel E1", "E1", timer, lambda: e1(x, a, b, out))
    measure(ctx, "CuPy ElementwiseKernel E2", "E2", timer, lambda: e2(x, out))
    measure(ctx, "CuPy ElementwiseKernel E3", "E3", timer, lambda: e3(x, out))
    measure(ctx, "CuPy ElementwiseKernel E4", "E4", timer, lambda: e4(x, y, c, s, out, out2))
    measure(ctx, "CuPy ReductionKernel R1", "R1", timer, lambda: r1(x))
    x, out = cp.asarray(ctx.x[:1024]), cp.empty(1024, dtype=cp.float32)
    host_per_call("CuPy ElementwiseKernel E1 (1 kernel)", lambda: e1(x, a, b, out), cp.cuda.Device().synchronize)
    cp.get_default_memory_pool().free_all_blocks()


FIRST_CALL = """
import sys, time, numpy as np, cupy as cp
x = cp.asarray(np.linspace(-1, 1, int(sys.argv[1]), dtype=np.float32)); y = cp.empty_like(x)
cp.cuda.Device().synchronize()
start = time.perf_counter()
cp.ElementwiseKernel("float32 x", "float32 y", sys.argv[2], "peer_first_e2")(x, y)
cp.cuda.Device().synchronize()
print((time.perf_counter() - start) * 1e3)
"""


def cupy_first_call(ctx):
    """E2's first call in a new process with a new CuPy cache directory (cold), then in one that reuses it (warm).

    Both with a new directory for the CUDA compute cache (CUDA_CACHE_PATH), where NVRTC and the driver keep what they
    compiled: with the user's own, a kernel compiled there before is not cold, whatever CuPy's directory holds."""
    gpu("cupy")
    with tempfile.TemporaryDirectory(prefix="expr-peers-cupy-cache-") as cache, \
            tempfile.TemporaryDirectory(prefix="expr-peers-cuda-cache-") as compute_cache:
        for label in ("cold", "warm"):
            cmd = [sys.executable, "-c", FIRST_CALL, str(ctx.n), CUPY_E2]
            env = dict(os.environ, CUPY_CACHE_DIR=cache, CUDA_CACHE_PATH=compute_cache)
            run = subprocess.run(cmd, env=env, capture_output=True, text=True)
            name = f"CuPy ElementwiseKernel E2, {label} disk cache"
            if run.returncode != 0:
                say(name, f"failed: {(run.stderr.strip().splitlines() or ['?'])[-1]}")
            else:
                say(name, f"{float(run.stdout.split()[-1]):10.1f} ms first call (new process, wall clock)")


def host_per_call(name, fn, sync, count=10000):
    """Host microseconds per call of `fn` on resident data: `count` calls back to back, then one synchronisation."""
    try:
        for _ in range(100):
            fn()
        sync()
        start = time.perf_counter()
        for _ in range(count):
            fn()
        sync()
        say(name, f"{(time.perf_counter() - start) / count * 1e6:10.2f} us/call on the host (n = 1024)")
    except Exception as e:
        say(name, failure(e))


def torch_functions(torch):
    """Each expression as torch code, with the number of kernels it launches in eager mode."""
    return {
        "E1": (lambda x, y: x * 2.0 + 1.0, 2),
        "E2": (lambda x, y: torch.exp(-x * x) * torch.sin(3 * x), 6),
        "E3": (lambda x, y: horner(x), 14),
        "E4": (lambda x, y: (x * COS - y * SIN, x * SIN + y * COS), 6),
        "R1": (lambda x, y: torch.sum(x * x), 2),
    }


def torch_eager(ctx):
    torch = gpu("torch")
    x, y = torch.from_numpy(ctx.x).cuda(), torch.from_numpy(ctx.y).cuda()
    timer = median_of(ctx.gpu_repeat, 3, event_ms(torch))
    for key, (fn, kernels) in torch_functions(torch).items():
        measure(ctx, f"torch eager {key} ({kernels} kernels)", key, timer, lambda: fn(x, y))
    measure(ctx, "torch.dot(x, x) R1 (cuBLAS)", "R1", timer, lambda: torch.dot(x, x))
    e1, kernels = torch_functions(torch)["E1"]
    x = x[:1024].clone()
    host_per_call(f"torch eager E1 ({kernels} kernels)", lambda: e1(x, None), torch.cuda.synchronize)


def torch_compiled(ctx):
    torch = gpu("torch")
    x, y = torch.from_numpy(ctx.x).cuda(), torch.from_numpy(ctx.y).cuda()
    timer = median_of(ctx.gpu_repeat, 3, event_ms(torch))
    batched = median_of(ctx.gpu_repeat, 3, batch_event_ms(torch))
    for key, (fn, _) in torch_functions(torch).items():
        try:
            compiled = torch.compile(fn)
            torch.cuda.synchronize()
            start = time.perf_counter()
            compiled(x, y)
            torch.cuda.synchronize()
            say(f"torch.compile {key}", f"{(time.perf_counter() - start) * 1e3:10.1f} ms first call (wall clock)")
        except Exception as e:
            say(f"torch.compile {key}", failure(e))
            continue
        measure(ctx, f"torch.compile {key}", key, timer, lambda: compiled(x, y))
        measure(ctx, f"torch.compile {key}, in batches of 20", key, batched, lambda: compiled(x, y))


def cpu_numexpr(ctx):
    ne, np = need("numexpr"), ctx.np
    ne.set_num_threads(min(os.cpu_count(), getattr(ne, "MAX_THREADS", os.cpu_count())))
    print(f"numexpr {ne.__version__}, {ne.get_num_threads()} threads, os.cpu_count() {os.cpu_count()}")
    # numexpr computes in float64 where a float literal appears: the constants are float32 names instead.
    f32 = np.float32
    names = dict(x=ctx.x, y=ctx.y, a=f32(2), b=f32(1), c=f32(COS), s=f32(SIN))
    names.update((f"c{k}", f32(v)) for k, v in enumerate(C))
    out, out2, timer = np.empty_like(ctx.x), np.empty_like(ctx.x), median_of(ctx.cpu_repeat, 2, wall_ms)
    ev = lambda text, o=None: ne.evaluate(text, local_dict=names, out=o)
    e3 = horner_text(lambda v: f"c{C.index(v)}")
    measure(ctx, "numexpr E1", "E1", timer, lambda: ev("a*x + b", out))
    measure(ctx, "numexpr E2", "E2", timer, lambda: ev("exp(-x*x) * sin(3*x)", out))
    measure(ctx, "numexpr E3", "E3", timer, lambda: ev(e3, out))
    measure(ctx, "numexpr E4 (2 evaluates)", "E4", timer, lambda: (ev("x*c - y*s", out), ev("x*s + y*c", out2)))
    measure(ctx, "numexpr R1 sum(x*x)", "R1", timer, lambda: ev("sum(x*x)"))


def cpu_numba(ctx):
    numba, np = need("numba"), ctx.np
    f32, ufunc = np.float32, numba.vectorize(["float32(float32)"], target="parallel")
    a, b, three = f32(2), f32(1), f32(3)
    c0, c1, c2, c3, c4, c5, c6, c7 = (f32(v) for v in C)
    e1 = ufunc(lambda x: a * x + b)
    e2 = ufunc(lambda x: np.exp(-x * x) * np.sin(three * x))
    e3 = ufunc(lambda x: ((((((c7 * x + c6) * x + c5) * x + c4) * x + c3) * x + c2) * x + c1) * x + c0)
    out, timer = np.empty_like(ctx.x), median_of(ctx.cpu_repeat, 2, wall_ms)
    e1(ctx.x[:4096], out[:4096])  # starts the threads, so that the threading layer is known
    print(f"Numba {numba.__version__}, {numba.config.NUMBA_NUM_THREADS} threads, layer {numba.threading_layer()}")
    measure(ctx, "Numba vectorize(parallel) E1", "E1", timer, lambda: e1(ctx.x, out))
    measure(ctx, "Numba vectorize(parallel) E2", "E2", timer, lambda: e2(ctx.x, out))
    measure(ctx, "Numba vectorize(parallel) E3", "E3", timer, lambda: e3(ctx.x, out))


def cpu_numpy(ctx):
    np, x = ctx.np, ctx.x
    out, a, b, timer = np.empty_like(x), np.float32(2), np.float32(1), median_of(ctx.cpu_repeat, 2, wall_ms)
    print(f"NumPy {np.__version__}")
    measure(ctx, "NumPy E1 (2 passes, out=)", "E1", timer, lambda: np.add(np.multiply(x, a, out=out), b, out=out))
    measure(ctx, "NumPy E2 (6 passes)", "E2", timer, lambda: np.multiply(np.exp(-x * x), np.sin(3 * x), out=out))
    measure(ctx, "NumPy R1 np.dot(x, x)", "R1", timer, lambda: np.dot(x, x))
    measure(ctx, "NumPy R1 (x*x).sum()", "R1", timer, lambda: (x * x).sum())


def section(ctx, title, body):
    print(f"\n== {title}", flush=True)
    try:
        if ctx.np is None:
            raise Skip("numpy not installed (it makes the inputs)")
        if title.startswith("GPU") and ctx.no_gpu:
            raise Skip(ctx.no_gpu)
        body(ctx)
    except Skip as e:
        print(f"skipped: {e}", flush=True)
    except Exception as e:
        print(failure(e), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=parse_n, default=1 << 26, help="elements: 2^26 (default), 2**24, 16M, 1000000")
    parser.add_argument("--only", choices=("cpu", "gpu", "all"), default="all")
    parser.add_argument("--repeat", type=int, help="timed calls per peer (default 30 on the GPU, 10 on the CPU)")
    ctx = parser.parse_args()
    ctx.gpu_repeat, ctx.cpu_repeat = ctx.repeat or 30, ctx.repeat or 10
    size = f"2^{ctx.n.bit_length() - 1}" if ctx.n & (ctx.n - 1) == 0 else str(ctx.n)
    print(f"n = {size} = {ctx.n} float32, inputs uniform in [-1, 1), seed 1; gpuworthy's twins:")
    for key, (text, values, _) in EXPRS.items():
        print(f"  {key}  gpuworthy run --expr '{text}'" + (f" --set {values}" if values else "") + f" --size {size}")
    try:
        ctx.np = need("numpy")
        ctx.x, ctx.y, ctx.ref = make_inputs(ctx.np, ctx.n)
    except Skip:
        ctx.np = None
    reasons = []
    for module in ("torch", "cupy") if ctx.only != "cpu" else ():
        try:
            gpu(module)
        except Skip as e:
            reasons.append(str(e))
    ctx.no_gpu = "; ".join(reasons) if len(reasons) == 2 else None
    if ctx.only in ("gpu", "all"):
        section(ctx, "GPU: device-to-device copy", gpu_copy)
        section(ctx, "GPU: CuPy ElementwiseKernel and ReductionKernel", cupy_kernels)
        section(ctx, "GPU: CuPy first call, compile included", cupy_first_call)
        section(ctx, "GPU: torch eager", torch_eager)
        section(ctx, "GPU: torch.compile", torch_compiled)
    if ctx.only in ("cpu", "all"):
        section(ctx, "CPU: numexpr", cpu_numexpr)
        section(ctx, "CPU: Numba vectorize", cpu_numba)
        section(ctx, "CPU: NumPy", cpu_numpy)


if __name__ == "__main__":
    main()
