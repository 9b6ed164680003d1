"""torch.gradient: derivatives estimated by finite differences, as NumPy's gradient.

Interior points take the second-order central difference (on uneven coordinates, the
weighted one that is exact for quadratics); the edges take one-sided differences of order
`edge_order`. Written in slicing and arithmetic ops, so it is differentiable.
"""
from __future__ import annotations

import numbers

from ...core import dtype as dt
from ...core.tensor import Tensor
from ..registry import composite
from ..shape.joining import cat


def _dims(input: Tensor, dim):
    if dim is None:
        return list(range(input.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    wrapped = []
    for d in dims:
        w = d % max(input.dim(), 1)
        if w in wrapped:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        wrapped.append(w)
    return wrapped


def _spacings(input: Tensor, spacing, dims, dim_given: bool):
    """One spacing per dim: a number (uniform) or a 1-D tensor of coordinates."""
    if spacing is None:
        spacing = 1
    if isinstance(spacing, (numbers.Number, Tensor)) and not (
            isinstance(spacing, Tensor) and spacing.dim() > 0):
        value = spacing.item() if isinstance(spacing, Tensor) else spacing
        return [value] * len(dims)
    spacing = list(spacing)
    if len(spacing) != len(dims):
        if dim_given:
            raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but "
                               f"got a spacing argument of length {len(spacing)} and a dim "
                               f"argument of length {len(dims)}.")
        raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar, or a "
                           f"list of length equal to 'self.dim() = {input.dim()}', since dim "
                           f"argument was not given, but got a list of length {len(spacing)}")
    for s, d in zip(spacing, dims):
        if isinstance(s, Tensor) and s.dim() > 0 and (s.dim() != 1 or
                                                      s.shape[0] != input.shape[d]):
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device "
                               f"and of size {input.shape[d]} along dim {d}, the size of input "
                               f"there, but got coordinates of shape {tuple(s.shape)}")
    return [s.item() if isinstance(s, Tensor) and s.dim() == 0 else s for s in spacing]


def _along(t: Tensor, d: int, start: int, length: int) -> Tensor:
    return t.narrow(d, start % t.shape[d], length)


def _shaped(x: Tensor, d: int, ndim: int) -> Tensor:
    """A 1-D tensor of per-position values along dim d, broadcastable against the input."""
    return x.reshape([-1 if i == d else 1 for i in range(ndim)])


def _uniform(f: Tensor, d: int, h, edge_order: int) -> Tensor:
    n = f.shape[d]
    interior = (_along(f, d, 2, n - 2) - _along(f, d, 0, n - 2)) / (2 * h)
    if edge_order == 1:
        first = (_along(f, d, 1, 1) - _along(f, d, 0, 1)) / h
        last = (_along(f, d, -1, 1) - _along(f, d, -2, 1)) / h
    else:
        first = (-1.5 * _along(f, d, 0, 1) + 2 * _along(f, d, 1, 1)
                 - 0.5 * _along(f, d, 2, 1)) / h
        last = (0.5 * _along(f, d, -3, 1) - 2 * _along(f, d, -2, 1)
                + 1.5 * _along(f, d, -1, 1)) / h
    return cat([first, interior, last], d)


def _uneven(f: Tensor, d: int, x: Tensor, edge_order: int) -> Tensor:
    n, ndim = f.shape[d], f.dim()
    x = x.to(f.dtype)
    step = x[1:] - x[:-1]
    hs, hd = _shaped(step[:-1], d, ndim), _shaped(step[1:], d, ndim)
    interior = (hs * hs * _along(f, d, 2, n - 2) + (hd * hd - hs * hs) * _along(f, d, 1, n - 2)
                - hd * hd * _along(f, d, 0, n - 2)) / (hs * hd * (hd + hs))
    if edge_order == 1:
        first = (_along(f, d, 1, 1) - _along(f, d, 0, 1)) / step[0]
        last = (_along(f, d, -1, 1) - _along(f, d, -2, 1)) / step[-1]
    else:
        h1, h2 = step[0], step[1]
        a, b, c = -(2 * h1 + h2) / (h1 * (h1 + h2)), (h1 + h2) / (h1 * h2), \
            -h1 / (h2 * (h1 + h2))
        first = a * _along(f, d, 0, 1) + b * _along(f, d, 1, 1) + c * _along(f, d, 2, 1)
        h1, h2 = step[-2], step[-1]
        a, b, c = h2 / (h1 * (h1 + h2)), -(h2 + h1) / (h1 * h2), (2 * h2 + h1) / (h2 * (h1 + h2))
        last = a * _along(f, d, -3, 1) + b * _along(f, d, -2, 1) + c * _along(f, d, -1, 1)
    return cat([first, interior, last], d)


@composite()
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative of input along each of `dim` (every dim by default), one tensor per
    dim, with the sample spacing or the coordinates `spacing`."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = _dims(input, dim)
    spacings = _spacings(input, spacing, dims, dim is not None)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    f = input if input.dtype.is_floating_point or input.dtype.is_complex \
        else input.to(dt.get_default_dtype())
    return tuple(_uneven(f, d, s, edge_order) if isinstance(s, Tensor)
                 else _uniform(f, d, s, edge_order) for d, s in zip(dims, spacings))
