"""Meta functions shared by pointwise ops: broadcasting, promotion and output strides
(what PyTorch's TensorIterator computes before a kernel runs)."""
from __future__ import annotations

from ...core import dtype as dt
from ...core.shape import Size, broadcast_shapes2, contiguous_strides, iterator_strides
from ...core.tensor import Tensor
from ...core.promotion import common_dtype, float_dtype
from ..registry import TensorSpec


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
    if len(shape) < 2:          # one dimension has one order, whatever the inputs' strides
        return contiguous
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
        if a.__class__ is Tensor and a._shape and a._stride == contiguous_strides(a._shape):
            # the common cases, directly: two tensors alike, or a float tensor and a number
            if b.__class__ is Tensor:
                if a.dtype is b.dtype and a._shape == b._shape and a._stride == b._stride:
                    return TensorSpec(a._shape, a.dtype, a._stride)
            elif (b.__class__ is float or b.__class__ is int) and a.dtype.category == dt.FLOAT:
                return TensorSpec(a._shape, a.dtype, a._stride)
    return pointwise_spec(operands, common_dtype(*operands))


def float_meta(*operands) -> TensorSpec:
    """Integer and bool inputs produce the default float dtype (sqrt, exp, true division)."""
    return pointwise_spec(operands, float_dtype(*operands))


def bool_meta(*operands) -> TensorSpec:
    """Comparisons and predicates: the output is bool."""
    return pointwise_spec(operands, dt.bool)
