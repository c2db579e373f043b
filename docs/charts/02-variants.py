"""Chapter 2: saxpy's variants at 2^26 on an H200, CUDA and WGSL, beside PyTorch's in-place `add_`, all from one run
(`guide/variants-2.txt`; `_variants.py`)."""

import _variants

RUN = "nvidia-h200/guide/variants-2.txt"

_variants.draw(
    "02-variants",
    "saxpy",
    "67108864",
    "saxpy (y.add_(x, alpha=2.5)), 2^26",
    "torch y.add_(x, alpha)",
    "in place, at the copy",
    source=RUN,
    torch_source=RUN,
)
