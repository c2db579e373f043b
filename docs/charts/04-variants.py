"""Chapter 4: softmax's variants at 8192x8192 on an H200, CUDA and WGSL, beside `torch.softmax`, all from one run
(`guide/softmax-variants.txt`; `_variants.py`)."""

import _variants

RUN = "nvidia-h200/guide/softmax-variants.txt"

_variants.draw(
    "04-variants",
    "softmax",
    "8192x8192",
    "torch.softmax, 8192 x 8192",
    "torch.softmax",
    "fusion reads the rows once",
    source=RUN,
    torch_source=RUN,
)
