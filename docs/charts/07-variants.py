"""Chapter 7: histogram's variants at 2^26 on an H200, CUDA and WGSL, beside `torch.histc`, all from one run
(`guide/variants-2.txt`; `_variants.py`)."""

import _variants

RUN = "nvidia-h200/guide/variants-2.txt"

_variants.draw(
    "07-variants",
    "histogram",
    "67108864",
    "torch.histc, 256 bins, 2^26",
    "torch.histc",
    "private counts end the contention",
    source=RUN,
    torch_source=RUN,
)
