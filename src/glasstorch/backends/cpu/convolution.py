"""CPU kernels for convolution: im2col/col2im over NumPy arrays (in C for 2-d float32/float64,
native/convolution.c) and batched matrix products, in memory-bounded blocks of the batch,
spread over the kernel pool's threads with BLAS on one thread (each block's copies and adds
run in parallel too, and OpenBLAS's threads do not spin on the cores the pool needs). Also
run on CuPy arrays for CUDA tensors."""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...core import dtype as dt
from ...core.promotion import opmath
from ...core.shape import channels_last_strides, is_channels_last, is_contiguous
from ...core.tensor import Tensor
from ..arrays import module_of, round_through
from . import linalg, native, parallel
from .blas_threads import one_thread
from .copy import assign_array
from .linalg import ONE_THREAD_MNK


def pad_array(a: np.ndarray, padding, value=0) -> np.ndarray:
    """`a` with its last len(padding) dims padded by `padding` on both sides with `value`."""
    if not any(padding):
        return a
    nd = len(padding)
    shape = a.shape[:-nd] + tuple(s + 2 * p for s, p in zip(a.shape[-nd:], padding))
    out = module_of(a).full(shape, value, dtype=a.dtype)
    inside = out[(Ellipsis,) + tuple(slice(p, p + s) for s, p in zip(a.shape[-nd:], padding))]
    if rows_copy(a, a) and a.size:
        np.copyto(void_rows(inside, out), void_rows(a, a))
    else:
        inside[...] = a
    return out


def rows_copy(v, base) -> bool:
    """Whether v, lying in `base`, can be copied by void_rows: NumPy arrays, base
    C-contiguous, v's last axis at a stride of one element."""
    return (base.__class__ is np.ndarray and base.flags.c_contiguous and v.ndim > 0
            and v.strides[-1] == v.itemsize)


def void_rows(v, base) -> np.ndarray:
    """v (..., n) as an (...) array of n-element void rows over base's memory, for rows_copy
    arrays. NumPy's copy loops over the last axis, so an element-wise copy runs one short
    loop per row (14 floats for 14x14 planes); copying void rows moves each row at once,
    1.5-2.5x faster for such planes."""
    row = np.dtype((np.void, v.shape[-1] * v.itemsize))
    offset = v.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return np.ndarray(v.shape[:-1], row, base, offset, v.strides[:-1])


def windows(a: np.ndarray, kernel, stride, dilation, out_sizes) -> np.ndarray:
    """Read-only view of a (..., *spatial) array as (..., *out_sizes, *kernel) windows."""
    nd = len(kernel)
    lead, sp = a.strides[:-nd], a.strides[-nd:]
    shape = a.shape[:-nd] + tuple(out_sizes) + tuple(kernel)
    strides = (lead + tuple(st * s for st, s in zip(sp, stride))
               + tuple(st * d for st, d in zip(sp, dilation)))
    if a.__class__ is np.ndarray:
        return as_strided(a, shape, strides, writeable=False)
    return module_of(a).lib.stride_tricks.as_strided(a, shape, strides)


def col2im_add(full: np.ndarray, cols: np.ndarray, kernel, stride, dilation) -> None:
    """full[..., k*d + i*s] += cols[k][..., i] for every kernel offset k: the adjoint of
    reading `windows`. `cols` is laid out (*kernel, ..., *in_sizes)."""
    nd = len(kernel)
    in_sizes = cols.shape[-nd:]
    if 0 in in_sizes:
        return
    for k in np.ndindex(*kernel):
        key = tuple(slice(ki * d, ki * d + (n - 1) * s + 1, s)
                    for ki, d, s, n in zip(k, dilation, stride, in_sizes))
        full[(Ellipsis,) + key] += cols[k]


def compute_array(t: Tensor, ct=None) -> np.ndarray:
    """t's elements in the dtype to compute in (float32 for float16/bfloat16)."""
    a = t._array()
    ct = opmath(t.dtype) if ct is None else ct
    return a if a.dtype == ct else a.astype(ct)


def _expand_param(name: str, value, nd: int) -> tuple:
    value = tuple(value)
    if len(value) == 1:
        return value * nd
    if len(value) != nd:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {nd} "
                           f"values to match the convolution dimensions, but got {name}="
                           f"{list(value)}")
    return value


def _x(sizes) -> str:
    return " x ".join(str(s) for s in sizes)


