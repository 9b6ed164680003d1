"""CPU kernels for the special functions and odd pointwise ops that are not plain unary/binary
ufuncs: heaviside, sinc, polygamma, mvlgamma, trace, renorm, xlog1py, zeta, nextafter, frexp
and index_reduce. Transcendental functions come from backends/cpu/special.py."""
from __future__ import annotations

import math

import numpy as np

from . import pointwise as cpu, special as sp
from .. import arrays
from ...core import dtype as dt
from ...core.promotion import common_dtype, float_dtype, opmath
from ...core.shape import wrap_dim
from .copy import assign_array


def heaviside_kernel(out, self, values):
    a, v = cpu.computed((self, values), self.dtype)
    cpu.assign(out, np.where(a == 0, v, a > 0))


def sinc_kernel(out, self):
    d = float_dtype(self)
    (x,) = cpu.computed((self,), d)
    with np.errstate(all="ignore"):
        px = x * np.pi
        r = np.sin(px) / px
    cpu.assign(out, np.where(x == 0, 1.0, r))


def polygamma_kernel(out, n, self):
    cpu.assign(out, sp.polygamma(n, cpu.operand(self, float_dtype(self))))


def mvlgamma_kernel(out, self, p):
    x = cpu.as_type(cpu.operand(self, float_dtype(self)), np.float64)
    r = p * (p - 1) / 4 * math.log(math.pi)
    for i in range(p):
        r = r + sp.lgamma(x - i / 2)
    cpu.assign(out, r)


def trace_kernel(out, self):
    a = self._array()
    cd = np.int64 if self.dtype.category == dt.INT else opmath(self.dtype)
    assign_array(out._array(), np.trace(a, dtype=cd))


def renorm_factor(a: np.ndarray, p, dim: int, maxnorm):
    """Per slice along `dim`: maxnorm / (norm + 1e-7) where the slice's p-norm exceeds
    maxnorm, else 1 (PyTorch's rule, with its 1e-7)."""
    if not a.size:
        return 1.0                                  # nothing to scale
    others = tuple(i for i in range(a.ndim) if i != dim)
    mag = np.abs(a)
    if p == math.inf:
        norm = mag.max(axis=others, keepdims=True)
    elif p == 1:
        norm = mag.sum(axis=others, keepdims=True)
    elif p == 2:
        norm = np.sqrt((mag * mag).sum(axis=others, keepdims=True))
    else:
        norm = (mag ** p).sum(axis=others, keepdims=True) ** (1.0 / p)
    with np.errstate(all="ignore"):
        return np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)


def renorm_kernel(out, self, p, dim, maxnorm):
    (a,) = cpu.computed((self,), self.dtype)
    cpu.assign(out, a * renorm_factor(a, p, wrap_dim(dim, a.ndim), maxnorm))


def xlog1py_kernel(out, self, other):
    d = float_dtype(self, other)
    a, b = cpu.computed((self, other), d)
    with np.errstate(all="ignore"):
        r = np.where((a == 0) & ~np.isnan(b), 0.0, a * np.log1p(b))
    cpu.assign(out, r)


def zeta_kernel(out, self, other):
    d = float_dtype(self, other)
    a, b = cpu.computed((self, other), d)
    cpu.assign(out, sp.zeta(a, b))


def nextafter_kernel(out, self, other):
    d = common_dtype(self, other)
    a, b = cpu.operands((self, other), d)
    if d is dt.bfloat16:                # no NumPy bfloat16 ufunc: step the bit pattern
        a, b = np.broadcast_arrays(np.asarray(a, dt.bfloat16.np), np.asarray(b, dt.bfloat16.np))
        bits = a.view(np.uint16).astype(np.int32)
        fa, fb = a.astype(np.float32), b.astype(np.float32)
        bits = bits + np.where((fb > fa) == (fa > 0), 1, -1)
        bits = np.where(fa == 0, np.where(fb > 0, 0x0001, 0x8001), bits)
        r = bits.astype(np.uint16).view(dt.bfloat16.np).astype(np.float32)
        cpu.assign(out, np.where(np.isnan(fa) | np.isnan(fb), np.nan, np.where(fa == fb, fb, r)))
        return
    cpu.assign(out, np.nextafter(a, b))


def frexp_kernel(out, self):
    mantissa, exponent = out
    a = self._array()
    m, e = np.frexp(a.astype(np.float32) if self.dtype is dt.bfloat16 else a)
    assign_array(mantissa._array(), m)
    assign_array(exponent._array(), e)


INDEX_REDUCTIONS = {"prod": (np.multiply, 1), "mean": (np.add, 0),
                     "amax": (np.maximum, -np.inf), "amin": (np.minimum, np.inf)}


def _at(ufunc, a, idx, values) -> None:
    """ufunc.at(a, idx, values) along a's first axis: unbuffered, so repeated indices all
    count. CuPy has `at` for few ufuncs and dtypes: on a GPU the repeats are applied in
    rounds over distinct indices, in the order NumPy applies them."""
    if a.__class__ is np.ndarray:
        ufunc.at(a, idx, values)
        return
    xp = arrays.module_of(a)
    order = xp.argsort(idx, kind="stable")
    ordered = idx[order]
    rank = xp.arange(idx.size) - xp.searchsorted(ordered, ordered, side="left")
    values = xp.broadcast_to(xp.asarray(values, a.dtype), idx.shape + a.shape[1:])
    for r in range(int(rank.max()) + 1 if idx.size else 0):
        pick = order[rank == r]
        rows = idx[pick]
        a[rows] = ufunc(a[rows], values[pick])


