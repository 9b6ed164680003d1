"""CPU kernels for pooling: max, average, adaptive and unpooling kernels (one factory per
family, taking the number of spatial dims) and their gradients, through strided windows of
the padded input. NumPy code that also runs on CuPy arrays; 2-d max pooling and the max
pools' gradient scatter run in C for float32/float64 (native/pooling.c)."""
from __future__ import annotations

import functools
import math

import numpy as np

from ..arrays import asarray, module_of
from . import native
from .convolution import col2im_add, compute_array, compute_target, store, windows
from .copy import assign_array
from .indexing import add_at


def pad_lr(a: np.ndarray, left, right, value) -> np.ndarray:
    """`a` padded on its last len(left) dims by left[i] before and right[i] after."""
    if not any(left) and not any(right):
        return a
    nd = len(left)
    sizes = a.shape[-nd:]
    out = module_of(a).full(a.shape[:-nd] + tuple(n + l + r for n, l, r in
                                                  zip(sizes, left, right)), value, dtype=a.dtype)
    out[(Ellipsis,) + tuple(slice(l, l + n) for n, l in zip(sizes, left))] = a
    return out


def right_pad(sizes, out, kernel, stride, padding, dilation):
    """Padding after the input so that ceil_mode's last windows are inside the array."""
    return tuple(max(p, (o - 1) * s + d * (k - 1) + 1 - n - p) for n, o, k, s, p, d in
                 zip(sizes, out, kernel, stride, padding, dilation))


def _lowest(d: np.dtype):
    return -np.inf if d.kind in "fc" else np.iinfo(d).min


def _flat_indices(arg, out, kernel, stride, padding, dilation, in_sizes,
                  dst=None) -> np.ndarray:
    """Flat positions in the input plane of the chosen kernel offsets `arg` (..., *out),
    into `dst` (int64, arg's shape) when given."""
    starts, offsets = _window_starts(out, kernel, stride, padding, dilation, in_sizes)
    arg = arg.astype(np.intp, copy=False)      # a uint8 index is 10x slower
    if arg.__class__ is np.ndarray:
        # every arg is a valid offset: mode "wrap" skips the bounds check, and with it the
        # buffering of `dst` that mode "raise" does (~20% faster)
        flat = offsets.take(arg, out=dst, mode="wrap")
    else:
        flat = asarray(offsets, like=arg).take(arg)
        starts = asarray(starts, like=arg)
    flat += starts
    return flat


def window_argmax(win: np.ndarray) -> np.ndarray:
    """argmax over the last axis, a NaN winning (the last one, as PyTorch's loop)."""
    arg = win.argmax(-1)
    nan = np.isnan(win) if win.dtype.kind == "f" else None
    if nan is not None and nan.any():
        last = win.shape[-1] - 1 - nan[..., ::-1].argmax(-1)
        arg = np.where(nan.any(-1), last, arg)
    return arg


def _window_starts(osz, kernel, stride, padding, dilation, in_sizes):
    """(*out) flat input-plane position of each window's first element, and the flat
    offset of every kernel position from it (in np.ndindex order)."""
    nd = len(kernel)
    starts, offsets = 0, 0
    for i in range(nd):
        step = math.prod(in_sizes[i + 1:])
        shape = [1] * nd
        shape[i] = osz[i]
        starts = starts + ((np.arange(osz[i]) * stride[i] - padding[i]) * step).reshape(shape)
        shape[i] = kernel[i]
        offsets = offsets + (np.arange(kernel[i]) * (dilation[i] * step)).reshape(shape)
    return np.asarray(starts, np.int64), np.ravel(offsets)


