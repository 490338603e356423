"""bfloat16 emulation for the air-mini "NPU" side.

numpy has no bfloat16 (and ml_dtypes is not assumed), so every bf16 tensor in
air-mini is a float32 array whose values are exactly representable in bf16.
`to_bf16` rounds float32 values to the nearest bf16 value, ties to even, by
operating on the float32 bit pattern; NaN and Inf pass through unchanged.
"""

import numpy as np

# The dtype air-mini uses as a container for bf16 values.
BF16_CONTAINER = np.dtype(np.float32)


def to_bf16(x):
    """Round to bf16 (round-to-nearest-even), returned as float32."""
    a = np.array(x, dtype=np.float32, copy=True, order="C")
    bits = a.view(np.uint32)
    lsb = (bits >> np.uint32(16)) & np.uint32(1)
    with np.errstate(over="ignore"):
        rounded = (bits + np.uint32(0x7FFF) + lsb) & np.uint32(0xFFFF0000)
    out = rounded.view(np.float32)
    nan = np.isnan(a)
    if nan.any():
        out[nan] = a[nan]
    return out


def is_bf16(x):
    """True when every value of x is exactly representable in bf16."""
    a = np.asarray(x, dtype=np.float32)
    finite = np.isfinite(a)
    return bool(np.array_equal(to_bf16(a)[finite], a[finite]))