def index_reduce_kernel(out, self, dim, index, source, reduce, include_self=True):
    """Reduce with the ufunc's unbuffered `at` along `dim` moved first; positions that
    receive no source keep self's value."""
    if self.numel() == 0:
        return
    ufunc, identity = INDEX_REDUCTIONS[reduce]
    d = wrap_dim(dim, self.dim()) if self.dim() else 0
    cd = opmath(self.dtype)
    a = np.moveaxis(np.atleast_1d(self._array().astype(cd)), d, 0)
    src = np.moveaxis(np.atleast_1d(source._array().astype(cd, copy=False)), d, 0)
    idx = index._array().astype(np.int64, copy=False).reshape(-1)
    touched = np.unique(idx)
    if not include_self:
        if cd.kind in "iub" and reduce in ("amax", "amin"):
            limits = np.iinfo(cd) if cd.kind != "b" else None
            identity = (False if reduce == "amax" else True) if limits is None else \
                (limits.min if reduce == "amax" else limits.max)
        a[touched] = identity
    _at(ufunc, a, idx, src)
    if reduce == "mean":
        counts = arrays.module_of(a).zeros(a.shape[0], dtype=np.int64)
        _at(np.add, counts, idx, 1)
        counts = counts + (1 if include_self else 0)
        counts = np.maximum(counts, 1).reshape((-1,) + (1,) * (a.ndim - 1))
        a = a // counts if cd.kind in "iub" else a / counts.astype(cd)
    assign_array(out._array(), np.moveaxis(a, 0, d).reshape(out._array().shape))


def cum_extremum_kernel(ufunc):
    def kernel(out, self, dim):
        values, indices = out
        if self.numel() == 0:
            return
        a = self._array()
        if a.ndim == 0:
            assign_array(values._array(), a)
            indices._array()[...] = 0
            return
        d = wrap_dim(dim, a.ndim)
        if a.dtype == dt.bfloat16.np:
            a = a.astype(np.float32)
        v = _accumulate(ufunc, a, d)
        shape = [1] * a.ndim
        shape[d] = a.shape[d]
        positions = arrays.module_of(a).arange(a.shape[d]).reshape(shape)
        hit = (a == v) | (np.isnan(a) if a.dtype.kind in "fc" else False)
        idx = _accumulate(np.maximum, np.where(hit, positions, 0), d)
        assign_array(values._array(), v)
        assign_array(indices._array(), idx)
    return kernel


def _accumulate(ufunc, a, axis: int):
    """ufunc.accumulate(a, axis) for maximum or minimum; CuPy's ufuncs accumulate only add
    and multiply, so on a GPU a scan of ceil(log2 n) elementwise passes."""
    if a.__class__ is np.ndarray:
        return ufunc.accumulate(a, axis=axis)
    v = np.moveaxis(a, axis, -1).copy()
    step = 1
    while step < v.shape[-1]:
        v[..., step:] = ufunc(v[..., step:], v[..., :-step])
        step *= 2
    return np.moveaxis(v, -1, axis)


def logaddexp_kernel(base2: bool):
    exp, log1p = (np.exp2, lambda v: np.log1p(v) / math.log(2.0)) if base2 else (np.exp,
                                                                                 np.log1p)

    def kernel(out, self, other):
        d = common_dtype(self, other)
        a, b = cpu.computed((self, other), d)
        with np.errstate(all="ignore"):
            if a.dtype.kind == "c":     # factor out the operand with the larger real part
                first = a.real >= b.real
                m, rest = np.where(first, a, b), np.where(first, b, a)
                r = m + np.log1p(np.exp(rest - m))
            else:
                r = np.maximum(a, b) + log1p(exp(-np.abs(a - b)))
            r = np.where(np.isinf(a.real) & (a == b), a, r)
        cpu.assign(out, r)
    return kernel


def _entr(x):
    x = arrays.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        r = np.where(x > 0, -x * np.log(x), np.where(x == 0, 0.0, -np.inf))
    return np.where(np.isnan(x), x, r)


def integer_binary_kernel(ufunc):
    def kernel(out, self, other):
        cpu.assign(out, np.abs(ufunc(*cpu.operands((self, other), common_dtype(self, other)))))
    return kernel


def close_array(a: np.ndarray, b: np.ndarray, d: dt.dtype, rtol, atol, equal_nan) -> np.ndarray:
    """isclose of two arrays of dtype `d`'s elements: integers compared in the default
    dtype, float16/bfloat16 in float32."""
    if d is dt.bool:
        return np.equal(a, b)
    if d.category == dt.INT:
        cd = dt.get_default_dtype().np
        a, b = a.astype(cd), b.astype(cd)
    elif d in cpu.REDUCED:
        a, b = a.astype(np.float32, copy=False), b.astype(np.float32, copy=False)
    with np.errstate(all="ignore"):
        close = (a == b) | (np.isfinite(a) & np.isfinite(b)
                            & (np.abs(a - b) <= atol + rtol * np.abs(b)))
        if equal_nan:
            close |= np.isnan(a) & np.isnan(b)
    return close


def arrays_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a, b))
