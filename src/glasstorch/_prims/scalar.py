"""Scalar expressions: what an elementwise primitive computes for one element.

A compiler that fuses elementwise ops into one kernel needs each op as text in the kernel's
language, not as a NumPy call. So every elementwise primitive carries a small expression
tree over its inputs `a`, `b`, `c`, built from `Var`, `Const`, `Call` (a math function),
`BinOp` (an infix operator), `Unary` (`-`, `!`, `~`) and `Select` (`cond ? x : y`), and
`render(expr, lang)` writes it as C, CUDA C or Python:

    >>> render(Call("exp", Var("a")), "c")
    'exp(a)'
    >>> render(Call("exp", Var("a")), "c", dtype="float")
    'expf(a)'

C and CUDA use the libm names (single precision adds `f`); CUDA has `rsqrt` (`rsqrtf`), C
spells it `1 / sqrt(a)`. Python renders calls as `m.<name>(...)` and division as `m.div(...)`, where
`m` is `PY_MATH`: IEEE functions on Python floats (the `math` module raises at log(0) or
1/0 where a kernel returns inf or nan, so it cannot stand in for libm).
"""
from __future__ import annotations

import math
import types
from dataclasses import dataclass

import numpy as np

LANGS = ("c", "cuda", "python")


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Const:
    value: float | int | bool


@dataclass(frozen=True)
class Call:
    fn: str
    args: tuple

    def __init__(self, fn: str, *args):
        if fn not in FUNCTIONS:
            raise ValueError(f"unknown scalar function '{fn}'; known: {sorted(FUNCTIONS)}")
        object.__setattr__(self, "fn", fn)
        object.__setattr__(self, "args", args)


@dataclass(frozen=True)
class BinOp:
    op: str          # + - * / < <= > >= == != && || & | ^ << >>
    lhs: object
    rhs: object


@dataclass(frozen=True)
class Unary:
    op: str          # - ! ~
    operand: object


@dataclass(frozen=True)
class Select:
    cond: object
    if_true: object
    if_false: object


a, b, c = Var("a"), Var("b"), Var("c")


# name -> (C/CUDA name or None where C has no such function, CUDA-only name or None)
FUNCTIONS = {
    **{n: (n, None) for n in (
        "fabs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "ceil",
        "erf", "erfc", "exp", "expm1", "exp2", "floor", "lgamma", "log", "log1p", "log2",
        "log10", "sin", "sinh", "sqrt", "tan", "tanh", "trunc", "nearbyint", "atan2", "fmax",
        "fmin", "fmod", "hypot", "nextafter", "pow", "copysign")},
    "isnan": ("isnan", None), "isinf": ("isinf", None), "isfinite": ("isfinite", None),
    "signbit": ("signbit", None),
    "rsqrt": (None, "rsqrt"),
}
_CLASSIFIERS = {"isnan", "isinf", "isfinite", "signbit"}   # macros: no float variant


def render(expr, lang: str, dtype: str = "double") -> str:
    """`expr` as source text in `lang` ('c', 'cuda' or 'python'); `dtype` ('double' or
    'float') picks the C math functions' precision."""
    if lang not in LANGS:
        raise ValueError(f"unknown language '{lang}'; expected one of {LANGS}")
    if dtype not in ("double", "float"):
        raise ValueError(f"dtype must be 'double' or 'float', got '{dtype}'")
    return _render(expr, lang, dtype)


def _render(e, lang, dtype):
    r = lambda x: _render(x, lang, dtype)   # noqa: E731
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Const):
        return _constant(e.value, lang, dtype)
    if isinstance(e, Call):
        args = ", ".join(r(x) for x in e.args)
        if lang == "python":
            return f"m.{e.fn}({args})"
        c_name, cuda_name = FUNCTIONS[e.fn]
        if lang == "cuda" and cuda_name is not None:
            name = _math_name(cuda_name, dtype)
        elif c_name is None:                       # rsqrt in plain C
            return f"({_constant(1.0, lang, dtype)} / {_math_name('sqrt', dtype)}({args}))"
        elif e.fn in _CLASSIFIERS:        # macros giving any nonzero int for true: make it 1
            return f"({c_name}({args}) != 0)"
        else:
            name = _math_name(c_name, dtype)
        return f"{name}({args})"
    if isinstance(e, BinOp):
        if lang == "python":
            if e.op == "/":
                return f"m.div({r(e.lhs)}, {r(e.rhs)})"
            op = {"&&": "and", "||": "or"}.get(e.op, e.op)
        else:
            op = e.op
        return f"({r(e.lhs)} {op} {r(e.rhs)})"
    if isinstance(e, Unary):
        op = "not " if lang == "python" and e.op == "!" else e.op
        return f"({op}{r(e.operand)})"
    if isinstance(e, Select):
        if lang == "python":
            return f"({r(e.if_true)} if {r(e.cond)} else {r(e.if_false)})"
        return f"({r(e.cond)} ? {r(e.if_true)} : {r(e.if_false)})"
    raise TypeError(f"not a scalar expression: {e!r}")


