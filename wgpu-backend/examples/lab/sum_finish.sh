#!/usr/bin/env bash
# Where the one-dispatch reduction's finish spends its time on 2^26 f32 elements through Vulkan (sum_finish.wgsl):
# the kernel as generated with its finish (P1 = 1) and without it (P1 = 0), shapes stopping after each step of the
# last workgroup's chain, and a chain without fences whose last workgroup reads each partial until it is written;
# then the same on 1024 elements (one workgroup), where the chain is all there is. From the repository's root:
#
#   cargo build --release -p gpuworthy-wgpu --example wgsl_lab
#   bash wgpu-backend/examples/lab/sum_finish.sh          # the chain's steps
#   SET=2 bash wgpu-backend/examples/lab/sum_finish.sh    # the partials' loads, the combine, and shapes without them
#   SET=3 bash wgpu-backend/examples/lab/sum_finish.sh    # the finish by one subgroup (s_new), by the workgroup
#                                                         # with masked loads (s_wg), beside the old one
set -u
D=$(dirname "$0")
L=${WGSL_LAB:-target/release/examples/wgsl_lab}
N=${N:-$((1<<26))}; B=$((N*4)); G=${G:-1024}
E() { echo "$1 $G 1 $B 65536 $B $N ${2:-1}"; }
O() { echo "$1 1 1 4096 65536 4096 1024 ${2:-1}"; }
W() { echo "$1 $((G/4)) 1 $B 65536 $B $N 1"; }
if [ "${SET:-1}" = 1 ]; then
  big=("$(E s_gen 1)" "$(E s_gen 0)" "$(E f_fence)" "$(E f_ticket)" "$(E f_ticket_nofence)" "$(E f_one_load)" "$(E f_spin)"
    "$(E s_gen 1)")
  small=("$(O s_gen 1)" "$(O s_gen 0)" "$(O f_fence)" "$(O f_ticket)" "$(O f_ticket_nofence)" "$(O f_one_load)" "$(O f_spin)")
elif [ "$SET" = 2 ]; then
  big=("$(E s_gen 1)" "$(E s_gen 0)" "$(E f_one_load)" "$(E f_loads)" "$(E f_combine)" "$(E f_lean)" "$(W f_wide)"
    "$(E s_gen 1)")
  small=("$(O s_gen 1)" "$(O s_gen 0)" "$(O f_one_load)" "$(O f_loads)" "$(O f_combine)" "$(O f_lean)" "$(O f_wide)")
else
  big=("$(E s_gen 1)" "$(E s_gen 0)" "$(E s_new 1)" "$(E s_wg 1)" "$(E s_new16 1)" "$(E f_loads)" "$(E s_gen 1)"
    "$(E s_new 1)")
  small=("$(O s_gen 1)" "$(O s_gen 0)" "$(O s_new 1)" "$(O s_wg 1)" "$(O s_new16 1)" "$(O f_loads)")
fi
for round in 1 2; do
  $L "$D/expr_helpers.wgsl+$D/sum_finish.wgsl" "${big[@]}" "${small[@]}" 2>&1 | grep -v XDG
done
