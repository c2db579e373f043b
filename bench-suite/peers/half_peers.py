"""Peers of gpuworthy's expressions on 16-bit arrays (`gpuworthy run --expr ... --dtype bf16|f16`): the device copy
of the same tensors (the copy peak in bytes), torch eager and torch.compile, on the five expressions of
expr_peers.py, their arrays bfloat16 or float16 and computed in float32 as gpuworthy computes them (each input
widened, the result rounded once to the storage type; a sum's value is float32).

Two copies give the copy peak in bytes: the 16-bit tensor's own copy, and a float32 copy of the same bytes. One line
per dtype, peer and expression: median time over --repeat calls after 3 warm-ups, CUDA events around each
call, GB/s with gpuworthy's cost model (2 bytes x (inputs + outputs) x n; a sum reads 2n and writes 4 bytes) and
`err`, the largest error of every 4099th element against a float64 reference of the same 16-bit inputs, in units of
the storage type's rounding (`!` past 1 unit; relative, past 1e-4, for a sum). On a GPU machine:

    python3 bench-suite/peers/half_peers.py                  # n = 2^26, bf16 and f16
    python3 bench-suite/peers/half_peers.py --dtype bf16 --n 2^24
"""

import argparse
import sys

from expr_peers import COS, SIN, STRIDE, Skip, event_ms, failure, gpu, horner, median_of, parse_n, say

# name: (expression as torch computes it in float32 on widened inputs, inputs, outputs)
EXPRS = {
    "E1": (lambda x, y: 2 * x + 1, 1, 1),
    "E2": (lambda x, y: (-x * x).exp() * (3 * x).sin(), 1, 1),
    "E3": (lambda x, y: horner(x), 1, 1),
    "E4": (lambda x, y: (x * COS - y * SIN, x * SIN + y * COS), 2, 2),
    "R1": (lambda x, y: (x * x).sum(), 1, 0),
}


def bytes_moved(key, n, width):
    _, inputs, outputs = EXPRS[key]
    return width * inputs * n + (width * outputs * n if outputs else 4)


def run(args):
    torch = gpu("torch")
    np = __import__("numpy")
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    n = args.n
    rng = np.random.default_rng(1)
    x32, y32 = rng.random(n, dtype=np.float32) * 2 - 1, rng.random(n, dtype=np.float32) * 2 - 1
    timer = median_of(args.repeat, 3, event_ms(torch))
    for name in args.dtype:
        dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[name]
        unit = 2.0**-8 if name == "bf16" else 2.0**-11
        x, y = torch.from_numpy(x32).cuda().to(dtype), torch.from_numpy(y32).cuda().to(dtype)
        xs, ys = x[::STRIDE].double().cpu().numpy(), y[::STRIDE].double().cpu().numpy()
        reference = {
            "E1": [2 * xs + 1],
            "E2": [np.exp(-xs * xs) * np.sin(3 * xs)],
            "E3": [horner(xs)],
            "E4": [xs * COS - ys * SIN, xs * SIN + ys * COS],
            "R1": float((x.double() * x.double()).sum()),
        }
        out = torch.empty_like(x)
        # The copy peak in bytes: the tensor's own copy, and a float32 copy of the same bytes (torch copies 16-bit
        # tensors with narrower loads, which is not what the memory can do).
        wide, wide_out = x.view(torch.float32), torch.empty(n // 2, dtype=torch.float32, device="cuda")
        for label, src, dst in (("copy", x, out), ("copy as float32", wide, wide_out)):
            try:
                ms = timer(lambda: dst.copy_(src))
                say(f"{name}: device-to-device {label}", f"{ms * 1e3:10.1f} us  {4 * n / ms / 1e6:8.1f} GB/s")
            except Exception as e:
                say(f"{name}: device-to-device {label}", failure(e))

        def widened(f):
            def g(x, y):
                r = f(x.float(), y.float())
                return tuple(v.to(dtype) for v in r) if isinstance(r, tuple) else r if r.dim() == 0 else r.to(dtype)

            return g

        for peer in ("torch eager", "torch.compile"):
            for key, (f, _, _) in EXPRS.items():
                label = f"{name}: {peer} {key}"
                try:
                    fn = widened(f)
                    if peer == "torch.compile":
                        # Every expression of each type is a new function for dynamo; past its recompilation limit
                        # (8) it stops compiling and runs eager, which is what the tenth did on an H200.
                        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
                        fn = torch.compile(fn)
                    ms = timer(lambda: fn(x, y))
                    got = fn(x, y)
                    if key == "R1":
                        err = abs(float(got) - reference[key]) / abs(reference[key])
                        note = f"err {err:.1e}" + (" !" if err > 1e-4 else "")
                    else:
                        err = 0.0
                        for out_, want in zip(got if isinstance(got, tuple) else (got,), reference[key]):
                            part = out_[::STRIDE].double().cpu().numpy()
                            err = max(err, float(np.max(np.abs(part - want) / np.maximum(2.0**-14, np.abs(want)))))
                        note = f"err {err / unit:.2f} units" + (" !" if err > unit else "")
                    gbs = bytes_moved(key, n, 2) / ms / 1e6
                    say(label, f"{ms * 1e3:10.1f} us  {gbs:8.1f} GB/s  {note}")
                except Skip:
                    raise
                except Exception as e:
                    say(label, failure(e))
        del x, y, out, wide, wide_out
        torch.cuda.empty_cache()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=parse_n, default=1 << 26, help="elements per array (2^26, 64M, ...)")
    parser.add_argument("--dtype", nargs="+", default=["bf16", "f16"], choices=["bf16", "f16"])
    parser.add_argument("--repeat", type=int, default=30, help="timed calls per measurement")
    args = parser.parse_args()
    try:
        run(args)
    except Skip as e:
        print(f"skipped: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
