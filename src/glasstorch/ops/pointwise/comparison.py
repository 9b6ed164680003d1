"""Comparisons of whole tensors and of membership: isclose, allclose, equal, isin.

isclose compares with PyTorch's tolerance rule (|a - b| <= atol + rtol * |b|); isin is three
dispatched operators (Tensor_Tensor, Tensor_Scalar, Scalar_Tensor), as in PyTorch.
"""
from __future__ import annotations

import numpy as np

from ...backends import arrays
from ...backends.cpu import pointwise as cpu
from ...backends.cpu.special_functions import arrays_equal, close_array
from ...core import dtype as dt
from ...core.device import META
from ...core.promotion import common_dtype
from ...core.tensor import Tensor
from ..copying.copies import assign_array
from ..registry import composite, into_out, kernel_op, require_tensor


def _compared(xs, d: dt.dtype) -> list:
    """Arrays to compare in dtype d, the operands' common dtype: a GPU holds bfloat16 as bit
    patterns (what the structured kernels are spared by ops/gpu_kernels), so there they are
    compared as float32 (exact)."""
    if d is dt.bfloat16 and any(isinstance(x, Tensor) and x.device.type == "cuda" for x in xs):
        return cpu.operands([x.float() if isinstance(x, Tensor) else x for x in xs],
                            dt.float32)
    return cpu.operands(xs, d)


def _bool_tensor(values: np.ndarray, device) -> Tensor:
    out = Tensor._empty(values.shape, dt.bool, device)
    assign_array(out._array(), values)
    return out


def _check_close_args(name, input, other, rtol, atol):
    require_tensor(name, "other", 2, other)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype.cname} did not match {other.dtype.cname}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")


@composite(method=True)
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other| elementwise (equal values, infinities
    included, are always close; nan only with equal_nan)."""
    _check_close_args("isclose", input, other, rtol, atol)
    a, b = _compared((input, other), input.dtype)
    return _bool_tensor(close_array(a, b, input.dtype, rtol, atol, equal_nan), input.device)


@composite(method=True)
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every element of input is close to other (see isclose)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


@composite(method=True)
def equal(input, other):
    """True when both tensors have the same shape and the same values (nan is unequal)."""
    require_tensor("equal", "other", 2, other)
    if input._shape != other._shape:
        return False
    a, b = _compared((input, other), common_dtype(input, other))
    return arrays_equal(a, b)


def _isin_kernel(elements, test_elements, assume_unique=False, invert=False):
    d = common_dtype(elements, test_elements)
    a, b = _compared((elements, test_elements), d)
    device = (elements if isinstance(elements, Tensor) else test_elements).device
    xp = arrays.module_of(a, b)
    return _bool_tensor(xp.isin(xp.asarray(a), xp.asarray(b).ravel(),
                                assume_unique=assume_unique, invert=invert), device)


def _isin_meta(elements, test_elements, assume_unique=False, invert=False):
    common_dtype(elements, test_elements)
    return Tensor._empty(elements._shape if isinstance(elements, Tensor) else (), dt.bool, META)


def _isin_op(schema: str):
    decl = kernel_op(schema, method=False, function=False)
    decl.impl("CPU")(_isin_kernel)
    decl.impl("Meta")(_isin_meta)
    decl.on_cuda = "shared"
    return decl.functional


# PyTorch's three overloads, so that a mode (and torch.ops.aten.isin) sees the one called
ISIN_OVERLOADS = {(True, True): _isin_op(
             "isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, "
             "bool assume_unique=False, bool invert=False) -> Tensor"),
         (True, False): _isin_op(
             "isin.Tensor_Scalar(Tensor elements, Scalar test_element, *, "
             "bool assume_unique=False, bool invert=False) -> Tensor"),
         (False, True): _isin_op(
             "isin.Scalar_Tensor(Scalar element, Tensor test_elements, *, "
             "bool assume_unique=False, bool invert=False) -> Tensor")}


@composite()
def isin(elements, test_elements, *, assume_unique=False, invert=False, out=None):
    """Whether each element of `elements` occurs in `test_elements` (either may be a
    number; values compared in their promoted dtype)."""
    op = ISIN_OVERLOADS.get((isinstance(elements, Tensor), isinstance(test_elements, Tensor)))
    if op is None:
        raise TypeError("isin(): expected at least one of 'elements' and 'test_elements' to "
                        "be a Tensor")
    return into_out(out, op(elements, test_elements, assume_unique=assume_unique,
                            invert=invert))
