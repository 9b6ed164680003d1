"""Kernels as NumPy code: the fallback when there is no C compiler.

The same driver (`codegen.generate`) runs with this builder. Where the C kernel loops, this
one works on whole arrays: the kernel's loop dims are array axes (outer dims first, then
inner), a load is an `as_strided` view of the buffer's memory with the address's
coefficients as strides (0 where the address does not use a loop), an op is a ufunc call,
a reduction reduces the inner axes (NumPy's pairwise sum, as eager's), and a store copies
into a strided view of the output.
"""
from __future__ import annotations

import math

import numpy as np

from ..._prims.scalar import BinOp, Call, Const, Select, Unary, Var, substitute
from ...core import dtype as dt
from .codegen import compute_dtype, local_value, result_dtype
from .ir import Index, Val

_NP_FUNCTIONS = {"fabs": "np.abs", "nearbyint": "np.rint", "asin": "np.arcsin",
                 "acos": "np.arccos", "atan": "np.arctan", "asinh": "np.arcsinh",
                 "acosh": "np.arccosh", "atanh": "np.arctanh", "atan2": "np.arctan2",
                 "pow": "np.power", "erf": "_erf", "erfc": "_erfc", "lgamma": "_lgamma",
                 "rsqrt": "_rsqrt"}
_COMPARISONS = ("==", "!=", "<", "<=", ">", ">=", "&&", "||")


def _vectorized(fn):
    def apply(x):
        x = np.asarray(x)
        return np.vectorize(fn, otypes=[np.float64])(x).astype(x.dtype)
    return apply


NAMESPACE = {"np": np, "_erf": _vectorized(math.erf), "_erfc": _vectorized(math.erfc),
             "_lgamma": _vectorized(lambda v: math.lgamma(v) if v == v else v),
             "_rsqrt": lambda x: 1 / np.sqrt(x)}


def render_numpy(e) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, Call):
        name = _NP_FUNCTIONS.get(e.fn, f"np.{e.fn}")
        return f"{name}({', '.join(render_numpy(x) for x in e.args)})"
    if isinstance(e, BinOp):
        lhs, rhs = render_numpy(e.lhs), render_numpy(e.rhs)
        if e.op in "+-*/":                     # C adds truth values as ints; NumPy refuses
            lhs, rhs = (f"np.asarray({text}).astype(np.int8)" if _is_truth(x) else text
                        for x, text in ((e.lhs, lhs), (e.rhs, rhs)))
        if e.op == "&&":
            return f"np.logical_and({lhs}, {rhs})"
        if e.op == "||":
            return f"np.logical_or({lhs}, {rhs})"
        return f"({lhs} {e.op} {rhs})"
    if isinstance(e, Unary):
        fn = {"-": "np.negative", "!": "np.logical_not", "~": "np.invert"}[e.op]
        return f"{fn}({render_numpy(e.operand)})"
    if isinstance(e, Select):
        return (f"np.where({render_numpy(e.cond)}, {render_numpy(e.if_true)}, "
                f"{render_numpy(e.if_false)})")
    raise TypeError(f"not a scalar expression: {e!r}")


def _is_truth(e) -> bool:
    return (isinstance(e, BinOp) and e.op in _COMPARISONS) or (
        isinstance(e, Unary) and e.op == "!")


def _np_name(dtype) -> str:
    if dtype is dt.bfloat16:
        return "_bf16"
    return f"np.{np.dtype(dtype.np).name}"


