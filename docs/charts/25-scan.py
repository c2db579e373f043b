"""Chapter 25: the inclusive scan of 2^26 floats on one H200, data resident: gpuworthy's three CUDA kernels
(`gpuworthy run scan --size 2^26 --backend cuda`) beside torch's and CuPy's `cumsum` and a device-to-device copy of
the same bytes (`scan_peers.py`)."""

import re

import _chart

RUN = "nvidia-h200/scan/run-scan-2e26-cuda.txt"
PEERS = "nvidia-h200/scan/scan-peers.txt"
TIME = r"[0-9.]+ (?:ns|µs|us|ms|s)"

# `  reduce_then_scan     163 µs    63.8 ms    42.8 ms ±3%     215 µs ±0%  ...`: the kernel is the fourth time.
kernels = {}
for line in _chart.read(RUN).splitlines():
    match = re.match(r"^\s+(naive|reduce_then_scan|lookback)\s", line)
    if match:
        kernels[match.group(1)] = re.findall(TIME, line)[3]

# `torch.cumsum                      236.4 us    2270.9 GB/s  err 1.23e-07`
peers = dict(re.findall(rf"^(torch\.cumsum|cupy\.cumsum|copy \(device to device\))\s+({TIME})",
                        _chart.read(PEERS), re.M))

rows = [
    ("CUDA naive (Hillis–Steele)", kernels["naive"], _chart.COLOURS["cuda"]),
    ("CUDA reduce_then_scan", kernels["reduce_then_scan"], _chart.COLOURS["cuda"]),
    ("CUDA lookback", kernels["lookback"], _chart.COLOURS["cuda"]),
    ("torch.cumsum", peers["torch.cumsum"], _chart.COLOURS["torch"]),
    ("cupy.cumsum", peers["cupy.cumsum"], _chart.COLOURS["other"]),
    ("device-to-device copy", peers["copy (device to device)"], "#444444"),
]
micro = [_chart.seconds(time) * 1e6 for _, time, _ in rows]

fig, ax = _chart.plt.subplots()
ax.barh([label for label, _, _ in rows], micro, color=[colour for _, _, colour in rows])
ax.invert_yaxis()
for y, ((_, time, _), v) in enumerate(zip(rows, micro)):
    ax.text(v, y, " " + time.replace(" us", " µs"), va="center", fontsize=9)
ax.set_xscale("log")
ax.set_xlim(min(micro) / 2, max(micro) * 4)
ax.set_xlabel("kernel time, µs (log scale; shorter is better)")
copy = _chart.seconds(peers["copy (device to device)"])
ax.set_title(f"Scan of 2^26 floats on one H200, data resident: reduce-then-scan takes\n"
             f"{_chart.seconds(kernels['reduce_then_scan']) / copy:.1f}x a copy's time, "
             f"the naive Hillis–Steele scan {_chart.seconds(kernels['naive']) / copy:.0f}x")
_chart.save(fig, "25-scan", f"{RUN} and {PEERS}")
