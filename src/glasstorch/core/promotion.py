"""Type promotion of op operands: the result dtype of tensors and Python numbers, and the
dtype a kernel computes in (PyTorch's TensorIterator common dtype and opmath type)."""
from __future__ import annotations

from . import dtype as dt
from .tensor import Tensor

_common_cache: dict = {}


def _kind(x):
    """What promotion needs to know of an operand: dtype and 0-dim-ness, or number type."""
    return (x.dtype, not x._shape) if isinstance(x, Tensor) else x.__class__


def common_dtype(*operands) -> dt.dtype:
    """PyTorch's result type of tensors and Python scalars (cached by operand kinds)."""
    if len(operands) == 2:
        a, b = operands
        if a.__class__ is Tensor:
            if b.__class__ is Tensor:
                if a.dtype is b.dtype:
                    return a.dtype        # same dtype: every promotion rule agrees
            elif (b.__class__ is float or b.__class__ is int) and a.dtype.category == dt.FLOAT:
                return a.dtype            # a real number never changes a float tensor's dtype
        key = (_kind(a), _kind(b), dt.get_default_dtype())
    else:
        key = (*map(_kind, operands), dt.get_default_dtype())
    r = _common_cache.get(key)
    if r is None:
        r = _common_cache[key] = dt.result_type_of(operands)
    return r


def float_dtype(*operands) -> dt.dtype:
    """The promoted dtype, with integer and bool results turned into the default float."""
    d = common_dtype(*operands)
    return dt.get_default_dtype() if d.category < dt.FLOAT else d


def opmath(d: dt.dtype):
    """The NumPy dtype to compute in: float16/bfloat16 (and the float8 formats) compute in
    float32, complex32 in complex64, as PyTorch does."""
    if d is dt.float16 or d is dt.bfloat16:
        return dt.float32.np
    if d.family is not None:
        return _PARTIAL_OPMATH.get(d, d.np)
    return d.np


_PARTIAL_OPMATH = {d: dt.float32.np for d in dt.FLOAT8_DTYPES}
_PARTIAL_OPMATH[dt.complex32] = dt.complex64.np
