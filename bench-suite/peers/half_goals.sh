#!/usr/bin/env bash
# The half-width goals on a GPU machine, in one run: gpuworthy's expressions at 2^26 on bf16 and f16 arrays, on CUDA
# and wgpu, each beside the same expression on f32 arrays, then the peers on the same 16-bit tensors
# (bench-suite/peers/half_peers.py: the copy peak, torch eager and torch.compile) measured in the same run.
#
#   bash bench-suite/peers/half_goals.sh          # with GPUWORTHY_BIN naming a release build of the tool
set -u
bin=${GPUWORTHY_BIN:-gpuworthy}
n=${N:-2^26}
e1='y = a*x + b'
e2='y = exp(-x*x) * sin(3*x)'
e3='y = ((((((0.0078125*x + 0.015625)*x + 0.03125)*x + 0.0625)*x + 0.125)*x + 0.25)*x + 0.5)*x + 1'
e4='u = x*c - y*s; v = x*s + y*c'
r1='s = sum(x*x)'
echo "== gpuworthy at $n (checked at the conformance lengths by the tests, and here at 2^20)"
for backend in cuda wgpu; do
  for dtype in bf16 f16 f32; do
    "$bin" run --expr "$e1" --set a=2,b=1 --size "$n" --backend $backend --dtype $dtype --no-validate
    "$bin" run --expr "$e2" --size "$n" --backend $backend --dtype $dtype --no-validate
    "$bin" run --expr "$e3" --size "$n" --backend $backend --dtype $dtype --no-validate
    "$bin" run --expr "$e4" --set c=0.955336489,s=0.295520207 --size "$n" --backend $backend --dtype $dtype --no-validate
    "$bin" run --expr "$r1" --size "$n" --backend $backend --dtype $dtype --no-validate
  done
done
echo "== checked, every backend, 2^20"
"$bin" run --expr "$e1" --set a=2,b=1 --size 2^20 --dtype bf16 --quick
"$bin" run --expr "$e2" --size 2^20 --dtype f16 --quick
echo "== peers"
python3 "$(dirname "$0")/half_peers.py" --n "$n"
