"""CPU kernels for sampling and rearranging: interpolation (gathers along axes), padding,
pixel/channel shuffles and affine grids, on NumPy arrays (CuPy arrays for CUDA tensors)."""
from __future__ import annotations

import numpy as np

from ...core import dtype as dt
from ...core.promotion import opmath
from ..arrays import asarray, module_of
from .copy import assign_array


def _along(w: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    return w.reshape((-1,) + (1,) * (ndim - 1 - axis))


def plan_beside(plan, a):
    """The plan with its index and weight vectors on the GPU of the CuPy array `a`."""
    xp = module_of(a)
    return [(axis, [(xp.asarray(i), None if w is None else xp.asarray(w)) for i, w in taps])
            for axis, taps in plan]


def gather_axes(a: np.ndarray, plan) -> np.ndarray:
    """Apply `plan` [(axis, taps)], taps being [(index, weight or None)], to `a`: along each
    axis out[j] = sum_k weight_k[j] * a[index_k[j]]."""
    if a.__class__ is not np.ndarray:
        plan = plan_beside(plan, a)
    for axis, taps in plan:
        out = None
        for idx, w in taps:
            v = np.take(a, idx, axis=axis)
            if w is not None:
                v = v * _along(w, axis, a.ndim)
            out = v if out is None else out + v
        a = out
    return a


def _compute(a: np.ndarray, d: dt.dtype) -> np.ndarray:
    ct = opmath(d)
    return a if a.dtype == ct else a.astype(ct)


def _too_small(mode, nd, sizes, out):
    if nd == 1:
        return f"input (W: {sizes[0]}) is too small. Calculated output W: {out[0]}"
    if nd == 2:
        sep = "" if mode == "reflect" else " "
        return (f"input (H: {sizes[0]}, W: {sizes[1]}{sep}) is too small. Calculated output "
                f"H: {out[0]} W: {out[1]}")
    return (f"input (D: {sizes[0]} H: {sizes[1]}, W: {sizes[2]}) is too small. Calculated "
            f"output D: {out[0]} H: {out[1]} W: {out[2]}")


def pad_geometry(name, mode, nd, self, padding):
    """Output shape of a reflection/replication pad after PyTorch's checks."""
    shape = self._shape
    if len(shape) not in (nd + 1, nd + 2) or 0 in shape[-nd - 1:]:
        raise RuntimeError(f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with possibly 0 "
                           "batch size and other non-zero dimensions for input, but got: "
                           f"{list(shape)}")
    if len(padding) != 2 * nd:
        raise RuntimeError(f"{name}: expected padding of length {2 * nd}, but got "
                           f"{len(padding)}")
    sizes = shape[-nd:]
    if mode == "reflect":
        for k in range(nd):     # W first, as PyTorch checks
            left, right = padding[2 * k], padding[2 * k + 1]
            d = len(shape) - 1 - k
            if left >= shape[d] or right >= shape[d]:
                raise RuntimeError(f"Argument #{4 + 2 * k}: Padding size should be less than the "
                                   "corresponding input dimension, but got: padding "
                                   f"({left}, {right}) at dimension {d} of input {list(shape)}")
    out = tuple(n + padding[2 * (nd - 1 - i)] + padding[2 * (nd - 1 - i) + 1]
                for i, n in enumerate(sizes))
    if all(o < 1 for o in out) or any(o < 0 for o in out):
        raise RuntimeError(_too_small(mode, nd, sizes, out))
    if self.dtype is dt.bool:
        raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")
    return shape[:-nd] + out


def pixel_shuffle_cpu(out, self, upscale_factor):
    r = upscale_factor
    a = self._array()
    *batch, c, h, w = a.shape
    nb = len(batch)
    a = a.reshape(*batch, c // (r * r), r, r, h, w)
    a = a.transpose(*range(nb + 1), nb + 3, nb + 1, nb + 4, nb + 2)
    assign_array(out._array(), a.reshape(out._shape))


def pixel_unshuffle_cpu(out, self, downscale_factor):
    r = downscale_factor
    a = self._array()
    *batch, c, h, w = a.shape
    nb = len(batch)
    a = a.reshape(*batch, c, h // r, r, w // r, r)
    a = a.transpose(*range(nb + 1), nb + 2, nb + 4, nb + 1, nb + 3)
    assign_array(out._array(), a.reshape(out._shape))


def channel_shuffle_cpu(out, self, groups):
    a = self._array()
    n, c, *rest = a.shape
    a = a.reshape(n, groups, c // groups, *rest).swapaxes(1, 2)
    assign_array(out._array(), a.reshape(out._shape))


def _linspace_from_neg_one(n: int, align_corners: bool, ct) -> np.ndarray:
    if n <= 1:
        return np.zeros(1, dtype=ct)
    r = np.linspace(-1, 1, n).astype(ct)
    return r if align_corners else r * ct(n - 1) / ct(n)


def base_grid(sizes, align_corners: bool, ct) -> np.ndarray:
    """(prod(sizes), k + 1) homogeneous coordinates [x, y, (z,) 1] of every output point,
    x along the last of the spatial `sizes`."""
    k = len(sizes)
    axes = [_linspace_from_neg_one(n, align_corners, ct) for n in sizes]
    grid = np.ones(tuple(sizes) + (k + 1,), dtype=ct)
    for d in range(k):            # coordinate d runs along spatial dim k-1-d
        shape = [1] * k
        shape[k - 1 - d] = sizes[k - 1 - d]
        grid[..., d] = axes[k - 1 - d].reshape(shape)
    return grid.reshape(-1, k + 1)


def affine_grid_cpu(out, theta, size, align_corners):
    th = _compute(theta._array(), theta.dtype)
    base = asarray(base_grid(tuple(size)[2:], align_corners, th.dtype.type), like=th)
    assign_array(out._array(), np.matmul(base, th.transpose(0, 2, 1)).reshape(out._shape))
