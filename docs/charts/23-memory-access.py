"""Chapter 23: the transpose of a 4096 x 4096 float32 matrix four ways on one H200, each kernel's GB/s against the
copy of the same matrix, through CUDA and through wgpu (Vulkan), from `09_memory_access`."""

import re

import _chart

SOURCE = "nvidia-h200/memory-access/memory-access.txt"
text = _chart.read(SOURCE)

# `  cuda       transpose_naive        248 µs     484 ns      540.1  ok (23% of copy)`
rows = re.findall(r"^\s+(cuda|wgpu)\s+(\w+)\s+[0-9.]+ (?:ns|µs|ms|s)\s+[0-9.]+ (?:ns|µs|ms|s)\s+([0-9.]+)\s+ok",
                  text, re.M)
rate = {(device, kernel): float(gbs) for device, kernel, gbs in rows}
kernels = ["copy", "transpose_naive", "transpose_tiled", "transpose_padded"]
devices = ["cuda", "wgpu"]

fig, ax = _chart.plt.subplots()
height = 0.38
for d, device in enumerate(devices):
    copy = rate[(device, "copy")]
    for i, kernel in enumerate(kernels):
        gbs = rate[(device, kernel)]
        y = i + (d - 0.5) * height
        ax.barh(y, gbs, height, color=_chart.COLOURS[device], label=device if i == 0 else None)
        share = "" if kernel == "copy" else f" ({100 * gbs / copy:.0f}% of {device}'s copy)"
        ax.text(gbs, y, f" {gbs:.1f} GB/s{share}", va="center", fontsize=9)
ax.set_yticks(range(len(kernels)))
ax.set_yticklabels(kernels)
ax.invert_yaxis()
ax.set_xlim(0, max(rate.values()) * 1.45)
ax.set_xlabel("GB/s (the matrix read once and written once, per second)")
share = {k: round(100 * rate[("cuda", k)] / rate[("cuda", "copy")]) for k in kernels}
ax.set_title(f"A 4096 x 4096 transpose on one H200: uncoalesced stores reach {share['transpose_naive']}% of\n"
             f"CUDA's copy, tiles {share['transpose_tiled']}%, tiles with padded rows {share['transpose_padded']}%")
ax.legend(loc="lower right")
_chart.save(fig, "23-memory-access", SOURCE)