def conv_params(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """Check a convolution call as PyTorch does; give the expanded parameters and the
    output's spatial sizes."""
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"convolution(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    nd = weight.dim() - 2
    if nd < 1:
        raise RuntimeError(f"convolution(): expected a weight with at least 3 dimensions, but "
                           f"got weight of size {list(weight._shape)}")
    stride = _expand_param("stride", stride, nd)
    padding = _expand_param("padding", padding, nd)
    dilation = _expand_param("dilation", dilation, nd)
    output_padding = _expand_param("output_padding", output_padding, nd)
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if input.dim() != weight.dim():
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-"
                           f"dimensional weight {list(weight._shape)}, but got {input.dim()}-"
                           f"dimensional input of size {list(input._shape)} instead")
    ws, xs = weight._shape, input._shape
    if ws[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {list(ws)} instead")
    if ws[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size [{list(ws)}] instead")
    kernel = ws[2:]
    if transposed:
        if xs[1] != ws[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {list(ws)}, expected "
                               f"input{list(xs)} to have {ws[0]} channels, but got {xs[1]} "
                               "channels instead")
        out_channels = ws[1] * groups
    else:
        if xs[1] != ws[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {list(ws)}, expected "
                               f"input{list(xs)} to have {ws[1] * groups} channels, but got "
                               f"{xs[1]} channels instead")
        out_channels = ws[0]
    if bias is not None and (bias.dim() != 1 or bias._shape[0] != out_channels):
        head = "Given transposed=1, weight of size" if transposed else "Given weight of size"
        raise RuntimeError(f"{head} {list(ws)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {list(bias._shape)} "
                           "instead")
    if transposed:
        if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
            ops, strides, dils = output_padding, stride, dilation
            if nd == 1:       # PyTorch checks 1-d as 2-d with a height of one
                ops, strides, dils = (0,) + ops, (1,) + strides, (1,) + dils
            axes = ("depth", "height", "width")[-len(ops):]
            parts = ([f"output_padding_{a}: {v}" for a, v in zip(axes, ops)]
                     + [f"stride_{a}: {v}" for a, v in zip(axes, strides)]
                     + [f"dilation_{a}: {v}" for a, v in zip(axes, dils)])
            raise RuntimeError("output padding must be smaller than either stride or dilation,"
                               f" but got {' '.join(parts)}")
        out = tuple((n - 1) * s - 2 * p + d * (k - 1) + op + 1 for n, s, p, d, k, op in
                    zip(xs[2:], stride, padding, dilation, kernel, output_padding))
        if any(o < 1 for o in out):
            raise RuntimeError(f"Given input size per channel: ({_x(xs[2:])}). Calculated "
                               f"output size per channel: ({_x(out)}). Output size is too small")
    else:
        padded = tuple(n + 2 * p for n, p in zip(xs[2:], padding))
        effective = tuple(d * (k - 1) + 1 for d, k in zip(dilation, kernel))
        if any(n < k for n, k in zip(padded, effective)):
            raise RuntimeError(f"Calculated padded input size per channel: ({_x(padded)}). "
                               f"Kernel size: ({_x(effective)}). Kernel size can't be greater "
                               "than actual input size")
        out = tuple((n - k) // s + 1 for n, k, s in zip(padded, effective, stride))
    _check_dtypes(input, weight, bias)
    return stride, padding, dilation, output_padding, (xs[0], out_channels) + out


def _check_dtypes(input, weight, bias):
    if input.dtype is not weight.dtype:
        if input.dtype is dt.float32 and weight.is_floating_point():     # the oneDNN path
            raise RuntimeError(f"Input type ({input.type()}) and weight type ({weight.type()}) "
                               "should be the same or input should be a MKLDNN tensor and "
                               "weight is a dense tensor")
        raise RuntimeError(f"expected scalar type {input.dtype.cname} but found "
                           f"{weight.dtype.cname}")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({_c_name(input.dtype)}) and bias type "
                           f"({_c_name(bias.dtype)}) should be the same")
    if input.dtype is dt.bool:
        raise NotImplementedError(f"\"slow_conv{weight.dim() - 2}d_cpu\" not implemented for "
                                  "'Bool'")


def _c_name(d: dt.dtype) -> str:
    return {dt.float32: "float", dt.float64: "double", dt.float16: "c10::Half",
            dt.bfloat16: "c10::BFloat16"}.get(d, d.cname)


def suggest_layout(shape, *tensors) -> tuple:
    """Row-major strides, or channels-last ones when an operand is channels-last (and not
    also contiguous), as PyTorch picks for convolution and pooling outputs."""
    if len(shape) in (4, 5):
        for t in tensors:
            if (t is not None and is_channels_last(t._shape, t._stride)
                    and not is_contiguous(t._shape, t._stride)):
                return channels_last_strides(shape)
    return None


def batch_last_pays(w, groups, n) -> bool:
    """Whether a convolution with weight w lays its (positions x batch) axis out batch-last
    (L, N order) rather than batch-first (N, L). Batch-last makes the copies into columns
    and col2im's adds run along W*N elements per row instead of W per sample (~4x faster
    for 14x14 planes); its price is the slower transposing copy of the operands that have
    channels, not columns, per position (~6x per element). It pays when a group's column
    rows (Cg*K, or Og*K transposed) outnumber those channels (Cg + Og): not for a 1x1
    kernel, nor for one input channel. Never where the C im2col/col2im run (native_columns):
    they copy a batch-first row as fast, and the transposing copy stays a price."""
    return (n > 1 and math.prod(w.shape[1:]) > w.shape[0] // groups + w.shape[1]
            and not native_columns(w))


_SAMPLE_WEIGHT_BYTES = 1 << 16


def per_sample_pays(w, groups) -> bool:
    """Whether one small matmul per sample (numpy's stacked matmul, straight into the
    output's layout) beats one large product and a transposing copy: for a group's weight
    of up to _SAMPLE_WEIGHT_BYTES (re-read from cache by every sample), 2-4x for 16x9 by
    9x784 over 64 samples (0.69 -> 0.16 ms, one thread), ~15% for 32x144 by 144x196; even
    at 144 KB, 3x slower at 9 MB. At two threads the one large product also waits for both
    threads, each small one runs on one."""
    return w.size // groups * w.itemsize <= _SAMPLE_WEIGHT_BYTES


def forward_layout(w, groups) -> str:
    """"sample" (N, C, L) where per_sample_pays, else "first" (C, N*L)."""
    return "sample" if per_sample_pays(w, groups) else "first"


def backward_layout(w, groups, n, products_fit) -> str:
    """How a convolution's backward with weight w lays out its (positions x batch) axis:
    "last" where batch_last_pays, else "sample" (N, C, L) as the forward, unless the weight
    gradient's per-sample products, summed over the samples, are larger than a sample's
    positions (`products_fit` False) or the weight is large: then "first", (N*L) in one
    product."""
    if batch_last_pays(w, groups, n):
        return "last"
    return "sample" if products_fit and per_sample_pays(w, groups) else "first"


def by_position(a, groups, order, padding=None):
    """a (N, C, *sp) as (g, C/g, *sp, N) (order "last"), (g, C/g, N, *sp) ("first"), both
    copies, or (N, g, C/g, L) ("sample", a view where it can be); batch-last copies
    zero-pad the spatial dims by `padding`."""
    am, (n, c), sp = module_of(a), a.shape[:2], a.shape[2:]
    if order == "sample":
        return a.reshape(n, groups, c // groups, math.prod(sp))
    if order == "first":
        return am.ascontiguousarray(np.moveaxis(a.reshape((n, groups, c // groups) + sp), 0,
                                                2))
    if padding is None or not any(padding):
        return am.ascontiguousarray(np.moveaxis(a, 0, -1)).reshape(
            (groups, c // groups) + sp + (n,))
    out = am.zeros((groups, c // groups) + tuple(s + 2 * p for s, p in zip(sp, padding))
                   + (n,), a.dtype)
    inside = tuple(slice(p, p + s) for s, p in zip(sp, padding))
    out[(slice(None), slice(None)) + inside] = np.moveaxis(
        a.reshape((n, groups, c // groups) + sp), 0, -1)
    return out


def columns(x, kernel, stride, dilation, padding, out_sizes, order) -> np.ndarray:
    """(C, *kernel, *out, N) (order "last"), (C, *kernel, N, *out) ("first") or
    (N, C, *kernel, *out) ("sample") copy of every output position's receptive field in x
    (N, C, *sp), read through one strided view of the zero-padded input, or by the C im2col
    (2-d, batch-first): (C*K, L*N) is the right-hand side of one matmul for the whole
    batch, (C*K, L) one per sample."""
    nd = len(kernel)
    if order == "last":
        shape = (x.shape[1],) + tuple(kernel) + tuple(out_sizes) + (x.shape[0],)
    elif order == "sample":
        shape = x.shape[:2] + tuple(kernel) + tuple(out_sizes)
    else:
        shape = (x.shape[1],) + tuple(kernel) + (x.shape[0],) + tuple(out_sizes)
    cols = module_of(x).empty(shape, x.dtype)
    if order != "last" and native_columns(x) and im2col_native(
            x, cols if order == "sample" else np.moveaxis(cols, nd + 1, 0), kernel, stride,
            padding, dilation):
        return cols
    if order == "last":
        xp = by_position(x, 1, "last", padding)[0]
        # windows() wants the spatial dims last: view the batch in front (no copy)
        win = windows(np.moveaxis(xp, -1, 0), kernel, stride, dilation, out_sizes)
        perm = (1,) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd)) + (0,)
        # runs of W*N elements already: rows of N copy ~15% slower
        np.copyto(cols, win.transpose(perm))
    else:
        xp = pad_array(x, padding)
        win = windows(xp, kernel, stride, dilation, out_sizes)
        sample = order == "sample"
        perm = ((0, 1) if sample else (1,)) + tuple(range(2 + nd, 2 + 2 * nd)) + (
            () if sample else (0,)) + tuple(range(2, 2 + nd))
        copy_rows(cols, xp, win, perm)
    return cols


def native_columns(a) -> bool:
    """Whether the C im2col/col2im (native/convolution.c) take a 2-d convolution of arrays
    like `a` (its input, weight or gradient): float32/float64 NumPy arrays, the kernels
    on and built."""
    return (a.__class__ is np.ndarray and a.ndim == 4 and a.dtype in (np.float32, np.float64)
            and native.function("convolution", "im2col_" + native.suffix(a), _SIGNATURE)
            is not None)


_SIGNATURE = "n" * 16 + "pppi"


def _native_call(name, image, cols, kernel, stride, padding, dilation) -> bool:
    """The C `name` (im2col or col2im) between image (N, C, H, W), C-contiguous, and cols
    (N, C, kh, kw, oh, ow), whose last dims must lie as rows of kh*kw, each of oh*ow
    contiguous positions, and whose batch may lie anywhere (native/convolution.c); every
    window inside the padded image."""
    if not (native.dense(image) and cols.__class__ is np.ndarray and cols.dtype == image.dtype
            and len(kernel) == 2 and cols.shape[:2] == image.shape[:2]
            and cols.shape[2:4] == tuple(kernel) and min(stride + dilation) > 0
            and min(padding) >= 0):
        return False
    n, c, kh, kw, oh, ow = cols.shape
    size = cols.itemsize
    sb, sc, sky, sr, soy, sox = (st // size for st in cols.strides)
    (ih, iw), (ph, pw) = image.shape[2:], padding
    if (any(st % size for st in cols.strides) or min(cols.strides) < 0 or sox != 1
            or soy != ow or sky != kw * sr or sc != kh * sky or 0 in cols.shape[4:] or any(
                (o - 1) * s + (k - 1) * d >= i + 2 * p for o, s, k, d, i, p in
                zip((oh, ow), stride, kernel, dilation, (ih, iw), padding))):
        return False
    fn = native.function("convolution", f"{name}_{native.suffix(image)}", _SIGNATURE)
    if fn is None:
        return False
    nthreads = native.threads(cols.size)
    # a bordered plane and SLACK (32) elements per thread: see native/convolution.c
    pad = np.empty(nthreads * ((ih + 2 * ph) * (iw + 2 * pw) + 32), image.dtype)
    fn(n, c, ih, iw, oh, ow, *kernel, *stride, ph, pw, *dilation, sb, sr,
       native.pointer(image if name == "im2col" else cols),
       native.pointer(cols if name == "im2col" else image), native.pointer(pad), nthreads)
    return True


def im2col_native(x, cols, kernel, stride, padding, dilation) -> bool:
    """cols (N, C, kh, kw, oh, ow) = the columns of x (N, C, H, W) by the C kernel where it
    applies (_native_call; x made C-contiguous first)."""
    if x.__class__ is np.ndarray and not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    return _native_call("im2col", x, cols, kernel, stride, padding, dilation)


def col2im_native(res, cols, kernel, stride, padding, dilation) -> bool:
    """res (N, C, H, W) = col2im of cols (N, C, kh, kw, oh, ow) (zeroed, then every
    column added where it was read) by the C kernel where it applies (_native_call)."""
    return _native_call("col2im", res, cols, kernel, stride, padding, dilation)


def copy_rows(cols, a, win, perm) -> None:
    """cols[...] = win.transpose(perm) for `win` a strided view of `a`, by void_rows where
    the axis that becomes cols' last has a stride of one element (the output's last
    spatial axis at stride 1): 64x16x14x14, 3x3 columns 0.92 -> 0.51 ms."""
    src = win.transpose(perm)
    if cols.size and rows_copy(src, a):
        np.copyto(void_rows(cols, cols), void_rows(src, a))
    else:
        np.copyto(cols, src)


def col2im_into(res, cols, kernel, stride, padding, dilation, steps=None) -> None:
    """res[..., i*s + k*d - p] += cols[..., k, i] for every kernel offset k and input
    position i that lands inside res (..., *out): the adjoint of `columns`, added straight
    into the cropped output (no padded buffer). `steps` (float16 or bfloat16): each sum
    rounded to it, in the order of the kernel offsets (PyTorch's col2im into a tensor of
    that dtype)."""
    nd = len(kernel)
    in_sizes, out_sizes = cols.shape[-nd:], res.shape[-nd:]
    for k in np.ndindex(*kernel):
        dst, src = [], []
        for ki, s, p, d, n_in, n_out in zip(k, stride, padding, dilation, in_sizes, out_sizes):
            off = ki * d - p                    # where input position 0 lands
            lo = max(0, -(off // s))
            hi = min(n_in, (n_out - 1 - off) // s + 1)
            if hi <= lo:
                break
            dst.append(slice(lo * s + off, (hi - 1) * s + off + 1, s))
            src.append(slice(lo, hi))
        else:
            key = (Ellipsis,) + tuple(dst)
            if steps is None:
                res[key] += cols[(Ellipsis,) + k + tuple(src)]
            else:
                res[key] = round_through(res[key] + cols[(Ellipsis,) + k + tuple(src)], steps)


_BLOCK_BYTES = 1 << 21     # columns per matmul of about this size stay in cache

_DEVICE_BLOCK_BYTES = 1 << 28   # on a GPU: few large matmuls, the columns' memory bounded


def batch_blocks(n: int, sample_bytes: int, like):
    """Even slices of the batch whose columns take about _BLOCK_BYTES each: a block's columns
    and matmul result are reused from cache instead of making full-batch copies; on the CPU
    with threads, a multiple of their count and at least two each (for_blocks: a thread
    that finishes first takes another's). For a CuPy array `like`, _DEVICE_BLOCK_BYTES."""
    on_cpu = like.__class__ is np.ndarray
    block = _BLOCK_BYTES if on_cpu else _DEVICE_BLOCK_BYTES
    count = -(-n * sample_bytes // block)
    if on_cpu and parallel.get_num_threads() > 1:
        threads = parallel.get_num_threads()
        count = max(-(-count // threads), 2) * threads
    count = min(max(count, 1), n)
    return [slice(n * i // count, n * (i + 1) // count) for i in range(count)]


def for_blocks(blocks, run, macs: int, like) -> list:
    """[run(b) for b in blocks], with BLAS on one thread, the blocks taken in turn by the
    calling thread and the pool's (parallel_tasks) when the convolution has at least
    ONE_THREAD_MNK multiply-adds (`macs`): each thread runs its blocks' copies, products
    and adds. With BLAS's own two threads the CNN step's conv2 backward took 46-185 ms at
    load 4-5 on two cores (its threads spinning for each other's time slice), 8-11 ms
    this way."""
    with one_thread():
        if like.__class__ is not np.ndarray or macs < ONE_THREAD_MNK or len(blocks) < 2:
            return [run(b) for b in blocks]
        return parallel.parallel_tasks(len(blocks), lambda i: run(blocks[i]), parallel.GRAIN)


def to_batch_first(r, b, order):
    """(B, *lead, L) view of a (*lead, L*B) (order "last") or (*lead, B*L) array."""
    if order == "last":
        return np.moveaxis(r.reshape(r.shape[:-1] + (-1, b)), -1, 0)
    return np.moveaxis(r.reshape(r.shape[:-1] + (b, -1)), -2, 0)


def matmul_to_batch(dst, wm, cols, bias=None, order="first") -> None:
    """dst (B, g*Og, *out), C-contiguous, = wm (g, Og, R) @ cols ((g, R, L*B or B*L), or
    (B, g, R, L) for order "sample"), in the batch-first layout (+ bias (g, Og, 1))."""
    if order == "sample":
        r = dst.reshape(cols.shape[:2] + (wm.shape[1], -1))
        linalg.matmul(wm, cols, out=r)
        if bias is not None:
            np.add(r, bias, out=r)
        return
    r = to_batch_first(linalg.matmul(wm, cols), dst.shape[0], order)
    d = dst.reshape(r.shape)
    if bias is None:
        np.copyto(d, r)
    else:
        np.add(r, bias, out=d)


def matmul_col2im(dst, wt, a, kernel, sizes, stride, padding, dilation,
                  order="first") -> None:
    """dst (B, g*Og, *out) = col2im of wt (g, Og*K, Cg) @ a (a by_position array in
    `order`): every kernel offset's contribution of a block, added where it lands (in a
    batch-last buffer then moved to dst, or in dst)."""
    g, rows = wt.shape[:2]
    b = dst.shape[0]
    r = linalg.matmul(wt, a)
    cols = (r if order == "sample" else to_batch_first(r, b, order)).reshape(
        (b, g * rows // math.prod(kernel)) + tuple(kernel) + tuple(sizes))
    if order == "last":
        acc = module_of(dst).zeros(dst.shape[1:] + (b,), dst.dtype)
        col2im_into(np.moveaxis(acc, -1, 0), cols, kernel, stride, padding, dilation)
        np.copyto(dst, np.moveaxis(acc, -1, 0))
    elif not col2im_native(dst, cols, kernel, stride, padding, dilation):
        dst.fill(0)
        col2im_into(dst, cols, kernel, stride, padding, dilation)


def matmul_nt(a, b):
    """a (g, M, K) @ b (g, N, K) transposed: the weight gradient's long-K product, with the
    larger of M and N as BLAS's row count (OpenBLAS runs such products 25-50% faster that
    way: 32x144 by K=12544 1.8 -> 1.3 ms, one thread)."""
    if b.shape[1] > a.shape[1]:
        return linalg.matmul(b, a.transpose(0, 2, 1)).transpose(0, 2, 1)
    return linalg.matmul(a, b.transpose(0, 2, 1))


def _conv_forward(res, x, w, stride, padding, dilation, groups, bias=None) -> None:
    """res (N, O, *out), C-contiguous, = the convolution of x (N, C, *sp) and w (O, C/g, *k)
    (+ bias (O,)): per block of samples one matmul (Og, Cg*K) @ (Cg*K, L) per sample and
    group, straight into res, or one (Og, Cg*K) @ (Cg*K, B*L) per group (forward_layout)."""
    g, o, rows = groups, w.shape[0], math.prod(w.shape[1:])
    wm = w.reshape(g, o // g, rows)
    if bias is not None:
        bias = bias.reshape(g, o // g, 1)
    order, positions = forward_layout(w, g), math.prod(res.shape[2:])

    def run(b):
        cols = columns(x[b], w.shape[2:], stride, dilation, padding, res.shape[2:], order)
        cols = cols.reshape((len(cols), g, rows, positions) if order == "sample" else (g, rows, -1))
        matmul_to_batch(res[b], wm, cols, bias, order)
    for_blocks(batch_blocks(x.shape[0], rows * g * positions * x.itemsize, x), run,
               res.size * rows, x)


def _conv_transpose_forward(res, x, w, stride, padding, dilation, groups) -> None:
    """res (N, g*Og, *out), C-contiguous, = the transposed convolution of x (N, C, *sp) and
    w (C, Og, *k): per block one matmul per group gives every kernel offset's
    contribution, col2im adds them into res."""
    g, kernel = groups, w.shape[2:]
    wt = w.reshape(g, w.shape[0] // g, math.prod(w.shape[1:])).transpose(0, 2, 1)
    order = "last" if batch_last_pays(w, g, x.shape[0]) else "first"
    sample = math.prod(w.shape[1:]) * g * math.prod(x.shape[2:]) * x.itemsize

    def run(b):
        a = by_position(x[b], g, order).reshape(g, w.shape[0] // g, -1)
        matmul_col2im(res[b], wt, a, kernel, x.shape[2:], stride, padding, dilation, order)
    for_blocks(batch_blocks(x.shape[0], sample, x), run, x.size * math.prod(w.shape[1:]), x)


def _conv_transpose_slow(res, x, w, b, stride, padding, dilation, groups, d) -> None:
    """res (N, g*Og, *out) = the transposed convolution of float16/bfloat16 x and w (+ b)
    as PyTorch's slow_conv_transpose2d/3d computes it in d (NaiveConvolutionTranspose2d/3d
    .cpp): per group the product w^T @ x rounded to d as its columns, col2im/col2vol adding
    them into the zeroed output with every sum rounded, then the bias added and rounded."""
    n, g, kernel = x.shape[0], groups, tuple(w.shape[2:])
    cg, og = w.shape[0] // g, w.shape[1]
    wt = w.reshape(g, cg, -1).transpose(0, 2, 1)               # (g, Og*K, Cg)
    cols = round_through(np.matmul(wt, x.reshape(n, g, cg, -1)), d)
    cols = cols.reshape((n, g * og) + kernel + tuple(x.shape[2:]))
    res.fill(0)
    col2im_into(res, cols, kernel, stride, padding, dilation, steps=d)
    if b is not None:
        res[...] = round_through(res + b.reshape((-1,) + (1,) * len(kernel)), d)


def _slow_transpose(input, transposed, stride, output_padding) -> bool:
    """Whether PyTorch runs a float16/bfloat16 transposed convolution by its slow kernels on
    every CPU: when an output padding reaches its stride (ConvParams::is_output_padding_big;
    oneDNN, which computes in float32, takes the others where the CPU has its bfloat16
    instructions)."""
    return (transposed and input.dtype in (dt.float16, dt.bfloat16)
            and input._array().__class__ is np.ndarray
            and any(p >= s for p, s in zip(output_padding, stride)))


def compute_target(t: Tensor, ct) -> np.ndarray:
    """t's array when a kernel may write its result there directly (its dtype is the
    compute dtype and it is C-contiguous), else a new array to copy from."""
    a = t._array()
    if a.dtype == ct and a.flags.c_contiguous:
        return a
    return module_of(a).empty(a.shape, ct)


def store(t: Tensor, res) -> None:
    """Copy a result into t unless it was computed in t's memory."""
    a = t._array()
    if res is not a:
        assign_array(a, res.reshape(a.shape))


def convolution_cpu(out, input, weight, bias, stride, padding, dilation, transposed,
                     output_padding, groups):
    stride, padding, dilation, output_padding, shape = conv_params(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    ct = opmath(input.dtype)
    x, w = compute_array(input, ct), compute_array(weight, ct)
    res = compute_target(out, ct)
    b = None if bias is None else compute_array(bias, ct)
    if _slow_transpose(input, transposed, stride, output_padding):
        _conv_transpose_slow(res, x, w, b, stride, padding, dilation, groups, input.dtype)
    elif transposed:
        _conv_transpose_forward(res, x, w, stride, padding, dilation, groups)
        if b is not None:
            res += b.reshape((-1,) + (1,) * (len(shape) - 2))
    else:
        _conv_forward(res, x, w, stride, padding, dilation, groups, b)
    store(out, res)


def allocate_specs(specs, device):
    return tuple(None if s is None else Tensor._empty(s.shape, s.dtype, device, s.stride)
                 for s in specs)


def _blocks(sizes, kernel_size, dilation, padding, stride) -> tuple:
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, d, p, s in
                 zip(sizes, kernel_size, dilation, padding, stride))


def im2col_cpu(out, self, kernel_size, dilation, padding, stride):
    x = self._array()
    blocks = _blocks(x.shape[-2:], kernel_size, dilation, padding, stride)
    if _fold_native("im2col", x, out._array(), kernel_size, blocks, stride, padding,
                    dilation):
        return
    win = windows(pad_array(x, padding), kernel_size, stride, dilation, blocks)
    lead = x.shape[:-2]
    win = win.transpose(tuple(range(len(lead))) + (len(lead) + 2, len(lead) + 3,
                                                   len(lead), len(lead) + 1))
    assign_array(out._array().reshape(lead + tuple(kernel_size) + blocks), win)


def col2im_cpu(out, self, output_size, kernel_size, dilation, padding, stride):
    ct = opmath(self.dtype)
    cols = compute_array(self, ct)
    blocks = _blocks(output_size, kernel_size, dilation, padding, stride)
    res = compute_target(out, ct)
    if _fold_native("col2im", res, cols, kernel_size, blocks, stride, padding, dilation):
        store(out, res)
        return
    lead = cols.shape[:-2] + (cols.shape[-2] // math.prod(kernel_size),)
    cols = cols.reshape(lead + tuple(kernel_size) + blocks)
    n = len(lead)
    cols = cols.transpose((n, n + 1) + tuple(range(n)) + (n + 2, n + 3))
    full = module_of(cols).zeros(lead + tuple(o + 2 * p for o, p in zip(output_size, padding)),
                                 dtype=ct)
    col2im_add(full, cols, kernel_size, stride, dilation)
    ph, pw = padding
    assign_array(out._array(), full[..., ph:ph + output_size[0], pw:pw + output_size[1]])


def _fold_native(name, image, cols, kernel, blocks, stride, padding, dilation) -> bool:
    """unfold's (im2col) or fold's (col2im) columns (*lead, C*K, L) of an image
    (*lead, C, H, W) by the C kernel where it applies: all planes as one sample's channels."""
    if not (image.__class__ is cols.__class__ is np.ndarray and cols.flags.c_contiguous):
        return False
    planes = math.prod(image.shape[:-2])
    return _native_call(name, image.reshape((1, planes) + image.shape[-2:]),
                        cols.reshape((1, planes) + tuple(kernel) + tuple(blocks)), kernel,
                        stride, padding, dilation)


def _conv_backward(gx, gy, x, w, stride, padding, dilation, groups, transposed,
                   want_weight):
    """The input gradient into gx (or None) and the (g, ., .) weight gradient (when
    `want_weight`) of a (transposed) convolution, block by block, each block's columns
    or positions-major gradient made once for both."""
    g, n, kernel = groups, x.shape[0], w.shape[2:]
    rows = math.prod(w.shape[1:])
    if transposed:           # gx is a convolution of gy; the weight pairs x with gy's columns
        order = "last" if batch_last_pays(w, g, n) else "first"
        wm = w.reshape(g, w.shape[0] // g, rows)
        sample = rows * g * math.prod(x.shape[2:]) * x.itemsize

        def run(b):
            cols = columns(gy[b], kernel, stride, dilation, padding, x.shape[2:],
                           order).reshape(g, rows, -1)
            if gx is not None:
                matmul_to_batch(gx[b], wm, cols, order=order)
            if want_weight:
                xg = by_position(x[b], g, order).reshape(g, x.shape[1] // g, -1)
                return matmul_nt(xg, cols)
        macs = x.size * rows
    else:                    # gx is a transposed convolution of gy; the weight pairs x's columns
        og, positions = w.shape[0] // g, math.prod(gy.shape[2:])
        order = backward_layout(w, g, n, og * rows < positions)
        wt = w.reshape(g, og, rows).transpose(0, 2, 1)
        sample = max(rows, og) * g * positions * x.itemsize

        def run(b):
            gp = by_position(gy[b], g, order)
            if order != "sample":
                gp = gp.reshape(g, og, -1)
            if gx is not None:
                matmul_col2im(gx[b], wt, gp, kernel, gy.shape[2:], stride, padding, dilation,
                              order)
            if want_weight:
                cols = columns(x[b], kernel, stride, dilation, padding, gy.shape[2:], order)
                if order == "sample":     # per sample, then summed over the block
                    cols = cols.reshape(len(cols), g, rows, positions)
                    return linalg.matmul(gp, cols.swapaxes(-1, -2)).sum(0)
                return matmul_nt(gp, cols.reshape(g, rows, -1))
        macs = gy.size * rows
    parts = for_blocks(batch_blocks(n, sample, x), run,
                       macs * ((gx is not None) + want_weight), x)
    gw = None
    for part in parts if want_weight else ():
        gw = part if gw is None else np.add(gw, part, out=gw)
    if want_weight and gw is None:      # an empty batch
        gw = module_of(w).zeros(w.shape, w.dtype)
    return gw


def convolution_backward_into(g_input, g_weight, g_bias, grad_output, input, weight, stride,
                              padding, dilation, transposed, output_padding, groups):
    """convolution_backward's gradients written into the outputs it allocated (None where
    not asked for)."""
    stride, padding, dilation, *_ = conv_params(input, weight, None, stride, padding, dilation,
                                                transposed, output_padding, groups)
    ct = opmath(input.dtype)
    gy = compute_array(grad_output, ct)
    x, w = compute_array(input, ct), compute_array(weight, ct)
    if x.dtype.kind == "c":     # the adjoint of a complex product conjugates the other factor
        x, w = x.conj(), w.conj()
    gx = None if g_input is None else compute_target(g_input, ct)
    gw = _conv_backward(gx, gy, x, w, stride, padding, dilation, groups, transposed,
                        g_weight is not None)
    if gx is not None:
        store(g_input, gx)
    if gw is not None:
        store(g_weight, gw)
    if g_bias is not None:
        store(g_bias, gy.reshape(gy.shape[0], gy.shape[1], -1).sum(2).sum(0))
