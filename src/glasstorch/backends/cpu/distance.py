"""CPU kernels for distances (cdist, pdist): p-norm distances between rows, in row chunks."""
from __future__ import annotations

import math

import numpy as np

from .. import arrays
from ...core import dtype as dt
from ...core.promotion import opmath
from .pointwise import assign, check_dtype


_FULL_FLOATS = frozenset((dt.float32, dt.float64))     # PyTorch's CPU loops have no 16-bit ones

_CHUNK = 1 << 22          # elements of the differences held at once


def _row_distances(d: np.ndarray, p: float) -> np.ndarray:
    """p-norm over the last axis of absolute differences `d`."""
    if p == 0:
        return np.count_nonzero(d, axis=-1).astype(d.dtype)
    if p == 1:
        return d.sum(-1)
    if p == 2:
        return np.sqrt((d * d).sum(-1))
    if math.isinf(p):
        return d.max(-1)
    return (d ** p).sum(-1) ** (1.0 / p)


def pairwise_p_distances(a: np.ndarray, b: np.ndarray, p: float) -> np.ndarray:
    """Distances between the rows of a (..., r1, m) and b (..., r2, m), batch dims
    broadcast: (..., r1, r2)."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    r1, r2, m = a.shape[-2], b.shape[-2], a.shape[-1]
    out = arrays.module_of(a).zeros(batch + (r1, r2), a.dtype)
    if m == 0 or out.size == 0:
        return out
    step = max(1, _CHUNK // max(1, r2 * m * max(1, math.prod(batch))))
    for start in range(0, r1, step):
        rows = a[..., start:start + step, None, :]
        out[..., start:start + step, :] = _row_distances(np.abs(rows - b[..., None, :, :]), p)
    return out


def cdist_forward_cpu(out, x1, x2, p, compute_mode):
    check_dtype("cdist", x1.dtype, _FULL_FLOATS)
    cd = opmath(x1.dtype)
    a, b = x1._array().astype(cd, copy=False), x2._array().astype(cd, copy=False)
    assign(out, pairwise_p_distances(a, b, p))


def euclidean_dist_cpu(out, x1, x2):
    cd = opmath(x1.dtype)
    a, b = x1._array().astype(cd, copy=False), x2._array().astype(cd, copy=False)
    an = (a * a).sum(-1, keepdims=True)
    bn = (b * b).sum(-1, keepdims=True)
    left = np.concatenate([a * cd.type(-2), an, np.ones_like(an)], -1)
    right = np.concatenate([b, np.ones_like(bn), bn], -1)
    assign(out, np.sqrt(np.maximum(left @ np.swapaxes(right, -1, -2), 0)))


def pdist_forward_cpu(out, self, p=2.0):
    check_dtype("pdist", self.dtype, _FULL_FLOATS)
    n = self.shape[0]
    if n < 2:
        return
    x = self._array().astype(opmath(self.dtype), copy=False)
    full = pairwise_p_distances(x, x, p)
    assign(out, full[arrays.module_of(x).triu_indices(n, 1)])
