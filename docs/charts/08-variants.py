"""Chapter 8: stencil's variants at 8192x8192 on an H200, CUDA and WGSL (`performance-goals.txt`, the run with
every rung), beside PyTorch's cuDNN convolution (`_variants.py`)."""

import _variants

_variants.draw(
    "08-variants",
    "stencil",
    "8192x8192",
    "cuDNN 3x3 conv (1 channel, replicate pad)",
    "cuDNN 3x3 conv",
    "a tile read once serves its neighbours",
    source="nvidia-h200/performance-goals.txt",
)
