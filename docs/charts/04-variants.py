"""Chapter 4: softmax's variants at 8192x8192 on an H200, CUDA and WGSL, beside `torch.softmax` (`_variants.py`)."""

import _variants

_variants.draw("04-variants", "softmax", "8192x8192", "torch.softmax, 8192 x 8192", "torch.softmax", "fusion reads the rows once")
