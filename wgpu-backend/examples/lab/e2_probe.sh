#!/usr/bin/env bash
# Where y = exp(-x*x) * sin(3*x)'s time goes on 2^26 f32 elements through Vulkan: the generated kernel with the
# integer tests of its values (e_vec4) against shapes of it with parts taken out (the guarded fallback, the tests,
# the helpers' selects), one special function alone, the fallback in a loop, and the tests as one addition a value
# into a probe of magnitudes (p_probe_*), beside shader copies of the same bytes. From the repository's root:
#
#   cargo build --release -p gpuworthy-wgpu --example wgsl_lab
#   bash wgpu-backend/examples/lab/e2_probe.sh          # the first set of entries
#   SET=2 bash wgpu-backend/examples/lab/e2_probe.sh    # the probe's set
set -u
D=$(dirname "$0")
L=${WGSL_LAB:-target/release/examples/wgsl_lab}
N=${N:-$((1<<26))}; B=$((N*4)); GX=$(( N / 4 / 256 / 2 )); ROW=$((GX*256)); M=$((2*B)); H=$((N/8))
S() { echo "$1 $GX 2 $B $B $M $N $ROW"; }
T() { echo "$1 $GX 1 $B $B $M $N $ROW 0 $H"; }
if [ "${SET:-1}" = 1 ]; then
  entries=("$(S p_copy)" "$(T p_halves_copy)" "$(S p_axpb)" "$(S e_vec4)" "$(S p_nofb)" "$(S p_fbloop)" "$(S p_nospec)"
    "$(S p_raw)" "$(S p_sin)" "$(S p_exp)" "$(T e_halves)" "$(T p_halves_nofb)" "$(T p_halves_fbloop)")
else
  entries=("$(S p_copy)" "$(S e_vec4)" "$(S p_fbloop)" "$(S p_nospec)" "$(S p_probe_fbloop)" "$(S p_probe_unrolled)"
    "$(T p_halves_fbloop)" "$(T p_halves_probe)")
fi
for round in 1 2; do
  $L "$D/expr_helpers.wgsl+$D/e2_f32.wgsl+$D/e2_probe.wgsl" "${entries[@]}" 2>&1 | grep -v XDG
done
