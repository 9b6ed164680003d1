"""Meta functions shared by pointwise ops: broadcasting, promotion and output strides
(what PyTorch's TensorIterator computes before a kernel runs)."""
from __future__ import annotations

from ..core import dtype as dt
from ..core.shape import Size, broadcast_shapes2, contiguous_strides, iterator_strides
from ..core.tensor import Tensor
from .registry import TensorSpec

_common_cache: dict = {}


def _kind(x):
    """What promotion needs to know of an operand: dtype and 0-dim-ness, or number type."""
    return (x.dtype, not x._shape) if isinstance(x, Tensor) else x.__class__


def common_dtype(*operands) -> dt.dtype:
    """PyTorch's result type of tensors and Python scalars (cached by operand kinds)."""
    if len(operands) == 2:
        a, b = operands
        if b.__class__ is Tensor and a.__class__ is Tensor and a.dtype is b.dtype:
            return a.dtype        # same dtype: every promotion rule agrees
        key = (_kind(a), _kind(b), dt.get_default_dtype())
    else:
        key = (*map(_kind, operands), dt.get_default_dtype())
    r = _common_cache.get(key)
    if r is None:
        r = _common_cache[key] = dt.result_type_of(operands)
    return r


def broadcast_operands(operands) -> tuple:
    """The broadcast shape of the tensor operands (Python scalars broadcast as 0-dim)."""
    shape = None
    for x in operands:
        if isinstance(x, Tensor):
            shape = x._shape if shape is None else broadcast_shapes2(shape, x._shape)
    return () if shape is None else shape


def out_strides(shape, operands) -> tuple:
    """The strides of a new pointwise output: row-major in the common case of row-major
    inputs, otherwise TensorIterator's rule (core.shape.iterator_strides)."""
    contiguous = contiguous_strides(shape)
    for x in operands:          # the common case: row-major inputs (and 0-dim or numbers)
        if isinstance(x, Tensor) and x._shape and (x._shape != shape or x._stride != contiguous):
            break
    else:
        if 0 not in shape:
            return contiguous
    return iterator_strides(shape, [(x._shape, x._stride) if isinstance(x, Tensor) else None
                                    for x in operands])


def pointwise_spec(operands, dtype: dt.dtype) -> TensorSpec:
    shape = broadcast_operands(operands)
    return TensorSpec(Size(shape), dtype, out_strides(shape, operands))


def promoting_meta(*operands) -> TensorSpec:
    """Output of an op in the promoted dtype of its operands (add, mul, maximum, ...)."""
    if len(operands) == 2:
        a, b = operands
        if (b.__class__ is Tensor and a.__class__ is Tensor and a.dtype is b.dtype
                and a._shape == b._shape and a._stride == b._stride and a._shape
                and a._stride == contiguous_strides(a._shape)):
            return TensorSpec(a._shape, a.dtype, a._stride)   # the common case, directly
    return pointwise_spec(operands, common_dtype(*operands))


def float_dtype(*operands) -> dt.dtype:
    """The promoted dtype, with integer and bool results turned into the default float."""
    d = common_dtype(*operands)
    return dt.get_default_dtype() if d.category < dt.FLOAT else d


def float_meta(*operands) -> TensorSpec:
    """Integer and bool inputs produce the default float dtype (sqrt, exp, true division)."""
    return pointwise_spec(operands, float_dtype(*operands))


def bool_meta(*operands) -> TensorSpec:
    """Comparisons and predicates: the output is bool."""
    return pointwise_spec(operands, dt.bool)


def opmath(d: dt.dtype):
    """The NumPy dtype to compute in: float16/bfloat16 compute in float32, as PyTorch does."""
    if d is dt.float16 or d is dt.bfloat16:
        return dt.float32.np
    return d.np
