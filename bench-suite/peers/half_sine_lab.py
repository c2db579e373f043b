"""What the storage-sized sine and the far path cost CUDA's kernel of `y = exp(-x*x) * sin(3*x)` on bf16 arrays.

half_kernel_shapes_lab.py took the kernel's shape apart (registers, the partial group, bytes in flight) and found no
shape faster than about 0.9x a copy of the same bytes. This lab takes apart what every shape kept: the element's own
code. Each entry is the shapes lab's `no partial-group code` kernel (2^26 is a multiple of eight) with one part
changed:

- `small sine linear`: below 2^-9 in magnitude, `sin r` is `r` (the cubic term is under 2^-20 of it, far below a
  16-bit rounding), and `sin.approx` from there up (its 2^-21 absolute is under 2^-12 of the result): one compare and
  one select an element where the cubic below 1/16 took three more operations;
- `whole turns, small sine linear`: as `small sine linear`, with the angle reduced by whole turns, as the WGSL kernels reduce it, so that no sign is fixed
  afterwards (two integer operations an element fewer); the result keeps only `sin.approx`'s absolute error near the
  zeros at odd multiples of pi, which a relative bound would notice (the check's sine bound is absolute there);
  (this lab rounds `k` by `rintf` and takes `r` below 2^-9; the generator adds 1.5 x 2^23, which keeps a zero's
  sign, and takes `r` below 1/64, where the cubic term is still under 2^-14 of it: the same instructions, timed with
  their errors by half_functions_lab.py's `whole turns, far flag`);
- `no far path`: the flag and the math library's recomputation removed, which no correct kernel may do: the floor the
  far path's registers and call stand on;
- `far path inlined`: the recomputation as one inlined copy of the math library's element in a loop over the eight,
  in place of a call that is not inlined (whose stack is the kernel's 32 bytes of local memory).

Each is timed as the shapes lab times (events around 20 back-to-back calls, the median of 30 batches, per call; and
alone, events around one call after the stream drained, the median of 200) beside a copy kernel of the same bytes
and torch's copy of the tensor, and checked: `err` is the largest error of every element against a float64 reference
of the same bf16 inputs, in units of the bf16 rounding (relative, with 2^-14 as the smallest magnitude, as
half_peers.py measures torch), and `differs` counts the elements that are not bit for bit the first entry's.

    python3 bench-suite/peers/half_sine_lab.py
"""

import cupy
import torch

from half_kernel_shapes_lab import (
    BLOCK,
    GRID_STRIDE,
    PRELUDE,
    SIGNATURE,
    SIN16_SMALL,
    covering,
    group,
    measure,
    rate_line,
    time_the_copies,
)

SIN16_LINEAR = "    const float v = fabsf(r) < 0.001953125f ? r : __sinf(r);\n"

# The generator's sine, reduced by half turns with the sign from the turns' parity.
SIN16_HALF_TURNS = (
    "    const float t = fmaf(x, 0.318309886f, 12582912.0f);\n"
    "    const float k = t - 12582912.0f;\n"
    "    const float r = fmaf(-k, 1.50995799e-7f, fmaf(-k, 9.67502594e-4f, fmaf(-k, 3.140625f, x)));\n"
    + SIN16_SMALL
    + "    return __int_as_float(__float_as_int(v) ^ (__float_as_int(t) << 31));\n"
)
assert SIN16_HALF_TURNS in PRELUDE
# By whole turns: 2 pi in three parts (the WGSL kernels' `reduce_angle4_within_reach`), the first exact times any
# multiple up to the reach; no sign to fix.
SIN16_WHOLE_TURNS = (
    "    const float k = rintf(x * 0.159154943f);\n"
    "    const float r = fmaf(-k, 3.019916051e-7f, fmaf(-k, 1.935005188e-3f, fmaf(-k, 6.28125f, x)));\n"
    + SIN16_LINEAR
    + "    return v;\n"
)

def kernel(sine=None, far="call"):
    prelude = PRELUDE if sine is None else PRELUDE.replace(SIN16_HALF_TURNS, sine)
    body = (
        "    const long long stride = (long long)gridDim.x * blockDim.x;\n"
        "    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    for (long long q = first; q < n / 8; q += stride) {\n"
        "        const uint4 g = reinterpret_cast<const uint4*>(p_in0)[q];\n" + group("g", "q", "        ", far) + "    }\n"
    )
    return prelude + 'extern "C" __global__ ' + SIGNATURE.format(bounds="") + " {\n" + body + "}\n"


SMALL_LINEAR = SIN16_HALF_TURNS.replace(SIN16_SMALL, SIN16_LINEAR)
assert kernel() == PRELUDE + 'extern "C" __global__ ' + SIGNATURE.format(bounds="") + " {\n" + GRID_STRIDE + "}\n"

SHAPES = {
    "as generated (no partial-group code)": kernel(),
    "small sine linear": kernel(SMALL_LINEAR),
    "whole turns, small sine linear": kernel(SIN16_WHOLE_TURNS),
    "no far path": kernel(far="none"),
    "small sine linear, no far path": kernel(SMALL_LINEAR, far="none"),
    "whole turns, linear, no far path": kernel(SIN16_WHOLE_TURNS, far="none"),
    "far path inlined": kernel(far="inline"),
    "small sine linear, far path inlined": kernel(SMALL_LINEAR, far="inline"),
    "whole turns, linear, far inlined": kernel(SIN16_WHOLE_TURNS, far="inline"),
}

def main():
    n = 1 << 26
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"device: {torch.cuda.get_device_name(0)} ({sms} SMs), CuPy {cupy.__version__}, torch {torch.__version__}")
    print(f"y = exp(-x*x) * sin(3*x) on bf16 arrays, n = 2^26, x uniform in [-1, 1), {BLOCK} threads a block")
    generator = torch.Generator(device="cuda").manual_seed(1)
    x = (torch.rand(n, device="cuda", generator=generator) * 2 - 1).to(torch.bfloat16)
    wide = x.double()
    want = (-wide * wide).exp() * (3 * wide).sin()
    x_bits = cupy.asarray(x.view(torch.int16)).view(cupy.uint16)
    bytes_moved = 2 * 2 * n
    groups = n // 8
    out = cupy.empty(n, dtype=cupy.uint16)
    time_the_copies(x, x_bits, out)
    reference = None
    for name, source in SHAPES.items():
        result, _, function, times, alone, sass = measure(source, covering, x_bits, out, n, groups, sms)
        if reference is None:
            reference = result
        differs = int(cupy.count_nonzero(result != reference))
        got = torch.as_tensor(result.view(cupy.int16), device="cuda").view(torch.bfloat16).double()
        err = float(((got - want).abs() / want.abs().clamp(min=2.0**-14)).max()) / 2.0**-8
        print(f"{rate_line(name, bytes_moved, times, alone)}   {function.num_regs} registers,"
              f" {function.local_size_bytes} B local{sass}, err {err:.2f} units, differs {differs}")

if __name__ == "__main__":
    main()
