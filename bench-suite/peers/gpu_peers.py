"""GPU peers for gpuworthy's CUDA and wgpu backends: PyTorch (cuBLAS, cuDNN) timed with CUDA events.

Prints the median kernel time and throughput of each peer at the sizes gpuworthy's GPU goals use, with gpuworthy's cost
model (bytes moved, flops), so that both can be measured in the same run on the same GPU and set side by side:

    python3 bench-suite/peers/gpu_peers.py
    gpuworthy run square --size 2^26 --backend cuda
"""

import torch


def median_ms(fn, repeat=30):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def report(name, ms, bytes_moved=None, flops=None):
    parts = [f"{name:<44} {ms * 1e3:10.1f} us"]
    if bytes_moved:
        parts.append(f"{bytes_moved / ms / 1e9:8.3f} TB/s")
    if flops:
        parts.append(f"{flops / ms / 1e9:8.1f} TFLOP/s")
    print("  ".join(parts), flush=True)


def main():
    dev = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    n = 1 << 26
    x = torch.rand(n, device=dev)
    y = torch.rand(n, device=dev)
    out = torch.empty_like(x)
    report("device-to-device copy, 2^26 floats", median_ms(lambda: out.copy_(x)), 8 * n)
    report("torch.square, 2^26", median_ms(lambda: torch.square(x, out=out)), 8 * n)
    report("saxpy (y.add_(x, alpha=2.5)), 2^26", median_ms(lambda: y.add_(x, alpha=2.5)), 12 * n)
    report("torch.sum, 2^26", median_ms(lambda: torch.sum(x)), 4 * n)
    m = torch.rand(8192, 8192, device=dev) * 16 - 8
    report("torch.softmax, 8192 x 8192", median_ms(lambda: torch.softmax(m, dim=1)), 8 * m.numel())
    report("torch.histc, 256 bins, 2^26", median_ms(lambda: torch.histc(x, bins=256, min=0, max=1)), 4 * n)
    img = torch.rand(1, 1, 8192, 8192, device=dev)
    weight = torch.full((1, 1, 3, 3), 1.0 / 9.0, device=dev)
    pad = torch.nn.functional.pad
    conv = lambda: torch.nn.functional.conv2d(pad(img, (1, 1, 1, 1), mode="replicate"), weight)
    report("cuDNN 3x3 conv (1 channel, replicate pad), 8192^2", median_ms(conv), 8 * img.numel())
    only_conv = lambda: torch.nn.functional.conv2d(img, weight, padding=1)
    report("cuDNN 3x3 conv (1 channel, zero pad), 8192^2", median_ms(only_conv), 8 * img.numel())
    a = torch.rand(4096, 4096, device=dev) * 2 - 1
    b = torch.rand(4096, 4096, device=dev) * 2 - 1
    torch.backends.cuda.matmul.allow_tf32 = False
    report("cuBLAS SGEMM fp32, 4096", median_ms(lambda: a @ b), None, 2 * 4096**3)
    torch.backends.cuda.matmul.allow_tf32 = True
    report("cuBLAS SGEMM tf32, 4096", median_ms(lambda: a @ b), None, 2 * 4096**3)
    host = torch.rand(n)
    pinned = torch.rand(n).pin_memory()
    gpu = torch.empty(n, device=dev)
    report("host-to-device pageable, 256 MiB", median_ms(lambda: gpu.copy_(host), 10), 4 * n)
    report("host-to-device pinned, 256 MiB", median_ms(lambda: gpu.copy_(pinned, non_blocking=True), 10), 4 * n)
    report("device-to-host pageable, 256 MiB", median_ms(lambda: host.copy_(gpu), 10), 4 * n)
    report("device-to-host pinned, 256 MiB", median_ms(lambda: pinned.copy_(gpu, non_blocking=True), 10), 4 * n)
    # The whole trip a user writes for data that starts and ends in an ordinary (pageable) host tensor.
    report("torch.square(x.to(dev)).cpu(), pageable, 2^26", median_ms(lambda: torch.square(host.to(dev)).cpu(), 10), 8 * n)


if __name__ == "__main__":
    main()
