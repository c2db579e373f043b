"""Chapter 21: each expression at 2^26 on one H100 as torch eager's chain of kernels, as gpuworthy's one fused CUDA
kernel, and the copy peak (torch's device-to-device copy), all from the same run of `expr_goals.sh`."""

import re

import _chart

SOURCE = "nvidia-h100/expressions/goals.txt"
text = _chart.read(SOURCE)

# The peers' names for the expressions: `E2  gpuworthy run --expr 'y = exp(-x*x) * sin(3*x)' --size 2^26`.
names = dict(re.findall(r"^\s+(E\d|R\d)\s+gpuworthy run --expr '([^']+)'", text, re.M))

# gpuworthy's kernels at 2^26 on CUDA: the `generated` row under each expression's header, first section only.
first_section = text.split("== CUDA from the host")[0]
fused = {}
for expr, row in re.findall(r"^`([^`]+)` at \d+ on cuda .*\n.*\n\s+generated\s+(.*)$", first_section, re.M):
    fused[expr] = float(row.split()[-4])  # the GB/s column

# torch eager: `torch eager E2 (6 kernels)   1266.4 us     423.9 GB/s`.
eager = {k: (int(n), float(gbs)) for k, n, gbs in
         re.findall(r"^torch eager (\w+) \((\d+) kernels\)\s+[0-9.]+ us\s+([0-9.]+) GB/s", text, re.M)}
peak = float(re.search(r"^device-to-device copy \(copy peak\)\s+[0-9.]+ us\s+([0-9.]+) GB/s", text, re.M).group(1))

SHORT = {"E1": "a*x + b", "E2": "exp(-x*x) * sin(3*x)", "E3": "8-term Horner polynomial", "R1": "sum(x*x) (4n bytes)"}
keys = [k for k in ("E1", "E2", "E3", "R1") if k in eager and k in names]

fig, ax = _chart.plt.subplots()
height = 0.38
for i, key in enumerate(keys):
    kernels, eager_gbs = eager[key]
    fused_gbs = fused[names[key]]
    ax.barh(i - height / 2, eager_gbs, height, color=_chart.COLOURS["torch"],
            label="torch eager (a chain of kernels)" if i == 0 else None)
    ax.barh(i + height / 2, fused_gbs, height, color=_chart.COLOURS["cuda"],
            label="gpuworthy CUDA (one fused kernel)" if i == 0 else None)
    ax.text(eager_gbs, i - height / 2, f" {eager_gbs:.1f} GB/s ({kernels} kernels)", va="center", fontsize=9)
    ax.text(fused_gbs, i + height / 2, f" {fused_gbs:.1f} GB/s", va="center", fontsize=9)
ax.axvline(peak, color="black", linestyle="--", linewidth=1, label=f"copy peak, {peak:.1f} GB/s")
ax.set_yticks(range(len(keys)))
ax.set_yticklabels([SHORT[k] for k in keys])
ax.invert_yaxis()
ax.set_xlim(0, peak * 1.35)
ax.set_xlabel("GB/s (bytes counted as each input read once and each output written once)")
ax.set_title("One fused kernel runs at the copy peak; torch eager's chain\n"
             "falls further below it with every kernel (2^26 float32, one H100)")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3, fontsize=9, frameon=False)
_chart.save(fig, "21-fusion", SOURCE)
