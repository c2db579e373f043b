#!/usr/bin/env bash
# Why `y = exp(-x*x) * sin(3*x)` runs below the copy peak on CUDA: `ncu` over gpuworthy's generated kernel and over
# the kernel `torch.compile` generates (Triton) for the same expression at 2^26 float32, with the counters that say
# whether a kernel waits on memory or on instructions (speed of light, warp states, instructions executed).
#
#   bash .gpu/run.sh exec bash bench-suite/peers/expr_profile.sh      # after ../shared/gpu/stage.sh
set -u
bin=${GPUWORTHY_BIN:-/tmp/gpu/bin/gpuworthy}
expr=${EXPR:-'y = exp(-x*x) * sin(3*x)'}
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
