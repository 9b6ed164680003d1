"""CPU kernels for sampling and rearranging: interpolation (gathers along axes), padding,
pixel/channel shuffles and affine grids, on NumPy arrays (CuPy arrays for CUDA tensors)."""
from __future__ import annotations

import numpy as np

from ...core import dtype as dt
from ...core.promotion import opmath
from ..arrays import asarray, module_of
from .copy import assign_array
from ...core.tensor import Tensor
from .indexing import add_at
import math


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


def pad_kernel(kind, nd):
    mode = "reflect" if kind == "reflection" else "replicate"

    def kernel(out, self, padding):
        a = self._array()
        assign_array(out._array(), gather_axes(a, _pad_plan(mode, a.shape[-nd:], padding,
                                                            a.ndim)))
    return kernel


def pad_backward_kernel(kind, nd):
    mode = "reflect" if kind == "reflection" else "replicate"

    def backward_kernel(out, grad_output, self, padding):
        g = _compute(grad_output._array(), grad_output.dtype)
        plan = _pad_plan(mode, self._shape[-nd:], padding, g.ndim)
        assign_array(out._array(), scatter_axes(g, plan, self._shape))
    return backward_kernel


def _split(args, weighted):
    """(align_corners, scales) from the arguments after output_size."""
    return (args[0], args[1:]) if weighted else (False, args)


def upsample_kernel(kind, nd, weighted):
    def kernel(out, self, output_size, *rest):
        align_corners, scales = _split(rest, weighted)
        a = self._array()
        plan = _upsample_plan(kind, a.ndim, a.shape[2:], output_size, align_corners, scales,
                              self.dtype, forward=True)
        if weighted:
            a = _compute(a, self.dtype)
        assign_array(out._array(), gather_axes(a, plan))
    return kernel


def upsample_backward_kernel(kind, nd, weighted):
    def backward_kernel(out, grad_output, output_size, input_size, *rest):
        align_corners, scales = _split(rest, weighted)
        g = _compute(grad_output._array(), grad_output.dtype)
        plan = _upsample_plan(kind, g.ndim, input_size[2:], output_size, align_corners,
                              scales, grad_output.dtype)
        assign_array(out._array(), scatter_axes(g, plan, tuple(input_size)))
    return backward_kernel


def grid_sampler_kernel(nd):
    def kernel(out, input, grid, interpolation_mode, padding_mode, align_corners):
        _sample(out, input, grid, nd, interpolation_mode, padding_mode, align_corners)
    return kernel


def grid_sampler_backward_kernel(nd):
    def backward_kernel(out, grad_output, input, grid, interpolation_mode, padding_mode,
                        align_corners, output_mask):
        _sample_backward(out, grad_output, input, grid, nd, interpolation_mode, padding_mode,
                         align_corners, output_mask)
    return backward_kernel


def scatter_axes(g: np.ndarray, plan, in_shape) -> np.ndarray:
    """The adjoint of `gather_axes`: every gradient element is added back to the input
    positions (of an input shaped `in_shape`) it was read from, with its weight. Runs of
    equal positions are summed by `add.reduceat` (sorted first unless already monotone), on
    a GPU by atomic adds."""
    device = g.__class__ is not np.ndarray
    if device:
        plan = plan_beside(plan, g)
    for axis, taps in reversed(plan):
        shape = list(g.shape)
        shape[axis] = in_shape[axis]
        out = module_of(g).zeros(shape, dtype=g.dtype) if device else np.zeros(shape, g.dtype)
        key = [slice(None)] * g.ndim
        for idx, w in taps:
            if not idx.size or not g.size:
                continue
            vals = g if w is None else g * _along(w, axis, g.ndim)
            if device:
                key[axis] = idx
                add_at(out, tuple(key), vals)
                continue
            if np.any(idx[1:] < idx[:-1]):
                order = np.argsort(idx, kind="stable")
                idx, vals = idx[order], np.take(vals, order, axis=axis)
            starts = np.flatnonzero(np.concatenate(([True], idx[1:] != idx[:-1])))
            key[axis] = idx[starts]
            out[tuple(key)] += np.add.reduceat(vals, starts, axis=axis)
        g = out
    return g


