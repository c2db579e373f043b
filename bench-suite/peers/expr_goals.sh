#!/usr/bin/env bash
# The expression goals on a GPU machine, in one run: gpuworthy's expressions at 2^26 on every backend beside the
# built-in saxpy (CPU, simd) and sum (CUDA's warp, wgpu's variants), the first call with a cold and a warm kernel cache, the host's cost
# of a call at n = 1024, then the peers (bench-suite/peers/expr_peers.py) measured in the same run.
#
#   bash .gpu/run.sh exec bash bench-suite/peers/expr_goals.sh      # after ../shared/gpu/stage.sh
#
# numexpr is not installed on the GPU machines: its wheel travels in .whl/ (see expr_peers.py).
set -u
bin=${GPUWORTHY_BIN:-/tmp/gpu/bin/gpuworthy}
n=${N:-2^26}
if ls .whl/numexpr-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/numexpr-*.whl && export PYTHONPATH=/tmp/site
fi
e1='y = a*x + b'
e2='y = exp(-x*x) * sin(3*x)'
e3='y = ((((((0.0078125*x + 0.015625)*x + 0.03125)*x + 0.0625)*x + 0.125)*x + 0.25)*x + 0.5)*x + 1'
e4='u = x*c - y*s; v = x*s + y*c'
r1='s = sum(x*x)'
echo "== gpuworthy at $n (checked at the conformance lengths by the tests; not here, where the f64 reference would take longer than the runs)"
for backend in cuda wgpu; do
  "$bin" run --expr "$e1" --set a=2,b=1 --size "$n" --backend $backend --no-validate
  "$bin" run --expr "$e2" --size "$n" --backend $backend --no-validate
  "$bin" run --expr "$e3" --size "$n" --backend $backend --no-validate
  "$bin" run --expr "$e4" --set c=0.955336489,s=0.295520207 --size "$n" --backend $backend --no-validate
  "$bin" run --expr "$r1" --size "$n" --backend $backend --no-validate
done
"$bin" run sum --size "$n" --backend cuda --variant warp --no-validate
"$bin" run sum --size "$n" --backend wgpu --no-validate
echo "== CUDA from the host: end to end, phase by phase and pipelined"
"$bin" run --expr "$e1" --set a=2,b=1 --size "$n" --backend cuda --pipelined --no-validate
"$bin" run --expr "$e4" --set c=0.955336489,s=0.295520207 --size "$n" --backend cuda --pipelined --no-validate
"$bin" run saxpy --size "$n" --backend cuda --variant vec4 --pipelined --no-validate
"$bin" run --expr "$e1" --set a=2,b=1 --size "$n" --backend cpu --variant blocks --no-validate
"$bin" run --expr "$e2" --size "$n" --backend cpu --variant blocks --no-validate
"$bin" run --expr "$r1" --size "$n" --backend cpu --variant blocks --no-validate
"$bin" run saxpy --size "$n" --backend cpu --variant simd --no-validate
echo "== first call: compile with a cold kernel cache, then a new process that finds it on disk"
# A new CUDA compute cache too (CUDA_CACHE_PATH): NVRTC and the driver keep there what they compiled, and a kernel
# compiled before on this machine would not be cold.
export GPUWORTHY_KERNEL_CACHE=/tmp/gpuworthy-kernel-cache CUDA_CACHE_PATH=/tmp/gpuworthy-compute-cache
rm -rf "$GPUWORTHY_KERNEL_CACHE" "$CUDA_CACHE_PATH"
"$bin" run --expr 'y = exp(-x*x) * sin(3*x) + 0.25' --size 1024 --backend cuda --quick
"$bin" run --expr 'y = exp(-x*x) * sin(3*x) + 0.25' --size 1024 --backend cuda --quick
unset GPUWORTHY_KERNEL_CACHE CUDA_CACHE_PATH
echo "== host time per call on resident data, n = 1024"
"$bin" run --expr "$e1" --set a=2,b=1 --size 1024 --backend cuda --no-sync
"$bin" run saxpy --size 1024 --backend cuda --variant vec4 --no-sync
echo "== peers"
python3 bench-suite/peers/expr_peers.py
