"""Meta functions shared by pointwise ops: broadcasting, promotion and output strides
(what PyTorch's TensorIterator computes before a kernel runs)."""
from __future__ import annotations

from ..core import dtype as dt
from ..core.shape import (Size, broadcast_shapes2, channels_last_strides, contiguous_strides,
                          is_channels_last, is_contiguous, is_non_overlapping_and_dense)
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
    """The strides TensorIterator gives a new pointwise output of `shape`.

    When every operand (Python numbers included) has the output's shape: row-major if they
    are all contiguous, channels-last if they all are that, their common strides if those
    are dense. Otherwise the operands' dimension order, decided by the first operand whose
    strides tell two dimensions apart (`_dimension_order`).
    """
    contiguous = contiguous_strides(shape)
    for x in operands:          # the common case: row-major inputs (and 0-dim or numbers)
        if isinstance(x, Tensor) and x._shape and (x._shape != shape or x._stride != contiguous):
            break
    else:
        if 0 not in shape:
            return contiguous
    same_shape = True
    all_contiguous = True
    for x in operands:
        if not isinstance(x, Tensor):
            same_shape = False
        elif x._shape != shape:
            same_shape = False
        elif all_contiguous and x._stride != contiguous and not is_contiguous(shape, x._stride):
            all_contiguous = False
    if same_shape:
        if all_contiguous:
            return contiguous
        strides = [x._stride for x in operands]
        if len(shape) in (4, 5) and all(is_channels_last(shape, st) for st in strides):
            return channels_last_strides(shape)
        first = strides[0]
        if all(st == first for st in strides) and is_non_overlapping_and_dense(shape, first):
            return tuple(first)
    perm = _dimension_order(shape, [x for x in operands if isinstance(x, Tensor)])
    if perm == list(range(len(shape) - 1, -1, -1)):
        return contiguous
    out, acc = [0] * len(shape), 1
    for d in perm:
        out[d] = acc
        acc *= shape[d]
    return tuple(out)


def _dimension_order(shape, tensors) -> list:
    """Dimensions from innermost to outermost, as TensorIterator's reorder_dimensions sorts
    them: a dimension moves inside another when the first operand that can tell them apart
    has a smaller stride there (or an equal stride and a smaller size). Broadcast dimensions
    (stride 0) tell nothing; a size-1 dimension that is not broadcast keeps its stride."""
    n = len(shape)
    strides = []
    for t in tensors:
        lead = n - len(t._shape)
        strides.append([0 if i < lead or (t._shape[i - lead] == 1 and shape[i] != 1)
                        else t._stride[i - lead] for i in range(n)])

    def should_swap(d0, d1):      # 1: d0 goes outside d1; -1: keep; 0: undecided
        for st in strides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return 1 if s0 > s1 else -1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(n - 1, -1, -1))
    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def pointwise_spec(operands, dtype: dt.dtype) -> TensorSpec:
    shape = broadcast_operands(operands)
    return TensorSpec(Size(shape), dtype, out_strides(shape, operands))


def promoting_meta(*operands) -> TensorSpec:
    """Output of an op in the promoted dtype of its operands (add, mul, maximum, ...)."""
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
