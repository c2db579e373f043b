#!/usr/bin/env bash
# s = sum(x*x) on 2^26 bf16 elements in one dispatch (half_sum_one_pass.wgsl) at several grids, with the finish by the
# last workgroup (P1 = 1) and without it (P1 = 0, the first pass alone), beside the two-dispatch form's first pass and
# finish (half_sum.wgsl) and a copy of the same bytes. From the repository's root:
#
#   cargo build --release -p gpuworthy-wgpu --example wgsl_lab
#   bash wgpu-backend/examples/lab/half_sum_one_pass.sh
set -u
D=$(dirname "$0")
L=${WGSL_LAB:-target/release/examples/wgsl_lab}
N=$((1<<26)); B=$((N*2))
$L $D/expr_helpers.wgsl+$D/half_sum_one_pass.wgsl "@copy 0 0 $B $B $((2*B))" \
  "s_one 1024 1 $B 65536 $B $N 1" "s_one 1024 1 $B 65536 $B $N 0" \
  "s_one 528 1 $B 65536 $B $N 1" "s_one 528 1 $B 65536 $B $N 0" \
  "s_one 792 1 $B 65536 $B $N 1" "s_one 1056 1 $B 65536 $B $N 1" \
  "s_one 2112 1 $B 65536 $B $N 1" "s_one 2112 1 $B 65536 $B $N 0" \
  "s_one 1024 1 $B 65536 $B $N 1" "s_one 528 1 $B 65536 $B $N 1" \
  "s_one 1 1 16 65536 4096 1024 1" 2>&1 | grep -v XDG
$L $D/expr_helpers.wgsl+$D/half_sum.wgsl "s_now 1024 1 $B 65536 $B $N" "s_now 528 1 $B 65536 $B $N" \
  "s_finish 1 1 16 65536 4096 1024" "s_finish 1 1 16 65536 4096 528" 2>&1 | grep -v XDG
