"""Chapter 19: how close auto came to the fastest device on the H200 machine, from `gpuworthy calibrate --evaluate`:
at each point of the evaluation, auto's measured time over the fastest measured (its regret), sorted, against the
10% the cost model aims under."""

import json
import re

import _chart

EVALUATION = "auto/nvidia-h200-35-evaluate.json"
SUMMARY = "auto/nvidia-h200-35.txt"

points = json.loads(_chart.read(EVALUATION))["points"]
# `180 points, 180 with auto's choice measured: within 10% of the fastest at 177 (98%), median regret 1.00x, ...`
percent = int(re.search(r"within ([0-9]+)% of the fastest at", _chart.read(SUMMARY)).group(1))  # type: ignore[union-attr]
aim = 1 + percent / 100

points.sort(key=lambda p: p["regret"])
regrets = [p["regret"] for p in points]
within = sum(r <= aim for r in regrets)
fastest = sum(p["auto_s"] == p["fastest_s"] for p in points)

fig, ax = _chart.plt.subplots()
ranks = range(1, len(points) + 1)
for device in sorted({p["auto_device"] for p in points}):
    mine = [(i, p["regret"]) for i, p in zip(ranks, points) if p["auto_device"] == device]
    ax.scatter([i for i, _ in mine], [r for _, r in mine], s=14, color=_chart.COLOURS.get(device, _chart.COLOURS["other"]),
               label=f"auto chose {device}", zorder=3)
ax.axhline(aim, color="#555555", linestyle="--", linewidth=1)
ax.text(2, aim, f" {aim:.2f}: within {percent}% of the fastest", va="bottom", fontsize=9, color="#555555")
for i, p in zip(ranks, points):
    if p["regret"] > aim:
        place = "resident" if p["placement"] == "Resident" else "from the host"
        ax.annotate(f"{p['workload']} {p['size']} {place}: {p['auto_device']} {p['auto_variant']}, "
                    f"fastest {p['fastest']} ({p['regret']:.2f}x)",
                    (i, p["regret"]), xytext=(-8, 0), textcoords="offset points", ha="right", va="center", fontsize=8)
ax.set_xlim(0, len(points) + 3)
ax.set_ylim(min(regrets) - 0.02, max(regrets) + 0.03)
ax.set_xlabel("evaluation point, sorted by regret")
ax.set_ylabel("regret (auto's time / the fastest measured)")
ax.set_title(f"auto on the H200 machine: {within} of {len(points)} points within {percent}% of the fastest device,\n"
             f"{fastest} on the fastest itself, the worst {max(regrets):.2f}x")
ax.legend(loc="upper left", bbox_to_anchor=(0, 0.85))
_chart.save(fig, "19-library", f"{EVALUATION} and docs/results/{SUMMARY}")
