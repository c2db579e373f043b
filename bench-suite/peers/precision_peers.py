"""Matmul in each precision through PyTorch (cuBLAS), timed with CUDA events, with the error each precision makes.

The peers of `gpuworthy run matmul --size 8192 --backend cuda --precision fp32,tf32,bf16,fp16`, measured in the same
run on the same GPU. For each precision it prints the median time, the TFLOP/s, and the error against an f64 product
of the same f32 inputs, in the two measures gpuworthy's check (`check_matmul`) holds each precision to: the largest
error of an entry, and the root-mean-square error relative to the products' norms (rho).

    python3 bench-suite/peers/precision_peers.py [SIZE]
"""

import sys

import torch

# The same timing as the other GPU peers: CUDA events, warm-up, the median (this folder is on the path).
from gpu_peers import median_ms


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    dev = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    gen = torch.Generator(device=dev).manual_seed(1)
    a = torch.rand(size, size, device=dev, generator=gen) * 2 - 1
    b = torch.rand(size, size, device=dev, generator=gen) * 2 - 1
    exact = a.double() @ b.double()
    # rho's denominator: sum over entries of the squared norms of their K products.
    norms_squared = ((a.double() ** 2).sum(0) * (b.double() ** 2).sum(1)).sum()
    flops = 2 * size**3
    cases = [
        ("fp32 (SGEMM)", torch.float32, False),
        ("tf32", torch.float32, True),
        ("bf16 (f32 sums)", torch.bfloat16, False),
        ("fp16 (f32 sums)", torch.float16, False),
    ]
    print(
        f"matmul {size}^3, cuBLAS through torch; error against the f64 product of the f32 inputs "
        "(torch rounds bf16 and fp16 products' outputs to their type, gpuworthy's keep f32)"
    )
    for name, dtype, tf32 in cases:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        x, y = a.to(dtype), b.to(dtype)
        ms = median_ms(lambda: torch.matmul(x, y), repeat=20)
        result = torch.matmul(x, y).double()
        error = result - exact
        rho = (error.pow(2).sum() / norms_squared).sqrt().item()
        print(
            f"  {name:<16} {ms * 1e3:9.1f} us  {flops / ms / 1e9:8.1f} TFLOP/s  "
            f"max |error| {error.abs().max().item():.3e}  rho {rho:.3e}",
            flush=True,
        )


if __name__ == "__main__":
    main()
