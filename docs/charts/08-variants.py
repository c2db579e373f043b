"""Chapter 8: stencil's variants at 8192x8192 on an H200, CUDA and WGSL (every rung), beside PyTorch's cuDNN
convolution, all from one run (`guide/variants-2.txt`; `_variants.py`)."""

import _variants

RUN = "nvidia-h200/guide/variants-2.txt"

_variants.draw(
    "08-variants",
    "stencil",
    "8192x8192",
    "cuDNN 3x3 conv (1 channel, replicate pad)",
    "cuDNN 3x3 conv",
    "a tile read once serves its neighbours",
    source=RUN,
    torch_source=RUN,
)