def max_pool_cpu(out, indices, self, nd, kernel, stride, padding, dilation):
    """The windows copied once to a (K, ...) layout, then one pass per kernel offset over
    contiguous rows: keep the running maximum (NaN propagates) and the offset where a
    strictly larger value appears, so ties keep the first position, as PyTorch's loop.
    2-d pools of float32/float64 planes run in C instead (_max_pool2d_native)."""
    x = compute_array(self)
    values, flat = compute_target(out, x.dtype), compute_target(indices, np.int64)
    if nd == 2 and _max_pool2d_native(x, values, flat, kernel, stride, padding, dilation):
        store(out, values)
        store(indices, flat)
        return
    sizes = x.shape[-nd:]
    osz = out._shape[-nd:]
    xp = pad_lr(x, padding, right_pad(sizes, osz, kernel, stride, padding, dilation),
                 _lowest(x.dtype))
    win = windows(xp, kernel, stride, dilation, osz)
    shape = win.shape[:-nd]
    am = module_of(x)
    cols = am.empty((math.prod(kernel),) + shape, x.dtype)
    np.copyto(cols.reshape(tuple(kernel) + shape),
              np.moveaxis(win, tuple(range(-nd, 0)), tuple(range(nd))))
    np.copyto(values, cols[0])
    # the running offset, kept with arithmetic (masked writes are ~30x slower): a larger
    # value at offset j sets arg = max(arg, j), as every earlier offset is below j
    arg = am.zeros(shape, np.uint8 if len(cols) <= 256 else np.intp)
    larger, step = am.empty(shape, bool), am.empty(shape, arg.dtype)
    for j in range(1, len(cols)):
        np.greater(cols[j], values, out=larger)
        np.maximum(values, cols[j], out=values)
        np.multiply(larger, arg.dtype.type(j), out=step)
        np.maximum(arg, step, out=arg)
    if values.dtype.kind == "f" and np.isnan(values).any():
        for j in range(len(cols)):      # a NaN wins, the last one as PyTorch's loop
            np.copyto(arg, j, where=np.isnan(cols[j]))
    flat = _flat_indices(arg, osz, kernel, stride, padding, dilation, sizes, flat)
    if any(padding):
        # a window whose maximum is the padding value keeps PyTorch's starting index: its
        # first position that is not before the input
        bad = values == _lowest(values.dtype)
        if bad.any():
            first = _flat_indices(_not_before(osz, kernel, stride, padding, dilation).argmax(-1),
                                  osz, kernel, stride, padding, dilation, sizes)
            np.copyto(flat, asarray(first, like=flat), where=bad)
    store(out, values)
    store(indices, flat)


def _max_pool2d_native(x, values, indices, kernel, stride, padding, dilation) -> bool:
    """max_pool_cpu's values and flat indices for 2-d windows by the C kernel
    (native/pooling.c: a plane at a time in the cache, ~5x faster for the CNN step's
    pools), where it applies: C-contiguous float32/float64 planes, int64 indices."""
    if not (native.dense(x, values) and indices.__class__ is np.ndarray
            and indices.dtype == np.int64 and indices.flags.c_contiguous
            and x.shape[:-2] == values.shape[:-2] == indices.shape[:-2]
            and values.shape == indices.shape and min(kernel + stride + dilation) > 0
            and min(padding) >= 0):
        return False
    fn = native.function("pooling", "max_pool2d_" + native.suffix(x), "n" * 9 + "pppppi")
    if fn is None:
        return False
    (ih, iw), osz = x.shape[-2:], values.shape[-2:]
    tables, hp, wp = _pool_tables((ih, iw), osz, kernel, stride, padding, dilation)
    nthreads = native.threads(x.size)
    border = np.empty(nthreads * hp * wp, x.dtype)
    fn(math.prod(x.shape[:-2]), ih, iw, math.prod(osz), math.prod(kernel), hp, wp,
       *padding, native.pointer(tables), native.pointer(x), native.pointer(values),
       native.pointer(indices), native.pointer(border), nthreads)
    return True


@functools.lru_cache(maxsize=64)
def _pool_tables(sizes, osz, kernel, stride, padding, dilation):
    """The C max pool's offsets (int64: start, at, first per output, kstart, kat per kernel
    position; see native/pooling.c) and its bordered plane's (hp, wp), (0, 0) when every
    window lies inside the plane."""
    extent = [(o - 1) * s + (k - 1) * d + 1 for o, k, s, d in zip(osz, kernel, stride, dilation)]
    bordered = any(padding) or any(e > n for e, n in zip(extent, sizes))
    hp, wp = ((max(e, n + p) for e, n, p in zip(extent, sizes, padding)) if bordered
              else (0, 0))
    pitch = wp if bordered else sizes[1]
    (oh, ow), (kh, kw), (sh, sw), (ph, pw), (dh, dw) = osz, kernel, stride, padding, dilation
    i, j = np.arange(oh)[:, None], np.arange(ow)[None, :]
    ky, kx = np.arange(kh)[:, None], np.arange(kw)[None, :]
    h0, w0 = i * sh - ph, j * sw - pw
    # PyTorch's first position: the start moved into the plane by whole dilations
    h0c, w0c = np.where(h0 < 0, h0 % dh, h0), np.where(w0 < 0, w0 % dw, w0)
    parts = [i * sh * pitch + j * sw, h0 * sizes[1] + w0, h0c * sizes[1] + w0c,
             ky * dh * pitch + kx * dw, ky * dh * sizes[1] + kx * dw]
    tables = np.concatenate([np.broadcast_to(a, (oh, ow) if n < 3 else (kh, kw)).ravel()
                             for n, a in enumerate(parts)]).astype(np.int64)
    tables.flags.writeable = False
    return tables, hp, wp


