#!/usr/bin/env bash
# The 16-bit expression kernels at 2^26 elements (see the .wgsl files' headers), with the backend's default checks
# and with none. From the repository's root:
#
#   cargo build --release -p gpuworthy-wgpu --example wgsl_lab
#   bash wgpu-backend/examples/lab/half_expr.sh
#
# The figures of one run on an H200 are in docs/results/nvidia-h200/half/tuning/5-finite-rounding-lab.txt.
set -u
D=$(dirname "$0")
L=${WGSL_LAB:-target/release/examples/wgsl_lab}
N=$((1<<26)); B=$((N*2)); M=$((2*B)); F=$((N*4))
for checks in "" none; do
  export GPUWORTHY_WGPU_CHECKS=$checks
  echo "===== GPUWORTHY_WGPU_CHECKS=${checks:-default}"
  $L $D/expr_helpers.wgsl+$D/half_polynomial.wgsl "@copy 0 0 $B $B $M" "p_copy 32768 1 $B $B $M $N" "p_now 32768 1 $B $B $M $N" \
    "p_finite 32768 1 $B $B $M $N" "p_pair 32768 1 $B $B $M $N" "p_extract 32768 1 $B $B $M $N" \
    "p_axpb 32768 1 $B $B $M $N" "p_now 32768 1 $B $B $M $N" "p_pair 32768 1 $B $B $M $N" 2>&1 | grep -v XDG
  $L $D/expr_helpers.wgsl+$D/half_sum.wgsl "s_now 1024 1 $B 65536 $B $N" "s_now 528 1 $B 65536 $B $N" "s_now 792 1 $B 65536 $B $N" \
    "s_now 1056 1 $B 65536 $B $N" "s_now 2112 1 $B 65536 $B $N" "s_now 4224 1 $B 65536 $B $N" \
    "s_now 8448 1 $B 65536 $B $N" "s_finish 1 1 16 65536 4096 1024" "s_finish 1 1 16 65536 4096 4224" 2>&1 | grep -v XDG
  $L $D/expr_helpers.wgsl+$D/half_sum_wide.wgsl "s_wide2 1024 1 $B 65536 $B $N" "s_wide2 2112 1 $B 65536 $B $N" "s_wide2 4224 1 $B 65536 $B $N" \
    "s_wide4 1024 1 $B 65536 $B $N" "s_wide4 2112 1 $B 65536 $B $N" "s_wide4 4224 1 $B 65536 $B $N" 2>&1 | grep -v XDG
  $L $D/expr_helpers.wgsl+$D/sum_expr_f32.wgsl "s_f32 1024 1 $F 65536 $F $N" "s_f32 2112 1 $F 65536 $F $N" "s_f32 4224 1 $F 65536 $F $N" \
    "s_f32 8448 1 $F 65536 $F $N" 2>&1 | grep -v XDG
done