class NumpyKernelBuilder:
    """Builds one Python function over NumPy arrays; see the module docstring."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.axes = kernel.outer_vars + kernel.inner_vars
        self.sizes = dict(zip(self.axes, kernel.outer + kernel.inner))
        self.params: dict = {}
        self.lines: list = []
        self.locals: dict = {}
        self.cse: dict = {}
        self.count = 0

    def tmp(self, text, dtype) -> Val:
        if text in self.cse:
            return Val(self.cse[text], dtype)
        name = f"t{self.count}"
        self.count += 1
        self.lines.append(f"    {name} = {text}")
        self.cse[text] = name
        return Val(name, dtype)

    def param(self, root) -> str:
        if root not in self.params:
            self.params[root] = f"p{len(self.params)}"
        return self.params[root]

    def _view(self, buf, idx) -> str:
        address: Index = buf.address(idx)
        shape = tuple(self.sizes[v] if v in address.terms else 1 for v in self.axes)
        strides = tuple(address.terms.get(v, 0) for v in self.axes)
        return f"_at({self.param(buf.root)}, {shape}, {strides}, {address.const})"

    def begin_outer(self):
        pass

    def end_outer(self):
        pass

    def begin_inner(self):
        pass

    def end_inner(self):
        pass

    def load(self, buf, idx):
        val = local_value(self.locals, buf, idx)
        if val is not None:
            return val
        text = self._view(buf, idx)
        if compute_dtype(buf.dtype) is not buf.dtype:
            text = f"{text}.astype(np.float32)"
        return self.tmp(text, buf.dtype)

    def inline(self, value, idx):
        return value.fn(self, idx)

    def store(self, node, idx, val):
        self.lines.append(f"    np.copyto({self._view(node, idx)}, {val.text}, "
                          "casting='unsafe')")

    def define_local(self, node, val, idx):
        self.locals[node] = (val, node.address(idx))

    def const(self, value, dtype):
        text = repr(value) if not isinstance(value, float) or math.isfinite(value) else \
            f"float({str(value)!r})"                # inf, -inf, nan
        return Val(f"{_np_name(compute_dtype(dtype))}({text})", dtype)

    def cast(self, val, dtype):
        if val.dtype is dtype:
            return val
        src, dst = compute_dtype(val.dtype), compute_dtype(dtype)
        if src is dst and dtype not in (dt.float16, dt.bfloat16):
            return Val(val.text, dtype)
        text = val.text if src is dst else f"np.asarray({val.text}).astype({_np_name(dst)})"
        return self.tmp(_rounded(text, dtype), dtype)

    def op(self, expr, vals, dtype=None):
        dtype = dtype or result_dtype(expr, vals)
        names = {n: Var(v.text) for n, v in zip("abc", vals)}
        compute = compute_dtype(dtype)
        text = f"np.asarray({render_numpy(substitute(expr, names))}).astype(" \
               f"{_np_name(compute)}, copy=False)"
        return self.tmp(_rounded(text, dtype), dtype)

    def reduce(self, red, in_idx):
        axes = tuple(range(len(self.kernel.outer), len(self.axes)))
        acc = _np_name(compute_dtype(red.acc_dtype))
        v = red.fn(self, in_idx)
        full = f"np.broadcast_to({v.text}, {tuple(self.sizes[a] for a in self.axes)})"
        reducer = {"sum": "np.add", "mean": "np.add", "var": "np.add", "prod": "np.multiply",
                   "amax": "np.maximum", "amin": "np.minimum"}[red.kind]
        dtype_arg = f", dtype={acc}" if red.kind in ("sum", "mean", "var", "prod") else ""
        result = self.tmp(f"{reducer}.reduce({full}, axis={axes}, keepdims=True{dtype_arg})",
                          red.acc_dtype)
        n = red.count
        if red.kind in ("mean", "var"):
            result = self.tmp(f"{result.text} / {acc}({n})", red.acc_dtype)
        if red.kind == "var":
            d = self.tmp(f"{v.text} - {result.text}", red.acc_dtype)
            sq = f"np.broadcast_to({d.text} * {d.text}, {tuple(self.sizes[a] for a in self.axes)})"
            total = self.tmp(f"np.add.reduce({sq}, axis={axes}, keepdims=True, dtype={acc})",
                             red.acc_dtype)
            result = self.tmp(f"{total.text} / {acc}({max(n - red.correction, 0)})",
                              red.acc_dtype)
        return self.cast(result, red.dtype)

    def source(self) -> str:
        head = f"def {self.kernel.name}({', '.join(self.params.values())}):"
        return "\n".join([head, "    with np.errstate(all='ignore'):",
                          *("    " + ln for ln in self.lines), "        pass"]) + "\n"

    def arguments(self) -> list:
        return list(self.params)


def _rounded(text, dtype):
    if dtype is dt.float16:
        return f"np.asarray({text}).astype(np.float16).astype(np.float32)"
    if dtype is dt.bfloat16:
        return f"np.asarray({text}).astype(_bf16).astype(np.float32)"
    return text


def at(array, shape, strides, offset):
    """The elements of a flat array at `offset + sum(i_k * strides[k])`, as a view."""
    step = array.itemsize
    return np.lib.stride_tricks.as_strided(array[offset:], shape,
                                           tuple(s * step for s in strides))