def _not_before(osz, kernel, stride, padding, dilation) -> np.ndarray:
    """(*out, K) mask of the kernel positions at or after the input's start."""
    nd = len(kernel)
    mask = np.ones(tuple(osz) + tuple(kernel), dtype=bool)
    for i in range(nd):
        pos = (np.arange(osz[i])[:, None] * stride[i] - padding[i]
               + np.arange(kernel[i])[None, :] * dilation[i])
        shape = [1] * (2 * nd)
        shape[i], shape[nd + i] = osz[i], kernel[i]
        mask &= (pos >= 0).reshape(shape)
    return mask.reshape(tuple(osz) + (-1,))


def scatter_add_cpu(out, grad_output, indices, nd):
    """out's planes get grad_output added at the flat positions `indices` (np.add.at on
    the flattened planes: repeated positions accumulate)."""
    shape = out._shape
    plane = math.prod(shape[-nd:])
    rows = math.prod(shape[:-nd])
    cols = math.prod(indices._shape[-nd:])
    g = compute_array(grad_output)
    if _scatter_native(out, g, indices._array(), rows, plane, cols):
        return
    g = g.reshape(rows, cols)
    am = module_of(g)
    flat = indices._array().reshape(rows, cols) + (am.arange(rows) * plane)[:, None]
    a = out._array()
    total = a if a.dtype == g.dtype and a.flags.c_contiguous else am.empty(shape, g.dtype)
    total.fill(0)
    add_at(total.reshape(-1), flat.reshape(-1), g.reshape(-1))
    if total is not a:
        assign_array(a, total)


def _scatter_native(out, g, idx, rows, plane, cols) -> bool:
    """scatter_add_cpu by the C kernel (native/pooling.c: zero each plane and add in one
    pass instead of np.add.at's, ~4x faster for the CNN step's pools), where it applies:
    float32/float64 gradient (made C-contiguous: a sum's is expanded), int64 indices,
    every index inside its plane (else the NumPy path runs, for its error or wrapping)."""
    if not (g.__class__ is idx.__class__ is np.ndarray and g.dtype in (np.float32, np.float64)
            and idx.dtype == np.int64 and idx.flags.c_contiguous
            and g.size == idx.size == rows * cols):
        return False
    fn = native.function("pooling", "max_pool_backward_" + native.suffix(g), "nnnppppi")
    if fn is None:
        return False
    g = np.ascontiguousarray(g)
    a = out._array()
    total = a if a.dtype == g.dtype and a.flags.c_contiguous else np.empty(a.shape, g.dtype)
    bad = np.zeros(1, np.int64)
    fn(rows, plane, cols, native.pointer(g), native.pointer(idx), native.pointer(total),
       native.pointer(bad), native.threads(total.size))
    if bad[0]:
        return False
    if total is not a:
        assign_array(a, total)
    return True


def avg_divisor(sizes, out, kernel, stride, padding, count_include_pad, divisor_override):
    """Each output's divisor (broadcastable over *out), as PyTorch's avg_pool kernels."""
    if divisor_override is not None:
        return divisor_override
    nd = len(kernel)
    div = np.ones((1,) * nd, dtype=np.int64)
    for i in range(nd):
        start = np.arange(out[i]) * stride[i] - padding[i]
        end = np.minimum(start + kernel[i], sizes[i] + padding[i])
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, sizes[i])
        shape = [1] * nd
        shape[i] = out[i]
        div = div * (end - start).reshape(shape)
    return div


