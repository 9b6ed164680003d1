"""bfloat16 on the GPU: CuPy has no bfloat16 dtype, so CUDA bfloat16 tensors keep their
values as uint16 bit patterns (`Tensor._array()` gives that uint16 view) and convert
through float32, exactly, as PyTorch's kernels compute bfloat16 in float32 anyway.

Written over an array module `xp` (CuPy, or NumPy for host-side checks): the same bit
arithmetic as ml_dtypes, rounding to nearest even, every NaN becoming the quiet NaN of its
sign. On real CuPy a C-contiguous array on the current device converts in one pass of
glasstorch's own kernel (fused.py) instead of the arithmetic's several CuPy launches; the
arithmetic serves NumPy, the simulated CuPy and strided arrays.
"""
from __future__ import annotations

import numpy as np

from . import fused, runtime


def _one_pass(xp, a) -> bool:
    """Whether fused.py's conversion kernels can take `a`."""
    return (xp is not np and a.flags.c_contiguous and runtime.runs_cuda_c()
            and a.data.device_id == xp.cuda.runtime.getDevice())


def to_float32(xp, bits):
    """float32 values of bfloat16 bit patterns (exact: bfloat16 is float32's top half)."""
    if _one_pass(xp, bits):
        return fused.bf16_to_float32(bits)
    return (bits.astype(xp.uint32) << 16).view(xp.float32)


def from_float32(xp, values):
    """bfloat16 bit patterns of float32 values, rounded to nearest even."""
    values = values.astype(xp.float32, copy=False)      # keeps 0-d arrays 0-d
    if _one_pass(xp, values):
        return fused.float32_to_bf16(values)
    b = values.view(xp.uint32)
    rounded = (b + (((b >> 16) & 1) + 0x7FFF)) >> 16
    quiet_nan = ((b >> 16) & 0x8000) | 0x7FC0
    return xp.where(xp.isnan(values), quiet_nan, rounded).astype(xp.uint16)