def _spatial_plan(ndim: int, per_axis) -> list:
    """[(axis, taps)] over the last len(per_axis) axes, innermost first; None skips an axis."""
    nd = len(per_axis)
    return [(ndim - nd + i, taps) for i, taps in reversed(list(enumerate(per_axis)))
            if taps is not None]


def _pad_index(mode: str, n: int, left: int, right: int) -> np.ndarray:
    """Input positions of the padded axis (PyTorch's formulas, negative pads included)."""
    j = np.arange(n + left + right)
    if mode == "reflect":
        idx = np.where(j < left, 2 * left - j, np.where(j < n + left, j, 2 * (n + left - 1) - j))
    else:
        idx = np.clip(j, left, n + left - 1)
    return idx - max(left, 0) + max(-left, 0)


def _pad_plan(mode, sizes, padding, ndim):
    nd = len(sizes)
    per_axis = []
    for i, n in enumerate(sizes):
        left, right = padding[2 * (nd - 1 - i)], padding[2 * (nd - 1 - i) + 1]
        per_axis.append(None if left == right == 0 else
                        [(_pad_index(mode, n, left, right), None)])
    return _spatial_plan(ndim, per_axis)


def _scale_value(scale, n_in: int, n_out: int, ct):
    """PyTorch's compute_scales_value: 1/scale when a positive scale was given, else in/out."""
    if scale is not None and scale > 0:
        return ct(1.0 / scale)
    return ct(n_in) / ct(n_out)


def _nearest_taps(n_in, n_out, scale, exact):
    j = np.arange(n_out)
    if not exact and n_out == n_in:
        idx = j
    elif not exact and n_out == 2 * n_in:
        idx = j >> 1
    else:           # always in float32, as PyTorch
        s = _scale_value(scale, n_in, n_out, np.float32)
        pos = (j.astype(np.float32) + np.float32(0.5)) * s if exact else j.astype(np.float32) * s
        idx = np.minimum(np.floor(pos).astype(np.int64), n_in - 1)
    return [(idx, None)]


def _source_index(n_in, n_out, align_corners, scale, ct, cubic):
    """Real-valued source positions of the outputs (area_pixel_compute_source_index)."""
    j = np.arange(n_out, dtype=ct)
    if align_corners:
        s = ct(n_in - 1) / ct(n_out - 1) if n_out > 1 else ct(0)
        return s * j
    s = _scale_value(scale, n_in, n_out, ct)
    src = s * (j + ct(0.5)) - ct(0.5)
    return src if cubic else np.maximum(src, ct(0))


def _guard(real, n_in):
    idx = np.minimum(np.floor(real).astype(np.int64), n_in - 1)
    lam = np.clip(real - idx.astype(real.dtype), 0, 1).astype(real.dtype)
    return idx, lam


def _linear_taps(n_in, n_out, align_corners, scale, ct, wt, rounding="both"):
    """The two taps of each output along one axis. The weights are rounded to `wt` (the
    tensors' dtype) as PyTorch stores them: "both" each from its float value; "lambda1"
    lambda1 first and lambda0 as 1 minus the rounded lambda1, rounded again (its linear and
    trilinear forward kernels: HelperInterpLinear keeps the weights in the tensors' dtype);
    "none" not at all (its bilinear forward kernel keeps float weights)."""
    if n_out == n_in:
        return None
    idx0, lam1 = _guard(_source_index(n_in, n_out, align_corners, scale, ct, False), n_in)
    idx1 = idx0 + (idx0 < n_in - 1)
    if rounding == "none":
        return [(idx0, ct(1) - lam1), (idx1, lam1)]
    if rounding == "lambda1":
        lam1 = lam1.astype(wt).astype(ct)
    lam0 = ct(1) - lam1
    return [(idx0, lam0.astype(wt).astype(ct)), (idx1, lam1.astype(wt).astype(ct))]


_A = -0.75


def _cubic_coefficients(t):
    """The four cubic convolution weights at fraction t (an array, computed in its own
    type, or a tensor)."""
    ct = t.dtype.type if isinstance(t, np.ndarray) else float
    a, one = ct(_A), ct(1)

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + one

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return far(t + one), near(t), near(one - t), far(2 * one - t)