def _divide(total: np.ndarray, div):
    if total.dtype.kind in "iu":       # integer pools divide as C++ does (toward zero)
        q = np.abs(total) // np.abs(div)
        return np.where((total < 0) != (div < 0), -q, q)
    return total / div


def adaptive_bounds(n: int, out: int):
    """PyTorch's windows: [floor(i*n/out), ceil((i+1)*n/out)) for each output i."""
    i = np.arange(out)
    return (i * n) // out, -((-(i + 1) * n) // out)


def averaging_matrix(n: int, out: int, dtype) -> np.ndarray:
    start, end = adaptive_bounds(n, out)
    j = np.arange(n)[:, None]
    inside = (j >= start[None, :]) & (j < end[None, :])
    return inside / (end - start)[None, :].astype(dtype)


def along_dims(a: np.ndarray, mats) -> np.ndarray:
    """Multiply the last len(mats) dims of `a` by one matrix each (a separable map)."""
    nd = len(mats)
    for i, m in enumerate(mats):
        m = asarray(m, like=a)
        axis = a.ndim - nd + i
        a = np.moveaxis(np.moveaxis(a, axis, -1) @ m, -1, axis)
    return a


def max_pool_kernel(nd):
    name = f"max_pool{nd}d_with_indices"

    def kernel(out, self, kernel_size, stride=(), padding=(0,), dilation=(1,),
               ceil_mode=False):
        k, s, p, d = _pool_params(name, nd, kernel_size, stride, padding, dilation)
        max_pool_cpu(out[0], out[1], self, nd, k, s, p, d)
    return kernel


def max_pool_backward_kernel(nd):
    def kernel(out, grad_output, self, kernel_size, stride, padding, dilation, ceil_mode,
               indices):
        scatter_add_cpu(out, grad_output, indices, nd)
    return kernel


def avg_pool_kernel(nd):
    def kernel(out, self, kernel_size, stride=(), padding=(0,), ceil_mode=False,
               count_include_pad=True, divisor_override=None):
        k, s, p = _avg_args(nd, kernel_size, stride, padding, ceil_mode, count_include_pad,
                            divisor_override)
        x = compute_array(self)
        sizes, osz = x.shape[-nd:], out._shape[-nd:]
        ones = (1,) * nd
        xp = pad_lr(x, p, right_pad(sizes, osz, k, s, p, ones), 0)
        total = windows(xp, k, s, ones, osz).sum(tuple(range(-nd, 0)))
        div = _beside(avg_divisor(sizes, osz, k, s, p, count_include_pad, divisor_override),
                      total)
        assign_array(out._array(), _divide(total, div))
    return kernel


def avg_pool_backward_kernel(nd):
    def backward_kernel(out, grad_output, self, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override):
        k, s, p = _avg_args(nd, kernel_size, stride, padding, ceil_mode, count_include_pad,
                            divisor_override)
        g = compute_array(grad_output)
        sizes, osz = self._shape[-nd:], g.shape[-nd:]
        ones = (1,) * nd
        right = right_pad(sizes, osz, k, s, p, ones)
        share = g / _beside(avg_divisor(sizes, osz, k, s, p, count_include_pad,
                                         divisor_override), g)
        full = module_of(g).zeros(g.shape[:-nd] + tuple(n + a + b for n, a, b in
                                                        zip(sizes, p, right)), dtype=share.dtype)
        col2im_add(full, np.broadcast_to(share, tuple(k) + share.shape), k, s, ones)
        assign_array(out._array(), full[(Ellipsis,) + tuple(slice(a, a + n) for a, n in
                                                            zip(p, sizes))])
    return backward_kernel


def adaptive_avg_kernel(nd):
    def kernel(out, self, output_size):
        x = compute_array(self)
        mats = [averaging_matrix(n, o, x.dtype) for n, o in
                zip(x.shape[-nd:], _sizes(output_size, nd))]
        assign_array(out._array(), along_dims(x, mats))
    return kernel


def adaptive_avg_backward_kernel(nd):
    def backward_kernel(out, grad_output, self):
        g = compute_array(grad_output)
        mats = [averaging_matrix(n, o, g.dtype).T for n, o in
                zip(self._shape[-nd:], g.shape[-nd:])]
        assign_array(out._array(), along_dims(g, mats))
    return backward_kernel


