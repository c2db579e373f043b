"""Multi-GPU peers for gpuworthy's device groups: PyTorch on one GPU and on every GPU of the host at once.

Each figure is measured on one GPU and on all of them together (a thread per GPU, as gpuworthy's groups run), so that
the ratio of a group to one device can be set beside gpuworthy's in the same run:

    python3 bench-suite/peers/group_peers.py
    gpuworthy run square --size 2^28 --backend 'cuda:*'

Figures: square from pageable host memory and back (the host path: a host tensor in, a host tensor out), the same
through pinned memory, the same pipelined through three streams per GPU (the peer of gpuworthy's pipelined runs), the
host's links carrying both directions at once (the bound of such a run), a resident sum and the resident square (kernels alone), matmul 16384^3 fp32 with A split by
rows, a peer copy between two GPUs each way, and NCCL's all-reduce of one value and of 256 MiB through
`torch.cuda.nccl` (one process, the peer of `gpuworthy collectives`; `--collectives` measures those alone). Times are medians of wall-clock runs with every GPU synchronised, since a
group's time is its slowest member's.
"""

import sys
import threading
import time

import torch


def median_s(fn, repeat=7):
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def on_all(devices, work):
    """Runs work(i, device) on a thread per device, all at once, and synchronises every device."""
    threads = [threading.Thread(target=work, args=(i, d)) for i, d in enumerate(devices)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for d in devices:
        torch.cuda.synchronize(d)


def split(n, parts):
    edges = [n * i // parts for i in range(parts + 1)]
    return [(edges[i], edges[i + 1]) for i in range(parts)]


def line(name, one, many, gpus):
    print(f"{name:<52} one GPU {one * 1e3:9.3f} ms   {gpus} GPUs {many * 1e3:9.3f} ms   {one / many:5.2f}x", flush=True)


def host_square(devices, x, out, pinned):
    """x on the host -> each GPU its range -> square -> back into out on the host."""
    parts = split(x.numel(), len(devices))

    def work(i, d):
        lo, hi = parts[i]
        with torch.cuda.device(d):
            g = x[lo:hi].to(d, non_blocking=pinned)
            torch.square(g, out=g)
            out[lo:hi].copy_(g, non_blocking=pinned)
            torch.cuda.synchronize(d)

    return lambda: on_all(devices, work)


def host_square_pipelined(devices, x, out, chunk=1 << 22, lanes=3):
    """As host_square from pinned memory, each GPU's range cut into chunks that flow through `lanes` streams, so that
    uploads, kernels and downloads overlap (what gpuworthy's pipelined path does): the peer of a pipelined run."""
    parts = split(x.numel(), len(devices))
    buffers = [torch.empty(hi - lo, device=d) for (lo, hi), d in zip(parts, devices)]
    streams = [[torch.cuda.Stream(d) for _ in range(lanes)] for d in devices]

    def work(i, d):
        lo, hi = parts[i]
        with torch.cuda.device(d):
            for k, start in enumerate(range(lo, hi, chunk)):
                end = min(start + chunk, hi)
                with torch.cuda.stream(streams[i][k % lanes]):
                    g = buffers[i][start - lo:end - lo]
                    g.copy_(x[start:end], non_blocking=True)
                    torch.square(g, out=g)
                    out[start:end].copy_(g, non_blocking=True)
            for s in streams[i]:
                s.synchronize()

    return lambda: on_all(devices, work)


def links_both_ways(devices, n):
    """Each GPU uploads its share of n floats from pinned memory while it downloads as many into pinned memory, on two
    streams: what the host's links carry in both directions at once, in decimal GB/s (the bound of a run from the
    host that moves as many bytes each way, such as square)."""
    parts = split(n, len(devices))
    src, dst = torch.rand(n).pin_memory(), torch.empty(n).pin_memory()
    ups = [torch.empty(hi - lo, device=d) for (lo, hi), d in zip(parts, devices)]
    downs = [torch.rand(hi - lo, device=d) for (lo, hi), d in zip(parts, devices)]
    streams = [(torch.cuda.Stream(d), torch.cuda.Stream(d)) for d in devices]

    def work(i, d):
        lo, hi = parts[i]
        up, down = streams[i]
        with torch.cuda.device(d):
            with torch.cuda.stream(up):
                ups[i].copy_(src[lo:hi], non_blocking=True)
            with torch.cuda.stream(down):
                dst[lo:hi].copy_(downs[i], non_blocking=True)
            up.synchronize()
            down.synchronize()

    return 2 * 4 * n / median_s(lambda: on_all(devices, work)) / 1e9


def collectives(devices, repeat=20):
    """NCCL's all-reduce (a sum, in place) over every GPU from one process, and peer copies each way."""
    print(f"NCCL {'.'.join(map(str, torch.cuda.nccl.version()))} through torch.cuda.nccl, one process, "
          f"{len(devices)} GPUs, median of {repeat}:", flush=True)
    for count in (1, 1 << 26):
        tensors = [torch.full((count,), float(i + 1), device=d) for i, d in enumerate(devices)]

        def all_reduce():
            torch.cuda.nccl.all_reduce(tensors)
            for d in devices:
                torch.cuda.synchronize(d)

        t = median_s(all_reduce, repeat)
        bytes_ = 4 * count
        algbw = bytes_ / t / 1e9
        busbw = algbw * 2 * (len(devices) - 1) / len(devices)
        print(f"  all-reduce (sum) of {bytes_} B: {t * 1e6:9.1f} us   {algbw:7.1f} GB/s algorithm bandwidth "
              f"({busbw:.1f} GB/s on each link)", flush=True)
        del tensors
    for a, b in ((0, 1), (1, 0)):
        src = torch.rand(1 << 26, device=devices[a])
        dst = torch.empty(1 << 26, device=devices[b])
        copy = median_s(lambda: (dst.copy_(src), torch.cuda.synchronize(devices[b])), repeat)
        print(f"  peer copy GPU{a}->GPU{b}, 256 MiB: {copy * 1e3:9.3f} ms   {256 * 2**20 / copy / 1e9:7.1f} GB/s",
              flush=True)
        del src, dst


def main():
    gpus = torch.cuda.device_count()
    devices = [torch.device("cuda", i) for i in range(gpus)]
    print(f"{gpus} x {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    if gpus < 2:
        print("one GPU: nothing to compare")
        return
    collectives(devices)
    if "--collectives" in sys.argv[1:]:
        return
    for log2 in (26, 28):
        n = 1 << log2
        x = torch.rand(n)
        out = torch.empty_like(x)
        for pinned in (False, True):
            if pinned:
                x, out = x.pin_memory(), out.pin_memory()
            one = median_s(host_square(devices[:1], x, out, pinned))
            many = median_s(host_square(devices, x, out, pinned))
            line(f"square 2^{log2} host->GPU->host{' (pinned)' if pinned else ''}", one, many, gpus)
        one = median_s(host_square_pipelined(devices[:1], x, out))
        many = median_s(host_square_pipelined(devices, x, out))
        line(f"square 2^{log2} host->GPU->host (pinned, pipelined)", one, many, gpus)
        del x, out
        one, many = links_both_ways(devices[:1], n), links_both_ways(devices, n)
        print(f"{f'links both ways at once, 2^{log2} floats each way':<52} one GPU {one:7.1f} GB/s   {gpus} GPUs "
              f"{many:7.1f} GB/s   {many / one:5.2f}x", flush=True)

    n = 1 << 30
    whole = torch.rand(n, device=devices[0])
    shards = [torch.rand(hi - lo, device=d) for (lo, hi), d in zip(split(n, gpus), devices)]
    totals = [None] * gpus

    def sum_shard(i, d):
        with torch.cuda.device(d):
            totals[i] = torch.sum(shards[i])

    def combine():
        on_all(devices, sum_shard)
        return sum(t.item() for t in totals)

    one = median_s(lambda: (torch.sum(whole).item()))
    many = median_s(combine)
    line("sum 2^30 resident, the partials combined on the host", one, many, gpus)

    def square_shard(i, d):
        with torch.cuda.device(d):
            torch.square(shards[i], out=shards[i])

    one = median_s(lambda: (torch.square(whole, out=whole), torch.cuda.synchronize(devices[0])))
    many = median_s(lambda: on_all(devices, square_shard))
    line("square 2^30 resident", one, many, gpus)
    del whole, shards

    torch.backends.cuda.matmul.allow_tf32 = False
    m = 16384
    a = [torch.rand(m, m, device=d) for d in devices]
    b = [torch.rand(m, m, device=d) for d in devices]
    c = [torch.empty(m, m, device=d) for d in devices]
    rows = split(m, gpus)

    def matmul_rows(i, d):
        lo, hi = rows[i]
        with torch.cuda.device(d):
            torch.mm(a[i][lo:hi], b[i], out=c[i][lo:hi])

    one = median_s(lambda: (torch.mm(a[0], b[0], out=c[0]), torch.cuda.synchronize(devices[0])), repeat=5)
    many = median_s(lambda: on_all(devices, matmul_rows), repeat=5)
    line("matmul 16384^3 fp32 resident, A split by rows", one, many, gpus)
    del a, b, c


if __name__ == "__main__":
    main()
