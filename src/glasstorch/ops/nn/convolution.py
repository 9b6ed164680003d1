"""Convolution and transposed convolution through strided windows (im2col) and BLAS.

A convolution reads every output position's receptive field as a window of one strided
NumPy view over the zero-padded input (no per-element loop), lays the windows out as
columns (one copy) and multiplies them with the weight in one `np.matmul` per group,
for a block of samples at a time (the block's columns stay in cache). A transposed
convolution is the adjoint: one matmul gives the columns, and col2im adds them back over
the kernel offsets (a loop over the few kernel positions, each a strided slice add).
`convolution_backward` computes the input, weight and bias gradients together, as
PyTorch's op of that name. `im2col`/`col2im` (F.unfold/F.fold) are the same two steps on
their own. The kernels run on NumPy and CuPy arrays alike (on a GPU the batch is split
into far larger blocks: the columns need not fit a cache there).

    >>> x = glasstorch.ones(1, 1, 4, 4); w = glasstorch.ones(1, 1, 3, 3)
    >>> glasstorch.conv2d(x, w, padding=1)[0, 0, 0].tolist()
    [4.0, 6.0, 6.0, 4.0]
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...backends.arrays import module_of
from ...core import dtype as dt
from ...core.device import META
from ...core.shape import channels_last_strides, is_channels_last, is_contiguous
from ...core.tensor import Tensor
from ..copying.copies import assign_array
from ...core.promotion import opmath
from ..registry import composite, kernel_op, spec, structured, warn_user
from ..autocast import LOWER_PRECISION, autocast_policy

# ---- array helpers (shared with pooling) ------------------------------------------------


def pad_array(a: np.ndarray, padding, value=0) -> np.ndarray:
    """`a` with its last len(padding) dims padded by `padding` on both sides with `value`."""
    if not any(padding):
        return a
    nd = len(padding)
    shape = a.shape[:-nd] + tuple(s + 2 * p for s, p in zip(a.shape[-nd:], padding))
    out = module_of(a).full(shape, value, dtype=a.dtype)
    out[(Ellipsis,) + tuple(slice(p, p + s) for s, p in zip(a.shape[-nd:], padding))] = a
    return out


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


# ---- convolution ------------------------------------------------------------------------

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


def _convolution_meta(input, weight, bias, stride, padding, dilation, transposed,
                      output_padding, groups):
    *_, shape = conv_params(input, weight, bias, stride, padding, dilation, transposed,
                            output_padding, groups)
    return spec(shape, input.dtype, suggest_layout(shape, input, weight))


convolution = structured(
    "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding,"
    " SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
    _convolution_meta, method=False, inplace=False, promotes=False,
    doc="N-d convolution (transposed=True: its adjoint), the op behind conv*d and "
        "conv_transpose*d.")


def columns(x, kernel, stride, dilation, padding, out_sizes) -> np.ndarray:
    """(C, *kernel, N, *out) copy of every output position's receptive field in x
    (N, C, *sp), read through one strided view of the zero-padded input. Laid out so that
    (C*K, N*L) is the right-hand side of one matmul for the whole batch (one large BLAS
    call rather than one small call per sample), its inner axis running along input rows."""
    nd = len(kernel)
    win = windows(pad_array(x, padding), kernel, stride, dilation, out_sizes)
    perm = (1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd))
    cols = module_of(x).empty((x.shape[1],) + tuple(kernel) + (x.shape[0],) + tuple(out_sizes),
                              x.dtype)
    np.copyto(cols, win.transpose(perm))
    return cols


def col2im_into(res, cols, kernel, stride, padding, dilation) -> None:
    """res[..., i*s + k*d - p] += cols[..., k, i] for every kernel offset k and input
    position i that lands inside res (..., *out): the adjoint of `columns`, added straight
    into the cropped output (no padded buffer)."""
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
            res[(Ellipsis,) + tuple(dst)] += cols[(Ellipsis,) + k + tuple(src)]


def _channels_first(a, groups):
    """(g, C/g, N*L) copy of a (N, C, *sp): the batch joins the positions."""
    n, c = a.shape[:2]
    return module_of(a).ascontiguousarray(
        a.reshape(n, groups, c // groups, -1).transpose(1, 2, 0, 3)).reshape(groups, c // groups,
                                                                              -1)


_BLOCK_BYTES = 1 << 21     # columns per matmul of about this size stay in cache
_DEVICE_BLOCK_BYTES = 1 << 28   # on a GPU: few large matmuls, the columns' memory bounded


def _batch_blocks(n: int, sample_bytes: int, like):
    """Slices of the batch whose columns take about _BLOCK_BYTES each: a block's columns
    and matmul result are reused from cache instead of making full-batch copies. For a
    CuPy array `like`, blocks of _DEVICE_BLOCK_BYTES."""
    block = _BLOCK_BYTES if like.__class__ is np.ndarray else _DEVICE_BLOCK_BYTES
    step = max(1, block // max(sample_bytes, 1))
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


def _matmul_to_batch(dst, wm, cols, bias=None) -> None:
    """dst (B, g*Og, *out) = wm (g, Og, R) @ cols (g, R, B*L), moved from (g, Og, B, L) to
    the batch-first layout (+ bias (g, Og, 1))."""
    g, og = wm.shape[:2]
    r = np.matmul(wm, cols).reshape(g, og, dst.shape[0], -1).transpose(2, 0, 1, 3)
    d = dst.reshape(r.shape)
    if bias is None:
        np.copyto(d, r)
    else:
        np.add(r, bias, out=d)


def _matmul_col2im(dst, wt, a_cf, kernel, sizes, stride, padding, dilation) -> None:
    """dst (B, g*Og, *out) += col2im of wt (g, Og*K, Cg) @ a_cf (g, Cg, B*L): every kernel
    offset's contribution of a block, added where it lands."""
    g, rows = wt.shape[:2]
    cols = np.matmul(wt, a_cf).reshape((g * rows // math.prod(kernel),) + tuple(kernel)
                                       + (dst.shape[0],) + tuple(sizes))
    col2im_into(dst, np.moveaxis(cols, 1 + len(kernel), 0), kernel, stride, padding,
                dilation)


def _conv_forward(res, x, w, stride, padding, dilation, groups, bias=None) -> None:
    """res (N, O, *out), C-contiguous, = the convolution of x (N, C, *sp) and w (O, C/g, *k)
    (+ bias (O,)): per block of samples one matmul (Og, Cg*K) @ (Cg*K, B*L) per group."""
    g, o, rows = groups, w.shape[0], math.prod(w.shape[1:])
    wm = w.reshape(g, o // g, rows)
    if bias is not None:
        bias = bias.reshape(g, o // g, 1)
    positions = math.prod(res.shape[2:])
    for b in _batch_blocks(x.shape[0], rows * g * positions * x.itemsize, x):
        cols = columns(x[b], w.shape[2:], stride, dilation, padding, res.shape[2:])
        _matmul_to_batch(res[b], wm, cols.reshape(g, rows, -1), bias)


def _conv_transpose_forward(res, x, w, stride, padding, dilation, groups) -> None:
    """res (N, g*Og, *out), C-contiguous, = the transposed convolution of x (N, C, *sp) and
    w (C, Og, *k): per block one matmul per group gives every kernel offset's
    contribution, col2im adds them into res."""
    g, kernel = groups, w.shape[2:]
    wt = w.reshape(g, w.shape[0] // g, math.prod(w.shape[1:])).transpose(0, 2, 1)
    res.fill(0)
    sample = math.prod(w.shape[1:]) * g * math.prod(x.shape[2:]) * x.itemsize
    for b in _batch_blocks(x.shape[0], sample, x):
        _matmul_col2im(res[b], wt, _channels_first(x[b], g), kernel, x.shape[2:], stride,
                       padding, dilation)


def _conv_backward(gx, gy, x, w, stride, padding, dilation, groups, transposed,
                   want_weight):
    """The input gradient into gx (or None) and the (g, ., .) weight gradient (when
    `want_weight`) of a (transposed) convolution, block by block, each block's columns
    or channel-first gradient made once for both."""
    g, n, kernel = groups, x.shape[0], w.shape[2:]
    gw = None
    if transposed:           # gx is a convolution of gy; the weight pairs x with gy's columns
        rows = math.prod(w.shape[1:])
        wm = w.reshape(g, w.shape[0] // g, rows)
        sample = rows * g * math.prod(x.shape[2:]) * x.itemsize
        for b in _batch_blocks(n, sample, x):
            cols = columns(gy[b], kernel, stride, dilation, padding, x.shape[2:]).reshape(
                g, rows, -1)
            if gx is not None:
                _matmul_to_batch(gx[b], wm, cols)
            if want_weight:
                part = np.matmul(_channels_first(x[b], g), cols.transpose(0, 2, 1))
                gw = part if gw is None else np.add(gw, part, out=gw)
    else:                    # gx is a transposed convolution of gy; the weight pairs x's columns
        rows = math.prod(w.shape[1:])
        wt = w.reshape(g, w.shape[0] // g, rows).transpose(0, 2, 1)
        if gx is not None:
            gx.fill(0)
        sample = max(rows, w.shape[0] // g) * g * math.prod(gy.shape[2:]) * x.itemsize
        for b in _batch_blocks(n, sample, x):
            gcf = _channels_first(gy[b], g)
            if gx is not None:
                _matmul_col2im(gx[b], wt, gcf, kernel, gy.shape[2:], stride, padding,
                               dilation)
            if want_weight:
                cols = columns(x[b], kernel, stride, dilation, padding, gy.shape[2:])
                part = np.matmul(gcf, cols.reshape(g, rows, -1).transpose(0, 2, 1))
                gw = part if gw is None else np.add(gw, part, out=gw)
    if want_weight and gw is None:      # an empty batch
        gw = module_of(w).zeros(w.shape, w.dtype)
    return gw


def _compute_target(t: Tensor, ct) -> np.ndarray:
    """t's array when a kernel may write its result there directly (its dtype is the
    compute dtype and it is C-contiguous), else a new array to copy from."""
    a = t._array()
    if a.dtype == ct and a.flags.c_contiguous:
        return a
    return module_of(a).empty(a.shape, ct)


def _store(t: Tensor, res) -> None:
    """Copy a result into t unless it was computed in t's memory."""
    a = t._array()
    if res is not a:
        assign_array(a, res.reshape(a.shape))


@convolution.impl("CPU")
def _convolution_cpu(out, input, weight, bias, stride, padding, dilation, transposed,
                     output_padding, groups):
    stride, padding, dilation, output_padding, shape = conv_params(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    ct = opmath(input.dtype)
    x, w = compute_array(input, ct), compute_array(weight, ct)
    res = _compute_target(out, ct)
    b = None if bias is None else compute_array(bias, ct)
    if transposed:
        _conv_transpose_forward(res, x, w, stride, padding, dilation, groups)
        if b is not None:
            res += b.reshape((-1,) + (1,) * (len(shape) - 2))
    else:
        _conv_forward(res, x, w, stride, padding, dilation, groups, b)
    _store(out, res)


def _convolution_backward_meta(grad_output, input, weight, bias_sizes, stride, padding,
                               dilation, transposed, output_padding, groups, output_mask):
    *_, shape = conv_params(input, weight, None, stride, padding, dilation, transposed,
                            output_padding, groups)
    if tuple(grad_output._shape) != shape:
        raise RuntimeError(f"convolution_backward: expected grad_output of size {list(shape)}, "
                           f"but got {list(grad_output._shape)}")
    layout = suggest_layout(input._shape, input, weight)
    return (spec(input._shape, input.dtype, layout) if output_mask[0] else None,
            spec(weight._shape, weight.dtype, suggest_layout(weight._shape, input, weight))
            if output_mask[1] else None,
            spec((shape[1],), input.dtype) if output_mask[2] else None)


convolution_backward = kernel_op(
    "convolution_backward(Tensor grad_output, Tensor input, Tensor weight, "
    "SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, SymInt[] dilation, "
    "bool transposed, SymInt[] output_padding, SymInt groups, bool[3] output_mask) -> "
    "(Tensor, Tensor, Tensor)", method=False, function=False,
    doc="The gradients of convolution for input, weight and bias (None where output_mask "
        "is False), computed together from one set of columns per operand.")
convolution_backward.on_cuda = "shared"


def _allocate_specs(specs, device):
    return tuple(None if s is None else Tensor._empty(s.shape, s.dtype, device, s.stride)
                 for s in specs)


@convolution_backward.impl("CPU")
def _convolution_backward_cpu(grad_output, input, weight, bias_sizes, stride, padding,
                              dilation, transposed, output_padding, groups, output_mask):
    specs = _convolution_backward_meta(grad_output, input, weight, bias_sizes, stride,
                                       padding, dilation, transposed, output_padding, groups,
                                       output_mask)
    g_input, g_weight, g_bias = _allocate_specs(specs, input.device)
    stride, padding, dilation, *_ = conv_params(input, weight, None, stride, padding, dilation,
                                                transposed, output_padding, groups)
    ct = opmath(input.dtype)
    gy = compute_array(grad_output, ct)
    x, w = compute_array(input, ct), compute_array(weight, ct)
    if x.dtype.kind == "c":     # the adjoint of a complex product conjugates the other factor
        x, w = x.conj(), w.conj()
    gx = None if g_input is None else _compute_target(g_input, ct)
    gw = _conv_backward(gx, gy, x, w, stride, padding, dilation, groups, transposed,
                        g_weight is not None)
    if gx is not None:
        _store(g_input, gx)
    if gw is not None:
        _store(g_weight, gw)
    if g_bias is not None:
        _store(g_bias, gy.reshape(gy.shape[0], gy.shape[1], -1).sum(2).sum(0))
    return g_input, g_weight, g_bias


@convolution_backward.impl("Meta")
def _convolution_backward_meta_kernel(grad_output, input, weight, bias_sizes, stride, padding,
                                      dilation, transposed, output_padding, groups,
                                      output_mask):
    return _allocate_specs(_convolution_backward_meta(
        grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
        output_padding, groups, output_mask), META)


# ---- conv1d/2d/3d and conv_transpose1d/2d/3d --------------------------------------------

def _tuple(value, nd: int) -> tuple:
    return (value,) * nd if isinstance(value, int) else tuple(value)


def _batchify(input, nd: int, name: str):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, ...)")
    if input.dim() == nd + 1:
        return input.unsqueeze(0), True
    if input.dim() != nd + 2:
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(input._shape)}")
    return input, False


def _same_padding(input, weight, stride, dilation, nd):
    """padding='same': symmetric padding, plus one extra zero row at the end of the dims
    whose total padding is odd (PyTorch pads the input for those)."""
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for d, k in zip(dilation, weight._shape[2:])]
    padding = [t // 2 for t in totals]
    if any(t % 2 for t in totals):
        warn_user("Using padding='same' with even kernel lengths and odd dilation may "
                  "require a zero-padded copy of the input be created")
        from ..shape.joining import cat
        for i, t in enumerate(totals):
            if t % 2:
                dim = 2 + i
                shape = list(input._shape)
                shape[dim] = 1
                input = cat([input, input.new_zeros(shape)], dim)
    return input, padding


def _make_conv(nd: int):
    name = f"conv{nd}d"

    def conv(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        x, unbatched = _batchify(input, nd, name)
        stride, dilation = _tuple(stride, nd), _tuple(dilation, nd)
        if isinstance(padding, str):
            if padding == "same":
                x, padding = _same_padding(x, weight, stride, dilation, nd)
            elif padding == "valid":
                padding = (0,) * nd
            else:
                raise RuntimeError(f"Invalid padding string: '{padding}'")
        out = convolution(x, weight, bias, stride, _tuple(padding, nd), dilation, False,
                          (0,) * nd, groups)
        return out.squeeze(0) if unbatched else out
    conv.__name__ = conv.__qualname__ = name
    conv.__doc__ = (f"{name}(input, weight, bias=None, stride=1, padding=0, dilation=1, "
                    f"groups=1): {nd}-d convolution over a (N, C, ...) or unbatched input; "
                    "padding may be 'same' or 'valid'.")
    return composite(name)(conv)


def _make_conv_transpose(nd: int):
    name = f"conv_transpose{nd}d"

    def conv_transpose(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                       groups=1, dilation=1):
        x, unbatched = _batchify(input, nd, name)
        out = convolution(x, weight, bias, _tuple(stride, nd), _tuple(padding, nd),
                          _tuple(dilation, nd), True, _tuple(output_padding, nd), groups)
        return out.squeeze(0) if unbatched else out
    conv_transpose.__name__ = conv_transpose.__qualname__ = name
    conv_transpose.__doc__ = (f"{name}(input, weight, bias=None, stride=1, padding=0, "
                              "output_padding=0, groups=1, dilation=1): the adjoint of "
                              f"conv{nd}d (weight is (C_in, C_out/groups, ...)).")
    return composite(name)(conv_transpose)


conv1d, conv2d, conv3d = (_make_conv(n) for n in (1, 2, 3))
conv_transpose1d, conv_transpose2d, conv_transpose3d = (_make_conv_transpose(n)
                                                        for n in (1, 2, 3))


# ---- im2col / col2im (F.unfold / F.fold) ------------------------------------------------

def _block_params(kernel_size, dilation, padding, stride, output_size=None):
    checks = (("kernel_size", kernel_size), ("dilation", dilation), ("padding", padding),
              ("stride", stride)) + ((("output_size", output_size),) if output_size else ())
    for name, v in checks:
        if len(v) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel_size, dilation, padding, stride
    if kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: "
                           f"{kh} kernel_width: {kw}")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: "
                           f"{dh} dilation_width: {dw}")
    if ph < 0 or pw < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {ph} "
                           f"pad_width: {pw}")
    if sh <= 0 or sw <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {sh} "
                           f"stride_width: {sw}")


def _blocks(sizes, kernel_size, dilation, padding, stride) -> tuple:
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, d, p, s in
                 zip(sizes, kernel_size, dilation, padding, stride))


def _not_for(name: str, d: dt.dtype, allow_bool: bool) -> None:
    if d.category < 2 and not (allow_bool and d is dt.bool):
        raise NotImplementedError(f"\"{name}\" not implemented for '{d.cname}'")


def _im2col_meta(self, kernel_size, dilation, padding, stride):
    _block_params(kernel_size, dilation, padding, stride)
    s = self._shape
    if len(s) not in (3, 4) or 0 in s[-3:]:
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: {list(s)}")
    blocks = _blocks(s[-2:], kernel_size, dilation, padding, stride)
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size ({s[-2]}, {s[-1]}), kernel_size="
                           f"{tuple(kernel_size)}, dilation={tuple(dilation)}, padding="
                           f"{tuple(padding)}, calculated shape of the array of sliding blocks "
                           f"as {blocks}, but its components must be at least one.")
    _not_for("im2col_out_cpu", self.dtype, True)
    return spec(s[:-3] + (s[-3] * math.prod(kernel_size), math.prod(blocks)), self.dtype)


im2col = structured("im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding,"
                    " int[2] stride) -> Tensor", _im2col_meta, inplace=False, method=False,
                    function=False, promotes=False,
                    doc="Sliding blocks of a (N, C, H, W) input as (N, C*kh*kw, L) columns.")


@im2col.impl("CPU")
def _im2col_cpu(out, self, kernel_size, dilation, padding, stride):
    x = self._array()
    blocks = _blocks(x.shape[-2:], kernel_size, dilation, padding, stride)
    win = windows(pad_array(x, padding), kernel_size, stride, dilation, blocks)
    lead = x.shape[:-2]
    win = win.transpose(tuple(range(len(lead))) + (len(lead) + 2, len(lead) + 3,
                                                   len(lead), len(lead) + 1))
    assign_array(out._array().reshape(lead + tuple(kernel_size) + blocks), win)


def _col2im_meta(self, output_size, kernel_size, dilation, padding, stride):
    _block_params(kernel_size, dilation, padding, stride, output_size)
    s = self._shape
    if len(s) not in (2, 3) or 0 in s[-2:]:
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           "batch size and non-zero dimensions for input, but got: "
                           f"{list(s)}")
    k = math.prod(kernel_size)
    if s[-2] % k:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={s[-2]} and "
                           f"kernel_size={tuple(kernel_size)}.")
    blocks = _blocks(output_size, kernel_size, dilation, padding, stride)
    if math.prod(blocks) != s[-1]:
        raise RuntimeError(f"Given output_size={tuple(output_size)}, kernel_size="
                           f"{tuple(kernel_size)}, dilation={tuple(dilation)}, padding="
                           f"{tuple(padding)}, stride={tuple(stride)}, expected size of "
                           f"input's dimension 2 to match the calculated number of sliding "
                           f"blocks {blocks[0]} * {blocks[1]} = {math.prod(blocks)}, but got "
                           f"input.size(2)={s[-1]}.")
    _not_for("col2im_out_cpu", self.dtype, False)
    return spec(s[:-2] + (s[-2] // k,) + tuple(output_size), self.dtype)


col2im = structured("col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, "
                    "int[2] dilation, int[2] padding, int[2] stride) -> Tensor", _col2im_meta,
                    inplace=False, method=False, function=False, promotes=False,
                    doc="Sum (N, C*kh*kw, L) columns back into a (N, C, H, W) image: the "
                        "adjoint of im2col.")


@col2im.impl("CPU")
def _col2im_cpu(out, self, output_size, kernel_size, dilation, padding, stride):
    ct = opmath(self.dtype)
    cols = compute_array(self, ct)
    blocks = _blocks(output_size, kernel_size, dilation, padding, stride)
    lead = cols.shape[:-2] + (cols.shape[-2] // math.prod(kernel_size),)
    cols = cols.reshape(lead + tuple(kernel_size) + blocks)
    n = len(lead)
    cols = cols.transpose((n, n + 1) + tuple(range(n)) + (n + 2, n + 3))
    full = module_of(cols).zeros(lead + tuple(o + 2 * p for o, p in zip(output_size, padding)),
                                 dtype=ct)
    col2im_add(full, cols, kernel_size, stride, dilation)
    ph, pw = padding
    assign_array(out._array(), full[..., ph:ph + output_size[0], pw:pw + output_size[1]])

# autocast runs these in another precision (ops/autocast.py)
autocast_policy(convolution, cpu=LOWER_PRECISION, cuda=LOWER_PRECISION)
