#!/usr/bin/env bash
# Times the kernel shapes in this folder at the largest sizes (2^26 floats, 8192 x 8192), first with every wgpu
# run-time check, then with none. From the repository's root:
#
#   cargo build --release -p gpuworthy-wgpu --example wgsl_lab
#   bash wgpu-backend/examples/lab/run.sh
#
# The shapes that won went into shaders/; the figures of one run on an H200 are in
# docs/results/nvidia-h200/wgsl-lab.txt.
set -u
D=$(dirname "$0")
L=${WGSL_LAB:-target/release/examples/wgsl_lab}
N4=$((1<<24)); B=$((N4*16)); M=$((2*B))
for checks in all none; do
  export GPUWORTHY_WGPU_CHECKS=$checks
  echo "===== GPUWORTHY_WGPU_CHECKS=$checks"
  $L $D/bandwidth.wgsl "@copy 0 0 $B $B $M" \
    "sq_wg64 32768 8 $B $B $M $N4" "sq_wg128 32768 4 $B $B $M $N4" "sq_wg256 32768 2 $B $B $M $N4" \
    "sq_wg512 32768 1 $B $B $M $N4" "sq_wg1024 16384 1 $B $B $M $N4" \
    "sq_gs_u1 4224 1 $B $B $M $N4" "sq_gs_u1 1056 1 $B $B $M $N4" \
    "sq_gs_u2 2112 1 $B $B $M $N4" "sq_gs_u2 4224 1 $B $B $M $N4" \
    "sq_gs_u4 1056 1 $B $B $M $N4" "sq_gs_u4 2112 1 $B $B $M $N4" "sq_gs_u4 4224 1 $B $B $M $N4" \
    "sq_gs_u8 1056 1 $B $B $M $N4" "sq_gs_u8 2112 1 $B $B $M $N4" \
    "sq_blk_u2 32768 1 $B $B $M $N4" "sq_blk_u4 16384 1 $B $B $M $N4" "sq_blk_u8 8192 1 $B $B $M $N4" 2>&1 | grep -v XDG
  $L $D/sum.wgsl \
    "sum_v4_u1_kahan 1024 1 $B 65536 $B $N4" "sum_v4_u1_kahan 2112 1 $B 65536 $B $N4" "sum_v4_u1_kahan 4224 1 $B 65536 $B $N4" \
    "sum_v4_u2_kahan 1024 1 $B 65536 $B $N4" "sum_v4_u2_kahan 2112 1 $B 65536 $B $N4" "sum_v4_u2_kahan 4224 1 $B 65536 $B $N4" \
    "sum_v4_u4_kahan 1024 1 $B 65536 $B $N4" "sum_v4_u4_kahan 2112 1 $B 65536 $B $N4" "sum_v4_u4_kahan 4224 1 $B 65536 $B $N4" \
    "sum_v4_u2_plain 2112 1 $B 65536 $B $N4" "sum_v4_u4_plain 2112 1 $B 65536 $B $N4" "sum_v4_u2_tree 2112 1 $B 65536 $B $N4" 2>&1 | grep -v XDG
  $L $D/softmax.wgsl \
    "sm_l2_wg128 8192 1 $B $B $M 0 8192 8192" "sm_l2_wg256 8192 1 $B $B $M 0 8192 8192" \
    "sm_l2_wg512 8192 1 $B $B $M 0 8192 8192" "sm_l2_wg1024 8192 1 $B $B $M 0 8192 8192" \
    "sm_smem_wg256 8192 1 $B $B $M 0 8192 8192" "sm_smem_wg512 8192 1 $B $B $M 0 8192 8192" \
    "sm_smem_wg1024 8192 1 $B $B $M 0 8192 8192" "sm_reg_wg256 8192 1 $B $B $M 0 8192 8192" 2>&1 | grep -v XDG
  $L $D/histogram.wgsl \
    "h_u1_c1 1024 1 $B 1024 $B $N4 256" "h_u1_c1_fast 1024 1 $B 1024 $B $N4 256" \
    "h_u4_c1 1056 1 $B 1024 $B $N4 256" "h_u4_c1 2112 1 $B 1024 $B $N4 256" "h_u4_c1 4224 1 $B 1024 $B $N4 256" \
    "h_u4_c1_fast 2112 1 $B 1024 $B $N4 256" "h_u2_c1_fast 2112 1 $B 1024 $B $N4 256" \
    "h_u4_c2_fast 2112 1 $B 1024 $B $N4 256" "h_u4_c4_fast 2112 1 $B 1024 $B $N4 256" "h_u4_c8_fast 2112 1 $B 1024 $B $N4 256" 2>&1 | grep -v XDG
done
# 16-bit arrays (half.wgsl): 2^26 elements of 2 bytes, eight an invocation.
H8=$((1<<23)); HB=$((H8*16)); HM=$((2*HB))
for checks in all none; do
  export GPUWORTHY_WGPU_CHECKS=$checks
  echo "===== 16-bit, GPUWORTHY_WGPU_CHECKS=$checks"
  $L $D/half.wgsl "@copy 0 0 $HB $HB $HM" "h_copy 32768 1 $HB $HB $HM $H8" "h_f16_int 32768 1 $HB $HB $HM $H8" \
    "h_f16_pack 32768 1 $HB $HB $HM $H8" "h_bf16 32768 1 $HB $HB $HM $H8" 2>&1 | grep -v XDG
done
