"""Chapter 22: the seeds' `square_matrix_kernel` as a raw kernel on one H200 and its host's 16-thread Xeon, time per run
against size, kernel alone (data resident) and from the host (`cargo run --release -p gpuworthy --example
08_raw_kernel`, its sweep lines)."""

import re

import _chart

RUN = "nvidia-h200/expressions/example-08_raw_kernel-2.txt"
TIME = r"[0-9.]+ (?:ns|µs|us|ms|s)"

# `    512x512: cpu 39.0 µs | 39.0 µs   cuda 4.88 µs | 415 µs   wgpu 4.97 µs | 1.04 ms` (mean3's lines, sizes without
# an `x`, are not matched)
sides, curves = [], {}
for line in _chart.read(RUN).splitlines():
    match = re.match(r"^\s+(\d+)x\d+:\s+(.*)$", line)
    if not match:
        continue
    sides.append(int(match.group(1)))
    for device, kernel, host in re.findall(rf"(cpu|cuda|wgpu) ({TIME}) \| ({TIME})", match.group(2)):
        curves.setdefault((device, "kernel"), []).append(_chart.seconds(kernel) * 1e6)
        curves.setdefault((device, "host"), []).append(_chart.seconds(host) * 1e6)

fig, ax = _chart.plt.subplots()
for (device, where), micro in sorted(curves.items()):
    if device == "cpu" and where == "host":
        continue  # the CPU's data is already on the host: the same curve as its kernel
    label = f"{device}, kernel (data resident)" if where == "kernel" else f"{device}, from the host"
    style = "-" if where == "kernel" else "--"
    ax.plot(sides, micro, style, marker="o", color=_chart.COLOURS.get(device, "#444444"), label=label)
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xticks(sides)
ax.set_xticklabels([f"{s}x{s}" for s in sides])
ax.set_xlabel("matrix size")
ax.set_ylabel("time per run, µs (log scale; lower is better)")
ax.set_title("square_matrix as a raw kernel on an H200: resident, CUDA wins from 512x512;\n"
             "from the host, the CPU wins at every size measured")
ax.legend(fontsize=8)
_chart.save(fig, "22-raw-kernels", RUN)
