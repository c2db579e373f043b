"""Chapter 3: sum's variants at 2^26 on an H200, CUDA and WGSL, beside `torch.sum`, all from one run
(`guide/variants-2.txt`; `_variants.py`)."""

import _variants

RUN = "nvidia-h200/guide/variants-2.txt"

_variants.draw(
    "03-variants",
    "sum",
    "67108864",
    "torch.sum, 2^26",
    "torch.sum",
    "from one atomic per element to the copy",
    source=RUN,
    torch_source=RUN,
)