def _cubic_taps(n_in, n_out, align_corners, scale, ct, wt):
    idx, t = _guard(_source_index(n_in, n_out, align_corners, scale, ct, True), n_in)
    weights = _cubic_coefficients(t)
    return [(np.clip(idx - 1 + k, 0, n_in - 1), w.astype(wt).astype(ct))
            for k, w in enumerate(weights)]


def _upsample_plan(kind, ndim, in_sizes, out_sizes, align_corners, scales, d: dt.dtype,
                   forward: bool = False):
    ct = opmath(d).type
    # the linear modes' forward weights as PyTorch's CPU kernels round them (_linear_taps)
    rounding = ("none" if len(in_sizes) == 2 else "lambda1") if forward else "both"
    per_axis = []
    for n_in, n_out, s in zip(in_sizes, out_sizes, scales):
        if kind in ("nearest", "_nearest_exact"):
            per_axis.append(_nearest_taps(n_in, n_out, s, kind != "nearest"))
        elif kind == "bicubic":
            per_axis.append(_cubic_taps(n_in, n_out, align_corners, s, ct, d.np))
        else:
            per_axis.append(_linear_taps(n_in, n_out, align_corners, s, ct, d.np, rounding))
    return _spatial_plan(ndim, per_axis)


_BILINEAR, _NEAREST, BICUBIC = 0, 1, 2

_ZEROS, _BORDER, _REFLECTION = 0, 1, 2


def _clip(src, size, grad):
    """Clamp into [0, size-1] (NaN to 0, as PyTorch's vectorised clamp); the gradient is
    cut at and beyond the borders."""
    high = src.dtype.type(size - 1)
    inside = (src > 0) & (src < high)
    grad = np.where(inside, grad, src.dtype.type(0))
    return np.where(np.isnan(src), src.dtype.type(0), np.clip(src, 0, high)), grad


def _reflect(src, twice_low, twice_high, grad):
    if twice_low == twice_high:
        return np.zeros_like(src), np.zeros_like(grad)
    ct = src.dtype.type
    low, span = ct(twice_low / 2), ct((twice_high - twice_low) / 2)
    shifted = src - low
    grad = np.where(shifted < 0, -grad, grad)
    shifted = np.abs(shifted)
    extra = np.fmod(shifted, span)
    flips = np.floor(shifted / span)
    even = np.fmod(flips, 2) == 0
    return np.where(even, extra + low, span - extra + low), np.where(even, grad, -grad)


def _pad_coordinates(src, size, padding_mode, align_corners, grad):
    """PyTorch's compute_coordinates (with the gradient factor it implies)."""
    if padding_mode == _BORDER:
        src, grad = _clip(src, size, grad)
    elif padding_mode == _REFLECTION:
        if align_corners:
            src, grad = _reflect(src, 0, 2 * (size - 1), grad)
        else:
            src, grad = _reflect(src, -1, 2 * size - 1, grad)
        src, grad = _clip(src, size, grad)
    return src, grad


def _safe(src):
    """Non-finite or huge coordinates as -100 (outside), so they index nothing."""
    bad = ~np.isfinite(src) | (src > 2 ** 31 - 2) | (src < -2 ** 31)
    return np.where(bad, src.dtype.type(-100), src)


def _unnormalise(coord, size, align_corners):
    ct = coord.dtype.type
    if align_corners:
        return (coord + ct(1)) / ct(2) * ct(size - 1), ct((size - 1) / 2)
    return ((coord + ct(1)) * ct(size) - ct(1)) / ct(2), ct(size / 2)


def _cubic_coefficient_grads(t):
    """PyTorch's get_cubic_coefficients_grad: the derivatives with respect to -t."""
    ct = t.dtype.type if isinstance(t, np.ndarray) else float
    a, one = ct(_A), ct(1)
    x0, x1, x2, x3 = -one - t, -t, one - t, 2 * one - t
    return ((-3 * a * x0 - 10 * a) * x0 - 8 * a,
            (-3 * (a + 2) * x1 - 2 * (a + 3)) * x1,
            (3 * (a + 2) * x2 - 2 * (a + 3)) * x2,
            (3 * a * x3 - 10 * a) * x3 + 8 * a)


