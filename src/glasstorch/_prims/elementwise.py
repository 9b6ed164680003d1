"""Elementwise primitives: unary, binary and ternary, each with its scalar expression.

As PyTorch's prims, they neither broadcast nor promote: every tensor operand has the same
shape and dtype (the ATen ops above them, or a decomposition, broadcast and convert first).
The result is laid out row-major; comparisons and classifications give bool.
"""
from __future__ import annotations

import math

import numpy as np

from ..core import dtype as dt
from ..ops.registry import spec
from .declaration import prim
from .scalar import PY_MATH, BinOp, Call, Const, Select, Unary, a, b, c


def _same_operands(name, *tensors):
    first = tensors[0]
    for t in tensors[1:]:
        if t.shape != first.shape:
            raise RuntimeError(f"prims::{name}: shape {list(t.shape)} is not the expected "
                               f"shape {list(first.shape)} (primitives do not broadcast)")
        if t.device != first.device:
            raise RuntimeError(f"prims::{name}: tensor on {t.device} is not on the expected "
                               f"device {first.device}")


def _elementwise_meta(name, result_dtype=None, same_dtype=True, categories=None):
    """The meta function: checks the operands, then one row-major output."""
    def meta(*tensors):
        _same_operands(name, *tensors)
        if same_dtype:
            for t in tensors[1:]:
                if t.dtype is not tensors[0].dtype:
                    raise RuntimeError(f"prims::{name}: dtype {t.dtype} is not the expected "
                                       f"dtype {tensors[0].dtype} (primitives do not "
                                       "promote)")
        if categories is not None and tensors[0].dtype.category not in categories:
            raise RuntimeError(f"prims::{name} does not support {tensors[0].dtype} tensors")
        return spec(tensors[0].shape, result_dtype or tensors[0].dtype)
    meta.__qualname__ = f"{name}_meta"
    return meta


_FLOATING = (2,)          # dtype.category: 0 bool, 1 integer, 2 floating, 3 complex
_INTEGRAL = (0, 1)


def _unary(name, impl, expr, *, result=None, categories=None, doc=""):
    return prim(f"{name}(Tensor self) -> Tensor", kind="elementwise",
                meta=_elementwise_meta(name, result, categories=categories), impl=impl,
                expr=expr, doc=doc)


def _binary(name, impl, expr, *, result=None, categories=None, doc=""):
    return prim(f"{name}(Tensor self, Tensor other) -> Tensor", kind="elementwise",
                meta=_elementwise_meta(name, result, categories=categories), impl=impl,
                expr=expr, doc=doc)


# ---- unary -----------------------------------------------------------------------------------

# the libm function of the same name
for _name, _ufunc in (("acos", np.arccos), ("acosh", np.arccosh), ("asin", np.arcsin),
                      ("asinh", np.arcsinh), ("atan", np.arctan), ("atanh", np.arctanh),
                      ("cos", np.cos), ("cosh", np.cosh), ("exp", np.exp), ("expm1", np.expm1),
                      ("exp2", np.exp2), ("log", np.log), ("log1p", np.log1p),
                      ("log2", np.log2), ("log10", np.log10), ("sin", np.sin),
                      ("sinh", np.sinh), ("sqrt", np.sqrt), ("tan", np.tan), ("tanh", np.tanh),
                      ("ceil", np.ceil), ("floor", np.floor), ("trunc", np.trunc)):
    _unary(_name, _ufunc, Call(_name, a), categories=_FLOATING)

_unary("round", np.rint, Call("nearbyint", a), categories=_FLOATING,
       doc="half to even, as the default rounding mode")


def _erf_impl(fn):
    """erf and erfc element by element through `math` (NumPy has none): a slow reference,
    which is all an implementation here has to be."""
    vectorised = np.vectorize(lambda x: x if x != x else fn(x), otypes=[np.float64])

    def impl(x):
        return vectorised(x.astype(np.float64)).astype(x.dtype) if x.size else x.copy()
    impl.__qualname__ = fn.__name__
    return impl


def _lgamma_impl(x):
    return np.vectorize(PY_MATH.lgamma, otypes=[np.float64])(x.astype(np.float64)).astype(
        x.dtype) if x.size else x.copy()


def _rsqrt(x):
    return 1 / np.sqrt(x)


def _sign(x):
    if x.dtype.kind in "biu":
        return np.sign(x)
    return np.where(np.isnan(x), 0, np.sign(x)).astype(x.dtype)    # floats, bfloat16 too


_unary("erf", _erf_impl(math.erf), Call("erf", a), categories=_FLOATING)
_unary("erfc", _erf_impl(math.erfc), Call("erfc", a), categories=_FLOATING)
_unary("lgamma", _lgamma_impl, Call("lgamma", a), categories=_FLOATING)
_unary("rsqrt", _rsqrt, Call("rsqrt", a), categories=_FLOATING)
_unary("reciprocal", np.reciprocal, BinOp("/", Const(1.0), a), categories=_FLOATING)
_unary("abs", np.abs, Call("fabs", a), categories=_FLOATING + _INTEGRAL,
       doc="the expression is the floating one (fabs); integer kernels use abs")
