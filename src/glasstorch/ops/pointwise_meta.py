"""Meta functions shared by pointwise ops: broadcasting, promotion and output strides
(what PyTorch's TensorIterator computes before a kernel runs)."""
from __future__ import annotations

from ..core import dtype as dt
from ..core.shape import Size, broadcast_shapes2, contiguous_strides, iterator_strides
from ..core.tensor import Tensor
from .registry import TensorSpec

_common_cache: dict = {}


def common_dtype(*operands) -> dt.dtype:
    """PyTorch's result type of tensors and Python scalars (cached by operand kinds)."""
    if len(operands) == 2:
        a, b = operands
        if b.__class__ is Tensor and a.dtype is b.dtype:
            return a.dtype        # same dtype: every promotion rule agrees
    key = tuple((x.dtype, x._shape.__len__() == 0) if x.__class__ is Tensor or
                isinstance(x, Tensor) else type(x) for x in operands)
    key = (key, dt.get_default_dtype())
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
    """Row-major when every tensor input is contiguous, else TensorIterator's layout."""
    contiguous = contiguous_strides(shape)
    tensors = []
    dense = True
    for x in operands:
        if isinstance(x, Tensor):
            tensors.append(x)
            if dense and (x._shape != shape or x._stride != contiguous):
                dense = False
    if dense:
        return contiguous
    return iterator_strides(shape, [(t._shape, t._stride) for t in tensors if t.dim()])


def pointwise_spec(operands, dtype: dt.dtype) -> TensorSpec:
    shape = broadcast_operands(operands)
    return TensorSpec(Size(shape), dtype, out_strides(shape, operands))


def promoting_meta(*operands) -> TensorSpec:
    """Output of an op in the promoted dtype of its operands (add, mul, maximum, ...)."""
    return pointwise_spec(operands, common_dtype(*operands))


def float_meta(*operands) -> TensorSpec:
    """Integer and bool inputs produce the default float dtype (sqrt, exp, true division)."""
    d = common_dtype(*operands)
    if d.category < dt.FLOAT:
        d = dt.get_default_dtype()
    return pointwise_spec(operands, d)


def bool_meta(*operands) -> TensorSpec:
    """Comparisons and predicates: the output is bool."""
    return pointwise_spec(operands, dt.bool)


def opmath(d: dt.dtype):
    """The NumPy dtype to compute in: float16/bfloat16 compute in float32, as PyTorch does."""
    if d is dt.float16 or d is dt.bfloat16:
        return dt.float32.np
    return d.np