def _grid_taps(grid: np.ndarray, sizes, mode, padding_mode, align_corners, need_grad,
               grid_t=None):
    with np.errstate(invalid="ignore", over="ignore"):      # inf/NaN points are allowed
        return _grid_taps_quiet(grid, sizes, mode, padding_mode, align_corners, need_grad,
                                grid_t)


def _const(a: np.ndarray, like: Tensor) -> Tensor:
    out = Tensor._empty(a.shape, like.dtype if a.dtype.kind == "f" else dt.int64, like.device)
    assign_array(out._array(), a)
    return out


def _linearised(src, g, m, grid_t, d):
    """The source coordinate as a function of grid_t (N, P, k): exact in value and slope,
    the padding fold being piecewise linear."""
    m = np.broadcast_to(asarray(m, like=src), src.shape)
    return grid_t[..., d] * _const(m, grid_t) + _const(src - g[..., d] * m, grid_t)


def _grid_taps_quiet(grid, sizes, mode, padding_mode, align_corners, need_grad, grid_t):
    """[(flat index, in-bounds mask, weight, d weight / d grid per grid dim or None)] over
    the (N, P) output points; `sizes` are the input's spatial sizes (outermost first).
    Non-finite coordinates read nothing; in 2-d their weights stay NaN (PyTorch's
    vectorised kernel), in 3-d they become far-away points first (its scalar kernel).
    With `grid_t` (the grid as a tensor, (N, P, k)) weights and their derivatives are
    tensors computed from it (differentiable); indices and masks stay arrays."""
    k = len(sizes)
    n = grid.shape[0]
    g = grid.reshape(n, -1, k)
    ct = g.dtype.type
    dims = list(reversed(sizes))            # grid dim d indexes input dim -1-d
    strides = [math.prod(dims[:d]) for d in range(k)]
    lift = (lambda a: a) if grid_t is None else (lambda a: _const(asarray(a), grid_t))
    taps = []
    if mode == BICUBIC:
        src, mult = zip(*(_unnormalise(g[..., d], dims[d], align_corners) for d in range(k)))
        base = [np.floor(s) for s in src]
        t = [s - b for s, b in zip(src, base)]
        if grid_t is not None:
            t = [_linearised(s, g, m, grid_t, d) - _const(b, grid_t)
                 for d, (s, m, b) in enumerate(zip(src, mult, base))]
            mult = [float(m) for m in mult]
        coef = [_cubic_coefficients(x) for x in t]
        dcoef = [_cubic_coefficient_grads(x) for x in t] if need_grad else None
        for j in range(4):
            for i in range(4):
                flat, valid = 0, True
                for d, off in ((0, i), (1, j)):
                    c, _ = _pad_coordinates(base[d] + ct(off - 1), dims[d], padding_mode,
                                            align_corners, ct(0))
                    c = np.trunc(_safe(c)).astype(np.int64)
                    valid = valid & (c >= 0) & (c < dims[d])
                    flat = flat + np.clip(c, 0, dims[d] - 1) * strides[d]
                w = coef[0][i] * coef[1][j]
                dw = None
                if need_grad:
                    dw = (-dcoef[0][i] * coef[1][j] * mult[0],
                          -coef[0][i] * dcoef[1][j] * mult[1])
                taps.append((flat, valid, w, dw))
        return taps
    src, mult = [], []
    for d in range(k):
        s, m = _unnormalise(g[..., d], dims[d], align_corners)
        s, m = _pad_coordinates(s, dims[d], padding_mode, align_corners,
                                module_of(s).full(s.shape, m, dtype=s.dtype))
        src.append(s if k == 2 else _safe(s))
        mult.append(m)
    if grid_t is not None and mode != _NEAREST:
        src_t = [_linearised(src[d], g, mult[d], grid_t, d) for d in range(k)]
        mult = [lift(m) for m in mult]
    if mode == _NEAREST:
        flat, valid = 0, True
        for d in range(k):
            c = np.rint(_safe(src[d])).astype(np.int64)
            valid = valid & (c >= 0) & (c < dims[d])
            flat = flat + np.clip(c, 0, dims[d] - 1) * strides[d]
        return [(flat, valid, None, None)]
    low = [np.floor(s) for s in src]
    if grid_t is None:
        weights = [((low[d] + ct(1)) - src[d], src[d] - low[d]) for d in range(k)]
    else:
        weights = [(lift(low[d] + ct(1)) - src_t[d], src_t[d] - lift(low[d]))
                   for d in range(k)]
    low = [_safe(x).astype(np.int64) for x in low]
    for bits in np.ndindex(*(2,) * k):      # the outermost dim's bit first, x fastest
        bits = bits[::-1]
        flat, valid, w = 0, True, None
        for d in range(k):
            c = low[d] + bits[d]
            valid = valid & (c >= 0) & (c < dims[d])
            flat = flat + np.clip(c, 0, dims[d] - 1) * strides[d]
            w = weights[d][bits[d]] if w is None else w * weights[d][bits[d]]
        dw = None
        if need_grad:
            dw = []
            for e in range(k):
                f = mult[e] if bits[e] else -mult[e]
                for d in range(k):
                    if d != e:
                        f = f * weights[d][bits[d]]
                dw.append(f)
        taps.append((flat, valid, w, dw))
    return taps