_unary("neg", np.negative, Unary("-", a), categories=(1, 2))
_unary("sign", _sign, BinOp("-", BinOp(">", a, Const(0)), BinOp("<", a, Const(0))),
       categories=(1, 2), doc="sign(nan) is 0, as PyTorch's")
_unary("signbit", np.signbit, Call("signbit", a), result=dt.bool, categories=(1, 2))
_unary("isfinite", np.isfinite, Call("isfinite", a), result=dt.bool)
_unary("bitwise_not", np.invert, Unary("~", a), categories=_INTEGRAL)


# ---- binary ----------------------------------------------------------------------------------

def _div(x, y):
    """True division for floats; truncating division for integers, as C's `/`."""
    if x.dtype.kind not in "biu":          # floating, bfloat16 (kind 'V') included
        return x / y
    q = np.floor_divide(x, np.where(y == 0, 1, y))
    return q + ((np.remainder(x, np.where(y == 0, 1, y)) != 0) & ((x < 0) != (y < 0)))


def _maximum_expr(pick):
    return Select(BinOp("!=", a, a), a, Select(BinOp("!=", b, b), b,
                                               Select(BinOp(pick, a, b), a, b)))


_fmod_ab = Call("fmod", a, b)
_binary("add", np.add, BinOp("+", a, b), categories=(1, 2))
_binary("sub", np.subtract, BinOp("-", a, b), categories=(1, 2))
_binary("mul", np.multiply, BinOp("*", a, b), categories=(0, 1, 2))
_binary("div", _div, BinOp("/", a, b), categories=(1, 2),
        doc="true division for floating tensors, truncating for integers")
_binary("atan2", np.arctan2, Call("atan2", a, b), categories=_FLOATING)
_binary("fmax", np.fmax, Call("fmax", a, b), categories=_FLOATING)
_binary("fmin", np.fmin, Call("fmin", a, b), categories=_FLOATING)
_binary("fmod", np.fmod, _fmod_ab, categories=_FLOATING)
_binary("hypot", np.hypot, Call("hypot", a, b), categories=_FLOATING)
_binary("nextafter", np.nextafter, Call("nextafter", a, b), categories=_FLOATING)
_binary("pow", np.power, Call("pow", a, b), categories=_FLOATING)
_binary("remainder", np.remainder,
        Select(BinOp("&&", BinOp("!=", _fmod_ab, Const(0)),
                     BinOp("!=", BinOp("<", _fmod_ab, Const(0)), BinOp("<", b, Const(0)))),
               BinOp("+", _fmod_ab, b), _fmod_ab),
        categories=_FLOATING, doc="the result takes the sign of the divisor (Python's %)")
_binary("maximum", np.maximum, _maximum_expr(">"), categories=(1, 2),
        doc="nan propagates")
_binary("minimum", np.minimum, _maximum_expr("<"), categories=(1, 2),
        doc="nan propagates")
for _name, _ufunc, _op in (("eq", np.equal, "=="), ("ne", np.not_equal, "!="),
                           ("ge", np.greater_equal, ">="), ("gt", np.greater, ">"),
                           ("le", np.less_equal, "<="), ("lt", np.less, "<")):
    _binary(_name, _ufunc, BinOp(_op, a, b), result=dt.bool)
for _name, _ufunc, _op in (("bitwise_and", np.bitwise_and, "&"),
                           ("bitwise_or", np.bitwise_or, "|"),
                           ("bitwise_xor", np.bitwise_xor, "^"),
                           ("shift_left", np.left_shift, "<<"),
                           ("shift_right_arithmetic", np.right_shift, ">>")):
    _binary(_name, _ufunc, BinOp(_op, a, b), categories=_INTEGRAL if "shift" not in _name
            else (1,))


# ---- ternary and conversion --------------------------------------------------------------------

def _where_meta(pred, x, y):
    if pred.dtype is not dt.bool:
        raise RuntimeError(f"prims::where: pred must be a bool tensor, got {pred.dtype}")
    _same_operands("where", pred, x, y)
    return _elementwise_meta("where")(x, y)


prim("where(Tensor pred, Tensor a, Tensor b) -> Tensor", kind="elementwise", meta=_where_meta,
     impl=np.where, expr=Select(a, b, c))


def _convert_meta(x, dtype):
    if not isinstance(dtype, dt.dtype):
        raise TypeError(f"prims::convert_element_type: dtype must be a dtype, got "
                        f"{type(dtype).__name__}")
    return spec(x.shape, dtype)


def _convert(x, dtype):
    return x.astype(dtype.np)


prim("convert_element_type(Tensor a, ScalarType dtype) -> Tensor", kind="elementwise",
     meta=_convert_meta, impl=_convert, expr=a,
     doc="the expression is the value itself: the kernel's store converts it")
