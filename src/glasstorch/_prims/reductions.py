"""Reduction primitives: sum, prod, amax, amin and var (with a correction) over `dims`.

As PyTorch's, they drop the reduced dimensions (keepdim is a reshape above them) and take
an optional `output_dtype`. `dims=None` or `[]` reduces every dimension (PyTorch's sum,
amax, amin and var do so for `[]`; its prod reduces none).
"""
from __future__ import annotations

import numpy as np

from ..ops.registry import spec
from .declaration import prim


def _dims(ndim: int, dims, name: str) -> tuple:
    if not dims:                   # None, or [] as in PyTorch: every dimension
        return tuple(range(ndim))
    out = []
    for d in dims:
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(f"prims::{name}: dimension {d} is out of range for a tensor of "
                             f"{ndim} dimensions")
        out.append(d % max(ndim, 1))
    if len(set(out)) != len(out):
        raise RuntimeError(f"prims::{name}: dimension repeated in dims {list(dims)}")
    return tuple(out) if ndim else ()


def _reduction_meta(name):
    def meta(inp, dims, *rest):
        output_dtype = rest[-1] if rest else None      # var has a correction before it
        reduced = _dims(inp.dim(), dims, name)
        if name in ("amax", "amin") and inp.numel() == 0 and any(
                inp.shape[d] == 0 for d in reduced):
            raise RuntimeError(f"prims::{name}: cannot reduce over a zero-size dimension, "
                               "which has no identity")
        shape = [s for i, s in enumerate(inp.shape) if i not in reduced]
        dtype = output_dtype or inp.dtype
        if name == "var":
            dtype = dtype.to_real()          # the variance of complex values is real
        return spec(shape, dtype)
    meta.__qualname__ = f"{name}_meta"
    return meta


def _reduction(name, fn):
    def impl(x, dims, output_dtype=None):
        axes = _dims(x.ndim, dims, name)
        work = x.astype(output_dtype.np) if output_dtype is not None else x
        return fn(work, axis=axes)
    impl.__qualname__ = name
    return prim(f"{name}(Tensor inp, int[]? dims, *, ScalarType? output_dtype=None) -> Tensor",
                kind="reduction", meta=_reduction_meta(name), impl=impl)


_reduction("sum", np.sum)
_reduction("prod", np.prod)
_reduction("amax", np.max)
_reduction("amin", np.min)


def _var(x, dims, correction=1, output_dtype=None):
    axes = _dims(x.ndim, dims, "var")
    n = int(np.prod([x.shape[d] for d in axes]))
    ddof = 1 if correction is None else correction
    mean = x.mean(axis=axes, keepdims=True)
    squares = np.abs(x - mean) ** 2
    return squares.sum(axis=axes) / max(n - ddof, 0)


prim("var(Tensor inp, int[]? dims, float? correction=1, *, ScalarType? output_dtype=None) "
     "-> Tensor", kind="reduction", meta=_reduction_meta("var"), impl=_var,
     doc="sum of squared deviations divided by (N - correction)")
