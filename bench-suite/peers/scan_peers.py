"""Peers of gpuworthy's `scan` (inclusive prefix sum over float32): torch.cumsum and CuPy's cumsum on the GPU, a
device-to-device copy (the floor a single-pass scan can reach: it reads and writes each element once), and NumPy's
cumsum on the host, on n float32 values uniform in [0, 1).

Prints one line per peer: median time over --repeat calls after 3 warm-ups (CUDA events on the GPU, the wall clock on
the host), GB/s with gpuworthy's cost model (8 bytes per element: read once, written once) and `err`, the largest
error of the last element against a float64 running sum, relative to it. On a GPU machine:

    python3 bench-suite/peers/scan_peers.py                 # n = 2^26
    python3 bench-suite/peers/scan_peers.py --n 2^24 --repeat 50
    gpuworthy run scan --size 2^26                          # the twin, on the same machine

A peer whose package is missing prints `skipped: <package> not installed`.
"""

import argparse
import importlib
import statistics
import time


def count(text):
    """A size written as 2^k or a plain number."""
    if "^" in text:
        base, exp = text.split("^")
        return int(base) ** int(exp)
    return int(text)


def report(name, seconds, n, err):
    gbs = 8 * n / seconds / 1e9
    print(f"{name:<28} {seconds * 1e6:>10.1f} us  {gbs:>8.1f} GB/s  err {err:.2e}")


def gpu_peers(n, repeat):
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        print("torch: skipped: torch not installed")
        return
    if not torch.cuda.is_available():
        print("gpu peers: skipped: no CUDA device")
        return
    gen = torch.Generator(device="cuda").manual_seed(7)
    x = torch.rand(n, device="cuda", dtype=torch.float32, generator=gen)
    exact = float(x.double().sum())

    def timed(fn):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(repeat):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            out = fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        return statistics.median(times), out

    t, y = timed(lambda: torch.cumsum(x, 0))
    report("torch.cumsum", t, n, abs(float(y[-1]) - exact) / exact)
    buffer = torch.empty_like(x)
    t, _ = timed(lambda: buffer.copy_(x))
    report("copy (device to device)", t, n, 0.0)
    try:
        cupy = importlib.import_module("cupy")
        cx = cupy.asarray(x)
        t, y = timed(lambda: cupy.cumsum(cx))
        report("cupy.cumsum", t, n, abs(float(y[-1]) - exact) / exact)
    except ImportError:
        print("cupy.cumsum: skipped: cupy not installed")


def host_peers(n, repeat):
    try:
        np = importlib.import_module("numpy")
    except ImportError:
        print("numpy.cumsum: skipped: numpy not installed")
        return
    x = np.random.default_rng(7).random(n, dtype=np.float32)
    exact = float(x.astype(np.float64).sum())
    times = []
    for i in range(repeat + 2):
        start = time.perf_counter()
        y = np.cumsum(x)
        if i >= 2:
            times.append(time.perf_counter() - start)
    report("numpy.cumsum (f32, host)", statistics.median(times), n, abs(float(y[-1]) - exact) / exact)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", default="2^26", help="elements (2^26 or 67108864)")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    n = count(args.n)
    print(f"scan peers, n = {n}")
    gpu_peers(n, args.repeat)
    host_peers(n, max(3, args.repeat // 4))


if __name__ == "__main__":
    main()
