#!/usr/bin/env bash
# y = exp(-x*x) * sin(3*x) on 2^26 16-bit elements through Vulkan: the kernel as generated for bf16 arrays against
# shapes of it with one part left out or made lighter (see half_e2.wgsl's header), beside a shader copy of the same
# bytes, twice. From the repository's root:
#
#   cargo build --release -p gpuworthy-wgpu --example wgsl_lab
#   bash wgpu-backend/examples/lab/half_e2.sh
set -u
D=$(dirname "$0")
L=${WGSL_LAB:-target/release/examples/wgsl_lab}
N=${N:-$((1<<26))}; B=$((N*2)); M=$((2*B)); G=$((N/8/256)); G4=$((N/4/256/2)); ROW4=$((G4*256))
E() { echo "$1 $G 1 $B $B $M $N"; }
for round in 1 2; do
  $L "$D/half_e2.wgsl" "@copy 0 0 $B $B $M" "$(E e_copy)" "$(E e_bf16)" "$(E e_trunc)" "$(E e_noprobe)" \
    "$(E e_noprobe_trunc)" "$(E e_probe3)" "$(E e_probesum)" "$(E e_fzero)" "$(E e_lean)" \
    "e_four $G4 2 $B $B $M $N $ROW4" "$(E e_f16)" "$(E e_f16_noprobe)" 2>&1 | grep -v XDG
done
