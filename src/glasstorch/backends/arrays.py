"""Kernels written once for NumPy and CuPy arrays.

CPU kernels call NumPy functions; on GPU tensors `_array()` gives CuPy arrays, and NumPy's
functions and ufuncs dispatch to CuPy through `__array_function__`/`__array_ufunc__`. What
does not dispatch is anything that makes an array from nothing or from host data
(`np.empty`, `np.asarray`, `np.arange`): kernels ask `module_of(a)` for the right module for
those, and use `asarray` for "this operand as an array of dtype d".
"""
from __future__ import annotations

import numpy as np


def module_of(*arrays):
    """numpy, or cupy when any argument is a CuPy array."""
    for a in arrays:
        if is_device_array(a):
            from .cuda.runtime import cupy
            return cupy()
    return np


def is_device_array(x) -> bool:
    return x.__class__ is not np.ndarray and hasattr(x, "__cuda_array_interface__")


def asarray(x, dtype=None, like=None):
    """x as an array of `dtype` (no copy when it already is one): a device array stays on
    its GPU, and host data (numbers, NumPy arrays) goes to the GPU of `like` if that is a
    device array, else stays a NumPy array (np.asarray)."""
    if is_device_array(x):
        return x if dtype is None else x.astype(dtype, copy=False)
    if like is not None and is_device_array(like):
        return module_of(like).asarray(x, dtype)
    return np.asarray(x, dtype)


def round_through(x, d):
    """Values of an opmath array (float32) rounded to the precision of d (float16 or
    bfloat16) and kept in x's dtype: one step of PyTorch's arithmetic in d. A GPU's bfloat16
    goes through bit patterns (CuPy has no bfloat16)."""
    if is_device_array(x) and d.name == "bfloat16":
        from .cuda import bfloat16
        xp = module_of(x)
        return bfloat16.to_float32(xp, bfloat16.from_float32(xp, x)).astype(x.dtype, copy=False)
    return x.astype(d.np).astype(x.dtype)