def substitute(expr, operands: dict):
    """`expr` with its variables replaced by expressions ({"a": ..., "b": ...}): how a chain
    of elementwise prims becomes one expression, the body of one fused kernel."""
    if isinstance(expr, Var):
        return operands.get(expr.name, expr)
    if isinstance(expr, Const):
        return expr
    if isinstance(expr, Call):
        return Call(expr.fn, *(substitute(x, operands) for x in expr.args))
    if isinstance(expr, BinOp):
        return BinOp(expr.op, substitute(expr.lhs, operands), substitute(expr.rhs, operands))
    if isinstance(expr, Unary):
        return Unary(expr.op, substitute(expr.operand, operands))
    if isinstance(expr, Select):
        return Select(*(substitute(x, operands) for x in (expr.cond, expr.if_true,
                                                           expr.if_false)))
    raise TypeError(f"not a scalar expression: {expr!r}")


def _math_name(name: str, dtype: str) -> str:
    return name + "f" if dtype == "float" else name


def _constant(value, lang, dtype):
    if isinstance(value, bool):
        return ("True" if value else "False") if lang == "python" else str(int(value))
    if isinstance(value, int):
        return str(value) if lang == "python" or dtype == "double" else f"{value}.0f"
    text = repr(float(value))
    return text + "f" if dtype == "float" and lang != "python" else text


def compile_python(expr, nargs: int):
    """The expression as a Python function of `nargs` scalars (for tests and debugging)."""
    params = ", ".join("abc"[:nargs])
    source = f"lambda {params}: {render(expr, 'python')}"
    return eval(source, {"m": PY_MATH})    # noqa: S307 (our own rendered text)


def _ieee(ufunc):
    """A libm function on Python floats through its NumPy ufunc: IEEE results (inf, nan)
    where `math` raises. (On one-element arrays: NumPy's scalar path differs from libm at
    some special values, pow(-inf, 0.5) among them.)"""
    def fn(*xs):
        with np.errstate(all="ignore"):
            out = ufunc(*(np.array([x], np.float64) for x in xs))[0]
        return bool(out) if out.dtype == np.bool_ else float(out)
    fn.__name__ = ufunc.__name__
    return fn


def _div(x, y):
    """C's `/`: integer division truncates, float division by zero gives ±inf or nan."""
    if isinstance(x, int) and isinstance(y, int) and not isinstance(x, bool):
        q = abs(x) // abs(y)
        return q if (x >= 0) == (y >= 0) else -q
    with np.errstate(all="ignore"):
        return float(np.float64(x) / np.float64(y))


def _lgamma(x):
    if x != x or x in (float("inf"), float("-inf")):
        return abs(x) if x == x else x
    if x <= 0 and x == int(x):
        return float("inf")
    return math.lgamma(x)


def _erf(fn):
    def ieee(x):
        return x if x != x else fn(x)
    ieee.__name__ = fn.__name__
    return ieee


PY_MATH = types.SimpleNamespace(
    div=_div, lgamma=_lgamma, erf=_erf(math.erf), erfc=_erf(math.erfc),
    **{name: _ieee(getattr(np, np_name)) for name, np_name in {
        "fabs": "fabs", "acos": "arccos", "acosh": "arccosh", "asin": "arcsin",
        "asinh": "arcsinh", "atan": "arctan", "atanh": "arctanh", "cos": "cos",
        "cosh": "cosh", "ceil": "ceil", "exp": "exp", "expm1": "expm1", "exp2": "exp2",
        "floor": "floor", "log": "log", "log1p": "log1p", "log2": "log2", "log10": "log10",
        "sin": "sin", "sinh": "sinh", "sqrt": "sqrt", "tan": "tan", "tanh": "tanh",
        "trunc": "trunc", "nearbyint": "rint", "atan2": "arctan2", "fmax": "fmax",
        "fmin": "fmin", "fmod": "fmod", "hypot": "hypot", "nextafter": "nextafter",
        "pow": "power", "copysign": "copysign", "isnan": "isnan", "isinf": "isinf",
        "isfinite": "isfinite", "signbit": "signbit"}.items()},
)
PY_MATH.rsqrt = lambda x: _div(1.0, PY_MATH.sqrt(x))