def _sample(out, input, grid, nd, mode, padding_mode, align_corners):
    if not out.numel():
        return
    a = input._array()      # float16/bfloat16 round every step, as PyTorch's kernel
    n, c = a.shape[:2]
    sizes = a.shape[2:]
    flat_in = a.reshape(n, c, math.prod(sizes))
    acc = None
    for flat, valid, w, _ in _grid_taps(grid._array(), sizes, mode, padding_mode,
                                        align_corners, False):
        v = np.where(valid[:, None, :], np.take_along_axis(flat_in, flat[:, None, :], axis=2),
                     a.dtype.type(0))
        if w is not None:
            v = v * w[:, None, :]
        acc = v if acc is None else acc + v
    if acc is None:
        return
    assign_array(out._array(), acc.reshape(out._shape))


def _sample_backward(grads, grad_output, input, grid, nd, mode, padding_mode, align_corners,
                     output_mask):
    grad_input, grad_grid = grads
    if not grad_output.numel():
        for t in grads:
            assign_array(t._array(), np.zeros((), t._array().dtype))
        return
    a = input._array()
    n, c = a.shape[:2]
    sizes = a.shape[2:]
    total = math.prod(sizes)
    go = grad_output._array().astype(a.dtype).reshape(n, c, -1)
    want_grid = output_mask[1] and mode != _NEAREST
    taps = _grid_taps(grid._array(), sizes, mode, padding_mode, align_corners, want_grid)
    xp = module_of(a)
    if output_mask[0]:
        rows = (xp.arange(n * c) * total).reshape(n, c, 1)
        keys, vals = [], []
        for flat, valid, w, _ in taps:
            wt = valid.astype(go.dtype) if w is None else np.where(valid, w, 0)
            keys.append((rows + flat[:, None, :]).ravel())
            vals.append((go * wt[:, None, :]).ravel())
        summed = np.bincount(np.concatenate(keys), np.concatenate(vals),
                             minlength=n * c * total) if n * c * total else xp.zeros(0)
        assign_array(grad_input._array(), summed.reshape(grad_input._shape))
    if output_mask[1]:
        k = grid._shape[-1]
        gg = xp.zeros(grid._shape[:1] + (go.shape[2], k), dtype=go.dtype)
        if want_grid:
            flat_in = a.reshape(n, c, -1)
            for flat, valid, w, dw in taps:
                v = np.take_along_axis(flat_in, flat[:, None, :], axis=2)
                s = np.where(valid, (v * go).sum(axis=1), 0)
                for e in range(k):
                    gg[..., e] += s * dw[e]
        assign_array(grad_grid._array(), gg.reshape(grid._shape))


def constant_pad_cpu(out, self, pad, value=0):
    o = out._array()
    a = self._array()
    n = self.dim()
    src, dst = [slice(None)] * n, [slice(None)] * n
    for k in range(len(pad) // 2):
        d = n - 1 - k
        left, right = pad[2 * k], pad[2 * k + 1]
        src[d] = slice(max(-left, 0), a.shape[d] - max(-right, 0))
        dst[d] = slice(max(left, 0), o.shape[d] - max(right, 0))
    if any(p > 0 for p in pad):
        assign_array(o, np.asarray(value.item() if isinstance(value, Tensor) else value))
    assign_array(o[tuple(dst) + (Ellipsis,)], a[tuple(src)])
