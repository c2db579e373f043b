#!/usr/bin/env bash
# The precision ladder on a GPU machine, in one run: matmul at 8192^3 in every precision, each of gpuworthy's
# tensor-core rungs beside cuBLAS in the same precision (checked against the f64 reference at the bound of its
# precision), the fp32 rungs beside SGEMM, then PyTorch's matmul in each precision (bench-suite/peers/
# precision_peers.py) with the error each makes, WGSL's f32 rung beside its cooperative-matrix fp16 rung, and a sweep that shows the crossover move with precision.
#
#   bash bench-suite/peers/precision_goals.sh      # on a GPU machine, after cargo build --release -p bench-suite
#
# NO_SWEEP=1 leaves the sweep out; SWEEP_ARGS adds its arguments (--json FILE --plot DIR).
set -u
bin=${GPUWORTHY_BIN:-target/release/gpuworthy}
size=${SIZE:-8192}
echo "== gpuworthy: matmul ${size}^3 on cuda, each precision's rungs beside cuBLAS in it"
"$bin" run matmul --size "$size" --backend cuda --precision tf32
"$bin" run matmul --size "$size" --backend cuda --precision bf16
"$bin" run matmul --size "$size" --backend cuda --precision fp16
"$bin" run matmul --size "$size" --backend cuda --variant splitk
"$bin" run matmul --size "$size" --backend cuda --variant cublas
echo "== wgpu: WGSL's f32 rung beside its cooperative-matrix fp16 rung (where the adapter has one)"
"$bin" devices | grep -i "cooperative_matrix\|shader_f16" || true
"$bin" run matmul --size "$size" --backend wgpu --variant wide
"$bin" run matmul --size "$size" --backend wgpu --variant coop-f16
echo "== PyTorch in the same run"
python3 bench-suite/peers/precision_peers.py "$size"
if [ -z "${NO_SWEEP:-}" ]; then
  echo "== the crossover in each precision"
  "$bin" sweep matmul --backends cpu,cuda --precision fp32,tf32,bf16,fp16 --budget 2 ${SWEEP_ARGS:-}
fi