def adaptive_max_kernel(nd):
    def kernel(out, self, output_size):
        x = compute_array(self)
        sizes, output_size = x.shape[-nd:], _sizes(output_size, nd)
        if 0 in out[0]._shape:
            return
        positions, index = [], []
        for i, (n, o) in enumerate(zip(sizes, output_size)):
            start, end = adaptive_bounds(n, o)
            k = int((end - start).max())
            pos = asarray(np.minimum(start[:, None] + np.arange(k)[None, :], (end - 1)[:, None]),
                          like=x)
            positions.append(pos)
            shape = [1] * (2 * nd)
            shape[2 * i], shape[2 * i + 1] = o, k
            index.append(pos.reshape(shape))
        win = x[(Ellipsis,) + tuple(index)]                 # (..., o0, k0, o1, k1, ...)
        lead = win.ndim - 2 * nd
        perm = tuple(range(lead)) + tuple(lead + 2 * i for i in range(nd)) + tuple(
            lead + 2 * i + 1 for i in range(nd))
        win = win.transpose(perm)
        kernel = win.shape[-nd:]
        win = win.reshape(win.shape[:-nd] + (math.prod(kernel),))
        arg = window_argmax(win)
        offsets = np.unravel_index(arg, kernel)
        am = module_of(x)
        flat = am.zeros(arg.shape, dtype=np.int64)
        for i in range(nd):
            shape = [1] * nd
            shape[i] = output_size[i]
            rows = am.arange(output_size[i]).reshape(shape)
            flat = flat * sizes[i] + positions[i][rows, offsets[i]]
        assign_array(out[0]._array(), win.max(-1))
        assign_array(out[1]._array(), flat)
    return kernel


def adaptive_max_backward_kernel(nd):
    def backward_kernel(out, grad_output, self, indices):
        scatter_add_cpu(out, grad_output, indices, nd)
    return backward_kernel


def max_unpool_kernel(nd):
    def kernel(out, self, indices, output_size, stride=None, padding=None):
        plane = math.prod(output_size)
        rows = math.prod(self._shape[:-nd])
        cols = math.prod(indices._shape[-nd:])
        idx = indices._array().reshape(rows, cols)
        bad = (idx < 0) | (idx >= plane)
        if bad.any():
            raise RuntimeError(f"Found an invalid max index: {int(idx[bad][0])} (output volumes "
                               f"are of size {_x(output_size)})")
        am = module_of(idx)
        flat = am.zeros(rows * plane, dtype=out._array().dtype)
        flat[(idx + (am.arange(rows) * plane)[:, None]).ravel()] = (
            self._array().reshape(rows, cols).ravel())
        assign_array(out._array(), flat.reshape(out._shape))
    return kernel


def _x(sizes) -> str:
    return "x".join(str(s) for s in sizes)


def _pool_params(name, nd, kernel_size, stride, padding, dilation=None):
    """Expand int-or-tuple parameters as PyTorch's pool functions accept them."""
    def expand(what, v, allow_empty=False, verb="must either be a single int"):
        v = tuple(v)
        if allow_empty and not v:
            return None
        if len(v) == 1:
            return v * nd
        if len(v) != nd:
            words = {2: "two", 3: "three"}[nd]
            raise RuntimeError(f"{name}: {what} {verb}, or a tuple of {words} ints")
        return v
    kernel = expand("kernel_size", kernel_size)
    stride = expand("stride", stride, True, "must either be omitted, a single int") or kernel
    padding = expand("padding", padding)
    dilation = (1,) * nd if dilation is None else expand(
        "dilation", dilation, verb="must be either a single int")
    return kernel, stride, padding, dilation


def _beside(div, like):
    """A divisor array on the device of `like` (an int divisor_override stays an int)."""
    return div if isinstance(div, int) else asarray(div, like=like)


def _avg_args(nd, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    k, s, p, _ = _pool_params(f"avg_pool{nd}d", nd, kernel_size, stride, padding)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    return k, s, p


def _sizes(output_size, nd) -> tuple:
    """An int[nd] argument given as one int stands for all dims."""
    output_size = tuple(output_size)
    return output_size * nd if len(output_size) == 1 else output_size
