"""Chapter 3: sum's variants at 2^26 on an H200, CUDA and WGSL, beside `torch.sum` (`_variants.py`)."""

import _variants

_variants.draw("03-variants", "sum", "67108864", "torch.sum, 2^26", "torch.sum", "from one atomic per element to the copy")
