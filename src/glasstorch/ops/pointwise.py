"""Pointwise ops: arithmetic, math functions, comparisons, logical and bitwise ops.

Each op is one `structured` declaration (schema + meta) plus its CPU kernel; the function,
method, in-place and `out=` variants come from the declaration.
"""
from __future__ import annotations

import numpy as np

from ..backends.cpu.pointwise import operand, ufunc_kernel
from ..core import dtype as dt
from ..core.tensor import Tensor
from .pointwise_meta import common_dtype, opmath, promoting_meta
from .registry import export, structured


def _check_alpha(name, operands, alpha):
    if alpha != 1 and isinstance(alpha, float) and common_dtype(*operands).category < dt.FLOAT:
        raise RuntimeError(f"For integral input tensors, argument alpha must not be a floating "
                           "point number.")


def _add_meta(self, other, alpha=1):
    _check_alpha("add", (self, other), alpha)
    return promoting_meta(self, other)


add = structured("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                 _add_meta, tags=("pointwise",),
                 doc="input + alpha * other, broadcasting and promoting dtypes.")


@add.impl("CPU")
def _add_cpu(out, self, other, alpha=1):
    cd = opmath(common_dtype(self, other))
    a, b = operand(self), operand(other)
    if alpha != 1:
        b = np.multiply(b, alpha, dtype=cd, casting="unsafe")
    np.add(a, b, out=out._array(), dtype=cd, casting="unsafe")


def _sub_meta(self, other, alpha=1):
    if self.dtype is dt.bool and (getattr(other, "dtype", None) is dt.bool or
                                  isinstance(other, bool)):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    _check_alpha("sub", (self, other), alpha)
    return promoting_meta(self, other)


sub = structured("sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                 _sub_meta, tags=("pointwise",),
                 doc="input - alpha * other, broadcasting and promoting dtypes.")


@sub.impl("CPU")
def _sub_cpu(out, self, other, alpha=1):
    cd = opmath(common_dtype(self, other))
    a, b = operand(self), operand(other)
    if alpha != 1:
        b = np.multiply(b, alpha, dtype=cd, casting="unsafe")
    np.subtract(a, b, out=out._array(), dtype=cd, casting="unsafe")


mul = structured("mul.Tensor(Tensor self, Tensor other) -> Tensor", promoting_meta,
                 tags=("pointwise",), doc="input * other, broadcasting and promoting dtypes.")
mul.impl("CPU")(ufunc_kernel(np.multiply))


# ---- Python operators ------------------------------------------------------------------

def _rsub(self, other):
    return _sub(other if isinstance(other, Tensor) else _wrap(other, self), self)


def _wrap(value, like):
    from .factories import tensor
    return tensor(value, device=like.device) if not isinstance(value, Tensor) else value


_add, _sub, _mul = add.function, sub.function, mul.function
export("__add__", lambda self, other: _add(self, other), method=True, function=False)
export("__radd__", lambda self, other: _add(self, other), method=True, function=False)
export("__iadd__", lambda self, other: self.add_(other), method=True, function=False)
export("__sub__", lambda self, other: _sub(self, other), method=True, function=False)
export("__rsub__", _rsub, method=True, function=False)
export("__isub__", lambda self, other: self.sub_(other), method=True, function=False)
export("__mul__", lambda self, other: _mul(self, other), method=True, function=False)
export("__rmul__", lambda self, other: _mul(self, other), method=True, function=False)
export("__imul__", lambda self, other: self.mul_(other), method=True, function=False)
