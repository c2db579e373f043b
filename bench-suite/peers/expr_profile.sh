#!/usr/bin/env bash
# Why `y = exp(-x*x) * sin(3*x)` runs below the copy peak on CUDA: `ncu` over gpuworthy's generated kernel and over
# the kernel `torch.compile` generates (Triton) for the same expression at 2^26 float32, with the counters that say
# whether a kernel waits on memory or on instructions (speed of light, warp states, instructions executed).
#
#   bash .gpu/run.sh exec bash bench-suite/peers/expr_profile.sh      # after ../shared/gpu/stage.sh
#   ... bash bench-suite/peers/expr_profile.sh --kernel-times
#
# `--kernel-times` instead times the three kernels on one device timer with the clocks as they run (`ncu
# --clock-control none`, duration and DRAM throughput only, five launches each): gpuworthy's, Triton's, and the
# device copy of the same bytes (`torch`'s `copy_`). CUDA events around one call include its launch, which flatters
# whichever side launches more slowly; `ncu`'s duration is the kernel's alone. Another expression: EXPR for
# gpuworthy and TORCH_F for torch (`EXPR='y = 2*x + 1' TORCH_F='lambda x: 2 * x + 1'`).
set -u
bin=${GPUWORTHY_BIN:-/tmp/gpu/bin/gpuworthy}
expr=${EXPR:-'y = exp(-x*x) * sin(3*x)'}
if [ "${1:-}" = --kernel-times ]; then
  metrics=(--clock-control none --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum)
  echo "== gpuworthy: $expr, 2^26 float32, five launches after the first 30"
  ncu "${metrics[@]}" --kernel-name regex:expr_ --launch-skip 30 --launch-count 5 \
    "$bin" run --expr "$expr" --size 2^26 --backend cuda --no-validate 2>&1 | grep -E "^  [a-z_]+ \(|gpu__time|dram__|inst_executed"
  cat >/tmp/expr_torch_times.py <<'PY'
import os
import torch
x = torch.rand(1 << 26, device="cuda") * 2 - 1
y = torch.empty_like(x)
f = torch.compile(eval(os.environ.get("TORCH_F", "lambda x: torch.exp(-x * x) * torch.sin(3 * x)")))
for _ in range(20):
    f(x)
    y.copy_(x)
torch.cuda.synchronize()
PY
  echo "== torch.compile (Triton): the same expression, five launches after the first 10"
  ncu "${metrics[@]}" --kernel-name regex:triton --launch-skip 10 --launch-count 5 python3 /tmp/expr_torch_times.py 2>&1 \
    | grep -E "^  [a-z_]+ \(|gpu__time|dram__|inst_executed"
  echo "== the device copy of the same bytes (y.copy_(x)), five launches after the first 10"
  ncu "${metrics[@]}" --kernel-name regex:'elementwise|copy' --launch-skip 10 --launch-count 5 python3 /tmp/expr_torch_times.py \
    2>&1 | grep -E "^  [a-zA-Z_:<>, ]+\(|gpu__time|dram__|inst_executed" | cut -c1-160
  exit 0
fi
sections=(--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats
  --section InstructionStats --section ComputeWorkloadAnalysis)
echo "== gpuworthy: $expr, 2^26 float32 (the kernel after the first calls' quick-to-compile one)"
ncu "${sections[@]}" --kernel-name expr_map --launch-skip 30 --launch-count 1 \
  "$bin" run --expr "$expr" --size 2^26 --backend cuda --no-validate 2>&1 | grep -v '^==PROF==' | tail -120
echo "== torch.compile: the same expression, 2^26 float32"
cat >/tmp/expr_torch.py <<'PY'
import torch
x = torch.rand(1 << 26, device="cuda") * 2 - 1
f = torch.compile(lambda x: torch.exp(-x * x) * torch.sin(3 * x))
for _ in range(20):
    y = f(x)
torch.cuda.synchronize()
PY
ncu "${sections[@]}" --kernel-name regex:triton --launch-skip 10 --launch-count 1 python3 /tmp/expr_torch.py 2>&1 \
  | grep -v '^==PROF==' | tail -120
echo "== the Triton kernel torch.compile wrote"
python3 - <<'PY'
import glob, os
for path in sorted(glob.glob("/tmp/torchinductor_*/**/*.py", recursive=True)):
    text = open(path).read()
    if "tl_math" in text or "libdevice" in text:
        print("== Triton source:", os.path.basename(path))
        print(text[-3000:])
        break
PY
