"""Chapter 1: square's variants at 2^26 on an H200, CUDA and WGSL, beside `torch.square`, all from one run
(`guide/variants-2.txt`; `_variants.py`)."""

import _variants

RUN = "nvidia-h200/guide/variants-2.txt"

_variants.draw(
    "01-variants",
    "square",
    "67108864",
    "torch.square, 2^26",
    "torch.square",
    "four floats a load reach the copy",
    source=RUN,
    torch_source=RUN,
)
