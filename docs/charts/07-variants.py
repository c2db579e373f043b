"""Chapter 7: histogram's variants at 2^26 on an H200, CUDA and WGSL, beside `torch.histc` (`_variants.py`)."""

import _variants

_variants.draw(
    "07-variants", "histogram", "67108864", "torch.histc, 256 bins, 2^26", "torch.histc", "private counts end the contention"
)
