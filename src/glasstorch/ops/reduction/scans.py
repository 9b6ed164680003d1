"""Scans and integrals along a dimension: cummax/cummin (running extrema with their
indices), diff (n-th forward differences) and the trapezoid rule (trapezoid, trapz,
cumulative_trapezoid). Kernels in backends/cpu/special_functions.py.
"""
from __future__ import annotations

import numpy as np

from ... import return_types
from ...backends.cpu.special_functions import cum_extremum_kernel
from ...core import dtype as dt
from ...core.promotion import float_dtype
from ...core.shape import wrap_dim
from ...core.tensor import Tensor
from ..registry import composite, export, into_out, require_tensor, spec, structured


def _cum_extremum_meta(name):
    def meta(self, dim):
        if self.dtype.is_complex and self.dim() and self.numel():     # else nothing compared
            raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                      f"'{self.dtype.cname}'")
        wrap_dim(dim, self.dim())
        return spec(self._shape, self.dtype), spec(self._shape, dt.int64)
    return meta


def _cum_extremum(name, ufunc, result_type, result_out_type):
    decl = structured(f"{name}(Tensor self, int dim) -> (Tensor values, Tensor indices)",
                      _cum_extremum_meta(name), inplace=False, function=False, method=False,
                      promotes=False,
                      doc=f"The running {name[3:]} along `dim` and where it was last reached.")
    decl.impl("CPU")(cum_extremum_kernel(ufunc))
    op = decl.function

    def fn(input, dim, *, out=None):
        if out is None:
            return result_type(op(input, dim))
        return result_out_type(op(input, dim, out=out))
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "glasstorch"
    fn.__doc__ = (f"{name}(input, dim) -> return_types.{name}(values, indices): the running "
                  f"{name[3:]} along `dim`; nan propagates, ties give the latest index.")
    export(name, fn, method=True)
    return decl


cummax = _cum_extremum("cummax", np.maximum, return_types.cummax, return_types.cummax_out)


cummin = _cum_extremum("cummin", np.minimum, return_types.cummin, return_types.cummin_out)


def _diff_operand(input, other, dim):
    if other.dim() != input.dim():
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in range(input.dim()):
        if i != dim and other.shape[i] != input.shape[i]:
            raise RuntimeError("diff expects the shape of tensor to prepend or append to match "
                               "that of input except along the differencing dimension; input."
                               f"size({i}) = {input.shape[i]}, but tensor.size({i}) = "
                               f"{other.shape[i]}")
    return other


@composite(method=True)
def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):
    """The n-th forward difference along `dim` (logical xor for bool), after concatenating
    `prepend` and `append` (numbers count as 1-element tensors broadcast to fit)."""
    from ..shape.joining import cat
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input.dim())
    parts = []
    for extra in (prepend, append):
        if extra is not None and not isinstance(extra, Tensor):
            shape = list(input.shape)
            shape[d] = 1
            from ..creation.factories import full
            extra = full(shape, extra, dtype=input.dtype, device=input.device)
        parts.append(None if extra is None else _diff_operand(input, extra, d))
    x = input
    if parts[0] is not None or parts[1] is not None:
        x = cat([t for t in (parts[0], input, parts[1]) if t is not None], d)
    for _ in range(n):
        length = x.shape[d]
        if length == 0:
            break
        hi, lo = x.narrow(d, 1, length - 1), x.narrow(d, 0, length - 1)
        x = hi.logical_xor(lo) if x.dtype is dt.bool else hi - lo
    if n == 0 and x is input:
        x = input.clone()
    return into_out(out, x)


def _along(t: Tensor, dim: int, start, stop) -> Tensor:
    return t[(slice(None),) * dim + (slice(start, stop),)]


def _trapezoid_checks(fname, y, x, dim):
    require_tensor(fname, "y", 1, y)
    if y.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, y.dim())
    if x is not None:
        require_tensor(fname, "x", 2, x)
        if x.dim() == 1 and x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{fname}: There must be one `x` value for each sample point")
    return d


def _spacing(x: Tensor, y: Tensor, d: int) -> Tensor:
    """The differences of x along d, shaped to broadcast against y."""
    if x.dim() == 1:
        shape = [1] * y.dim()
        shape[d] = x.shape[0]
        x = x.view(shape)
        return x[(slice(None),) * d + (slice(1, None),)] - _along(x, d, None, -1)
    dd = d - y.dim() + x.dim() if x.dim() < y.dim() else d
    if dd < 0:
        raise RuntimeError(f"trapezoid: x has too few dimensions ({x.dim()}) for y ({y.dim()})")
    return _along(x, dd, 1, None) - _along(x, dd, None, -1)


def _empty_integral(y: Tensor, d: int) -> Tensor:
    from ..creation.factories import zeros
    shape = list(y.shape)
    del shape[d]
    return zeros(shape, dtype=float_dtype(y), device=y.device) + y.sum(d) * 0


@composite()
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along `dim`: over sample points x (1-D, or broadcasting with y),
    or with constant spacing dx (default 1)."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: x and dx "
                        "cannot both be given")
    d = _trapezoid_checks("trapezoid", y, x, dim)
    if y.shape[d] == 0:
        return _empty_integral(y, d)
    if x is None:
        ends = (y.select(d, 0) + y.select(d, -1)) * 0.5
        return (y.sum(d) - ends) * (1 if dx is None else dx)
    return (_spacing(x, y, d) * (_along(y, d, 1, None) + _along(y, d, None, -1))).sum(d) / 2.0


@composite()
def trapz(y, x=None, *, dx=None, dim=-1):
    """An alias of trapezoid (dx is a float, default 1)."""
    return trapezoid(y, x, dx=dx, dim=dim)


@composite()
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along `dim` (one value fewer than y)."""
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid() received an invalid combination of arguments: "
                        "x and dx cannot both be given")
    d = _trapezoid_checks("cumulative_trapezoid", y, x, dim)
    pairs = _along(y, d, 1, None) + _along(y, d, None, -1)
    if x is None:
        return (pairs * ((1 if dx is None else dx) / 2.0)).cumsum(d)
    return (_spacing(x, y, d) * pairs).cumsum(d) / 2.0
