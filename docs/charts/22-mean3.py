"""Chapter 22: `mean3` beside `square_matrix` on one H200 and its host's 16-thread Xeon, kernel time against the number
of elements, data resident: the CPU function and CUDA's kernel of each (`cargo run --release -p gpuworthy --example
08_raw_kernel`, its two sweeps). The GPU kernels lie on each other where the crossovers fall; the CPU functions do
not, and that is what moves `mean3`'s crossover."""

import re

import _chart

RUN = "nvidia-h200/expressions/example-08_raw_kernel-2.txt"
TIME = r"[0-9.]+ (?:ns|µs|us|ms|s)"

# `    512x512: cpu 39.0 µs | ...` (square_matrix, N x N elements) and `      16384: cpu 52.6 µs | ...` (mean3)
curves = {}
for line in _chart.read(RUN).splitlines():
    match = re.match(r"^\s+(\d+)(?:x(\d+))?:\s+(.*)$", line)
    if not match:
        continue
    elements = int(match.group(1)) * (int(match.group(2)) if match.group(2) else 1)
    kernel_name = "square_matrix" if match.group(2) else "mean3"
    for device, kernel, _host in re.findall(rf"(cpu|cuda) ({TIME}) \| ({TIME})", match.group(3)):
        curves.setdefault((kernel_name, device), []).append((elements, _chart.seconds(kernel) * 1e6))

fig, ax = _chart.plt.subplots()
for (kernel_name, device), points in sorted(curves.items()):
    xs, ys = zip(*points)
    style = "-" if kernel_name == "mean3" else "--"
    marker = "o" if kernel_name == "mean3" else "s"
    label = f"{kernel_name}, {'CPU function' if device == 'cpu' else 'CUDA kernel'}"
    ax.plot(xs, ys, style, marker=marker, color=_chart.COLOURS[device], label=label)
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("elements")
ax.set_ylabel("kernel time, µs (log scale; data resident)")
ax.set_title("mean3 and square_matrix on an H200: the CUDA kernels nearly coincide,\n"
             "the CPU functions do not, and that moves mean3's crossover to 16384")
ax.legend(fontsize=8)
_chart.save(fig, "22-mean3", RUN)
