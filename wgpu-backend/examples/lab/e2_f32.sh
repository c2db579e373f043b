#!/usr/bin/env bash
# y = exp(-x*x) * sin(3*x) on 2^26 f32 elements: the generated kernel (e_now) against the one whose common path calls
# branch-free vec4 twins of the helpers (e_vec4), alternating, beside a copy of the same bytes; then eight elements an
# invocation, two neighbouring vec4s (e_x2) or one in each half of the array (e_halves). From the repository's
# root:
#
#   cargo build --release -p gpuworthy-wgpu --example wgsl_lab
#   bash wgpu-backend/examples/lab/e2_f32.sh
set -u
D=$(dirname "$0")
L=${WGSL_LAB:-target/release/examples/wgsl_lab}
N=${N:-$((1<<26))}; B=$((N*4)); GX=$(( N / 4 / 256 / 2 )); ROW=$((GX*256))
$L $D/expr_helpers.wgsl+$D/e2_f32.wgsl "@copy 0 0 $B $B $((2*B))" \
  "e_now $GX 2 $B $B $((2*B)) $N $ROW" "e_vec4 $GX 2 $B $B $((2*B)) $N $ROW" \
  "e_now $GX 2 $B $B $((2*B)) $N $ROW" "e_vec4 $GX 2 $B $B $((2*B)) $N $ROW" \
  "e_now $GX 2 $B $B $((2*B)) $N $ROW" "e_vec4 $GX 2 $B $B $((2*B)) $N $ROW" \
  "e_x2 $GX 1 $B $B $((2*B)) $N $ROW" "e_halves $GX 1 $B $B $((2*B)) $N $ROW 0 $((N/8))" \
  "e_vec4 $GX 2 $B $B $((2*B)) $N $ROW" "e_x2 $GX 1 $B $B $((2*B)) $N $ROW" \
  "e_halves $GX 1 $B $B $((2*B)) $N $ROW 0 $((N/8))" 2>&1 | grep -v XDG
