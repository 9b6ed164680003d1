"""CPU kernels for softmax, log-softmax and the losses: computed in float32 for float16/bfloat16
inputs (PyTorch's opmath) and rounded once into the output. The same kernels run on CuPy
arrays where the op is shared with CUDA. (Log-)softmax and their gradients over the last dim
of dense float32/float64 arrays run the C kernels of native/softmax.c instead."""
from __future__ import annotations

from math import prod

import numpy as np

from . import native, parallel
from .. import arrays
from ...core import dtype as dt
from ...core.promotion import opmath
from ...core.tensor import Tensor
from .normalization import array_of, fresh


NONE, MEAN, SUM = 0, 1, 2


def _acc(t: Tensor) -> np.ndarray:
    """The tensor's elements in the dtype its op computes in."""
    a = t._array()
    c = opmath(t.dtype)
    return a if a.dtype == c else a.astype(c)


def store(out: Tensor, result) -> None:
    o = out._array()
    np.copyto(o, arrays.asarray(result).reshape(o.shape), casting="unsafe")


def reduce(loss: np.ndarray, reduction: int):
    if reduction == NONE:
        return loss
    if reduction == SUM:
        return loss.sum()
    return loss.sum() / loss.size if loss.size else np.array(np.nan, loss.dtype)


def pointwise_loss_kernel(name, elementwise):
    """The kernel of a pointwise loss: `elementwise(x, y, *rest)` on the operands in the
    compute dtype, broadcast, then reduced."""
    def kernel(out, self, target, reduction=MEAN, *rest):
        x, y = pair(out, self, target)
        with np.errstate(over="ignore"):          # exp overflow is inf, as in PyTorch
            loss = elementwise(x, y, *rest)
        loss = np.broadcast_to(loss, np.broadcast_shapes(x.shape, y.shape))
        store(out, reduce(loss, reduction))
    kernel.__qualname__ = f"{name}_kernel"
    return kernel


def squared_error(x, y):
    return (x - y) ** 2


def smooth_l1(x, y, beta):
    d = np.abs(x - y)
    if beta == 0:
        return d
    return np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)


def huber(x, y, delta):
    d = np.abs(x - y)
    return np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))


def soft_margin(x, y):
    return np.log1p(np.exp(-y * x))


# Rows up to this long are summed by einsum: NumPy's reduce pays a per-row setup that
# dominates short rows (3-4x slower at 64 elements), while einsum's running float sum loses
# accuracy on long ones (pairwise summation is kept there).
_EINSUM_ROW = 1024


def row_sums(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """sum(a, axis=1, keepdims) of a block, or of a * b without forming the product."""
    if a.ndim == 2 and a.shape[1] <= _EINSUM_ROW and a.__class__ is np.ndarray:
        s = np.einsum("ij->i", a) if b is None else np.einsum("ij,ij->i", a, b)
        return s[:, None]
    return np.add.reduce(a if b is None else np.multiply(a, b), axis=1, keepdims=True)


def row_max(x: np.ndarray) -> np.ndarray:
    """max over axis 1 (keepdims) of a 2-D or 3-D block. Contiguous 2-D NumPy blocks take
    np.maximum.reduceat over the flat block, one segment per row: 2x faster than reduce's
    row-at-a-time loop on rows up to ~256 elements, no slower on long ones (the same max;
    NaN propagates alike). CuPy's maximum has no reduce: its max."""
    if x.__class__ is not np.ndarray:
        return x.max(axis=1, keepdims=True)
    if x.ndim == 2 and x.shape[1] and x.flags.c_contiguous:
        rows, n = x.shape
        return np.maximum.reduceat(x.reshape(-1), np.arange(0, rows * n, n))[:, None]
    return np.maximum.reduce(x, axis=1, keepdims=True)


def _softmax_part(x: np.ndarray, o: np.ndarray, cd: np.dtype, log: bool) -> None:
    """(log_)softmax over axis 1 of a cache-sized part `x`, written into `o`: the row max
    is subtracted, then exponentials are summed, in place on one buffer of dtype cd."""
    m = row_max(x)          # an infinite max gives NaN, as in torch
    if x.dtype != cd:
        z = x.astype(cd)
        z -= m
    else:
        z = np.subtract(x, m, out=o if o.dtype == cd else None)
    if log:
        s = row_sums(np.exp(z))
        if x.ndim == 2 and o.dtype != cd:
            # PyTorch's last-dim kernel keeps the row's sum and its log in the tensor's
            # float16/bfloat16 (the other dims' kernel keeps them in float32)
            s = np.log(s.astype(o.dtype).astype(cd)).astype(o.dtype).astype(cd)
        else:
            s = np.log(s, out=s)
        z -= s
    else:
        np.exp(z, out=z)
        s = row_sums(z)
        z *= np.reciprocal(s, out=s)            # as PyTorch: one division per row
    if z is not o:
        np.copyto(o, z, casting="unsafe")


def _softmax_into(out: Tensor, inputs, dim: int, part) -> None:
    """Call `part(*xs, o)` (a reduction over axis 1 of 2-D or 3-D blocks, written into o)
    on the inputs and the output seen as (outer, n, inner), n the size of `dim`, in blocks
    of about BLOCK elements split across threads."""
    o = out._array()
    if o.size == 0:
        return
    shape = o.shape or (1,)
    ax = dim % len(shape)
    n = shape[ax]
    outer, inner = prod(shape[:ax]), prod(shape[ax + 1:])
    direct = o.flags.c_contiguous
    parts = [t._array().reshape(outer, n, inner) for t in inputs]   # copies only if needed
    parts.append(o.reshape(outer, n, inner) if direct else
                 arrays.module_of(o).empty((outer, n, inner), o.dtype))
    if inner == 1:
        parts = [a[:, :, 0] for a in parts]
    per = max(1, parallel.BLOCK // (n * inner))
    if o.__class__ is not np.ndarray:           # on a GPU: one pass over everything
        part(*parts)
    elif per > 1 or inner == 1:                 # blocks of whole (n, inner) slabs
        def run(start, stop):
            # a block ends at its chunk's end: the parts work in place, so rows that two
            # threads both ran would have the row's sum taken off twice
            for i in range(start, stop, per):
                part(*[a[i:min(i + per, stop)] for a in parts])
        parallel.parallel_for(outer, run, n * inner)
    else:                                       # blocks of columns of one slab
        width = max(parallel.BLOCK // n, 1024)   # long enough inner loops for NumPy
        cols = -(-inner // width)

        def run(start, stop):
            for u in range(start, stop):
                i, c = divmod(u, cols)
                region = (slice(i, i + 1), slice(None), slice(c * width, (c + 1) * width))
                part(*[a[region] for a in parts])
        parallel.parallel_for(outer * cols, run, n * width)
    if not direct:
        np.copyto(o, parts[-1].reshape(o.shape))


# Rows shorter than this stay with NumPy, which works across rows, when there are more than
# _NATIVE_FEW_ROWS of them: in C each such row is a padded partial vector block (softmax
# over 2112 rows of 11: 508 us in C, 403 in NumPy; of 16: 156 against 433). A few short rows
# (a classifier's 64x10 logits) cost less in C than the NumPy path's Python (47 -> 12 us).
_NATIVE_MIN_ROW = 16
_NATIVE_FEW_ROWS = 256


def _rows_stay_with_numpy(n: int, size: int) -> bool:
    """Whether rows of `n` elements, `size` in all, are too short and many for the C kernels."""
    return n < _NATIVE_MIN_ROW and size > n * _NATIVE_FEW_ROWS


def _rows_native(name: str, out: Tensor, inputs, dim: int, log: bool) -> bool:
    """Run `name` of native/softmax.c (its (log-)softmax or gradient, each row of the
    last dim on one thread) where it applies, and say whether it did: the output and
    inputs dense float32/float64 arrays of one dtype and shape, not overlapping, reduced
    over their last dim (or one followed only by dims of size 1)."""
    o = out._array()
    xs = [t._array() for t in inputs]
    if not o.size or not native.dense(o, *xs):
        return False
    shape = o.shape or (1,)
    ax = dim % len(shape)
    if (_rows_stay_with_numpy(shape[ax], o.size) or prod(shape[ax + 1:]) != 1
            or any(x.shape != o.shape or np.may_share_memory(x, o) for x in xs)):
        return False
    fn = native.function("softmax", f"{name}_{native.suffix(o)}", "nn" + "p" * (len(xs) + 1)
                         + "ii")
    if fn is None:
        return False
    fn(o.size // shape[ax], shape[ax], *map(native.pointer, xs), native.pointer(o), log,
       native.threads(o.size))
    return True


_SOFTMAX_C = {dt.float32: "softmax_f32", dt.float64: "softmax_f64"}     # by dtype


def softmax_last_dim(x: Tensor, log: bool):
    """(log_)softmax over the last dim of `x` by native/softmax.c into an output made here,
    for the calls the fast path of _softmax/_log_softmax (ops/nn/loss.py) has checked: a
    row-major float32/float64 Tensor of at least one dim. None where `_rows_native` would
    not run the kernel (no elements, many short rows, the kernel off or not built): the
    general kernel runs."""
    shape = x._shape
    n = shape[-1]
    size = prod(shape)
    if not size or _rows_stay_with_numpy(n, size):
        return None
    fn = native.function("softmax", _SOFTMAX_C[x.dtype], "nnppii")
    a = array_of(x)
    if fn is None or a.__class__ is not np.ndarray:
        return None
    out = fresh(shape, x.dtype)
    fn(size // n, n, native.pointer(a), native.pointer(array_of(out)), log,
       native.threads(size))
    return out


_SOFTMAX_GRAD_C = {dt.float32: "softmax_backward_f32", dt.float64: "softmax_backward_f64"}


def softmax_backward_last_dim(grad: Tensor, y: Tensor, log: bool):
    """The gradient of (log_)softmax over the last dim by native/softmax.c into an output
    made here, for the calls the fast path of _softmax_backward_data and
    _log_softmax_backward_data (ops/nn/loss.py) has checked: `grad` and the output `y`
    row-major float32/float64 Tensors of one shape and dtype, at least one dim. None where
    `_rows_native` would not run the kernel: the general kernel runs."""
    shape = y._shape
    n = shape[-1]
    size = prod(shape)
    if not size or _rows_stay_with_numpy(n, size):
        return None
    fn = native.function("softmax", _SOFTMAX_GRAD_C[y.dtype], "nnpppii")
    g, a = array_of(grad), array_of(y)
    if fn is None or g.__class__ is not np.ndarray or a.__class__ is not np.ndarray:
        return None
    out = fresh(shape, y.dtype)
    pointer = native.pointer
    fn(size // n, n, pointer(g), pointer(a), pointer(array_of(out)), log,
       native.threads(size))
    return out


def softmax_kernel(out, self, dim, half_to_float):
    if _rows_native("softmax", out, (self,), dim, False):
        return
    cd = opmath(self.dtype)
    with np.errstate(all="ignore"):
        _softmax_into(out, (self,), dim, lambda x, o: _softmax_part(x, o, cd, False))


def log_softmax_kernel(out, self, dim, half_to_float):
    if _rows_native("softmax", out, (self,), dim, True):
        return
    cd = opmath(self.dtype)
    with np.errstate(all="ignore"):
        _softmax_into(out, (self,), dim, lambda x, o: _softmax_part(x, o, cd, True))


def _softmax_backward_part(cd, g, y, o) -> None:
    if g.dtype != cd:
        g, y = g.astype(cd), y.astype(cd)
    s = row_sums(g, y)
    r = np.subtract(g, s, out=o if o.dtype == cd else None)
    r *= y
    if r is not o:
        np.copyto(o, r, casting="unsafe")


def softmax_backward_kernel(out, grad_output, output, dim, input_dtype):
    if _rows_native("softmax_backward", out, (grad_output, output), dim, False):
        return
    cd = opmath(out.dtype)
    with np.errstate(all="ignore"):
        _softmax_into(out, (grad_output, output), dim,
                      lambda g, y, o: _softmax_backward_part(cd, g, y, o))


def _log_softmax_backward_part(cd, g, y, o) -> None:
    if g.dtype != cd:
        g, y = g.astype(cd), y.astype(cd)
    s = row_sums(g)
    e = np.exp(y)
    e *= s
    r = np.subtract(g, e, out=o if o.dtype == cd else e)
    if r is not o:
        np.copyto(o, r, casting="unsafe")


def log_softmax_backward_kernel(out, grad_output, output, dim, input_dtype):
    if _rows_native("softmax_backward", out, (grad_output, output), dim, True):
        return
    cd = opmath(out.dtype)
    with np.errstate(all="ignore"):
        _softmax_into(out, (grad_output, output), dim,
                      lambda g, y, o: _log_softmax_backward_part(cd, g, y, o))


def _nll_target(x: np.ndarray, target: Tensor):
    """The int64 targets of an (N, C) float32/float64 batch in the layout native/loss.c
    takes (one per row, contiguous), or None."""
    t = target._array()
    if x.ndim == 2 and x.shape[0] and t.dtype == np.int64 and t.shape == x.shape[:1] and \
            t.flags.c_contiguous and native.dense(x):
        return t
    return None


def _nll_weight(x: np.ndarray, weight):
    """(applies, the class weights as x's dtype or None) for native/loss.c."""
    if weight is None:
        return True, None
    w = _acc(weight)
    return w.size == x.shape[1] and native.dense(x, w), w


def _raise_bad_target(t: np.ndarray, bad: np.ndarray) -> None:
    if bad[0] >= 0:
        raise IndexError(f"Target {int(t[bad[0]])} is out of bounds.")


def _nll_native(outs, x: np.ndarray, target: Tensor, weight, reduction, ignore_index) -> bool:
    """nll_loss_forward by native/loss.c (the per-row terms and weights, each summed as
    NumPy's reduce sums them); False where it does not apply. One C call where the NumPy
    path below makes a dozen small NumPy calls (nanoGPT's (256, 65) batch: 49 -> 36 us a
    call); a reduced loss of x's dtype goes straight into the outputs (then 20.6 -> 16.2 us)."""
    t = _nll_target(x, target)
    applies, w = (False, None) if t is None else _nll_weight(x, weight)
    if not applies:
        return False
    n, loss, total = x.shape[0], outs[0]._array(), outs[1]._array()
    if reduction != NONE and loss.dtype == x.dtype and total.dtype == x.dtype:
        fn = native.function("loss", "nll_forward_reduced_" + native.suffix(x), "nnppnpipppp")
        if fn is None:
            return False
        scratch, bad = np.empty(2 * n, x.dtype), np.empty(1, np.int64)
        fn(n, x.shape[1], native.pointer(x), native.pointer(t), ignore_index,
           None if w is None else native.pointer(w), reduction == MEAN,
           native.pointer(scratch), native.pointer(loss), native.pointer(total),
           native.pointer(bad))
        _raise_bad_target(t, bad)
        return True
    fn = native.function("loss", "nll_forward_" + native.suffix(x), "nnppnpppp")
    if fn is None:
        return False
    terms, weights, bad = np.empty(n, x.dtype), np.empty(n, x.dtype), np.empty(1, np.int64)
    fn(n, x.shape[1], native.pointer(x), native.pointer(t), ignore_index,
       None if w is None else native.pointer(w), native.pointer(terms),
       native.pointer(weights), native.pointer(bad))
    _raise_bad_target(t, bad)
    if reduction == NONE:
        store(outs[0], terms)
        store(outs[1], 0)
        return True
    total, loss = np.add.reduce(weights), np.add.reduce(terms)
    if reduction == MEAN:
        with np.errstate(invalid="ignore", divide="ignore"):
            loss = loss / total                      # all ignored: 0/0 = nan, as PyTorch
    store(outs[0], loss)
    store(outs[1], total)
    return True


_NLL_REDUCED_C = {dt.float32: "nll_forward_reduced_f32", dt.float64: "nll_forward_reduced_f64"}


def nll_reduced_rows(x: Tensor, target: Tensor, reduction: int, ignore_index: int):
    """nll_loss_forward's (output, total_weight) by native/loss.c, made here, for the calls
    its fast path (ops/nn/loss.py) has checked: x a row-major (N, C) float32/float64 Tensor,
    N > 0, target a dense (N,) int64 Tensor, no class weights, a mean or sum. None where the
    kernel is off or not built: the general kernel runs. `_nll_native`'s reduced case."""
    fn = native.function("loss", _NLL_REDUCED_C[x.dtype], "nnppnpipppp")
    a, t = array_of(x), array_of(target)
    if fn is None or a.__class__ is not np.ndarray or t.__class__ is not np.ndarray:
        return None
    n = a.shape[0]
    loss, total = fresh((), x.dtype), fresh((), x.dtype)
    scratch, bad = np.empty(2 * n, a.dtype), np.empty(1, np.int64)
    pointer = native.pointer
    fn(n, a.shape[1], pointer(a), pointer(t), ignore_index, None, reduction == MEAN,
       pointer(scratch), pointer(array_of(loss)), pointer(array_of(total)), pointer(bad))
    _raise_bad_target(t, bad)
    return loss, total


def nll_kernel(outs, self, target, weight, reduction, ignore_index):
    """Pick -w[t] * x[t] along the class dim; entries equal to ignore_index count 0."""
    x = _acc(self)
    if _nll_native(outs, x, target, weight, reduction, ignore_index):
        return
    cdim = 1 if x.ndim >= 2 else 0
    n_classes = x.shape[cdim]
    t = target._array().astype(np.int64)
    if x.ndim == 1:
        t = t.reshape(())                      # unbatched: a 0-dim or one-element target
    valid = t != ignore_index
    if t.size and (t.min() < 0 or t.max() >= n_classes):    # (ignore_index may be either)
        bad = valid & ((t < 0) | (t >= n_classes))
        if bad.any():
            raise IndexError(f"Target {int(t[bad].ravel()[0])} is out of bounds.")
    safe = np.where(valid, t, 0)
    xp = arrays.module_of(x)
    if x.ndim == 2:                 # one fancy index: take_along_axis is a dozen calls
        picked = x[xp.arange(x.shape[0]), safe]
    else:
        picked = np.take_along_axis(x, np.expand_dims(safe, cdim), cdim).reshape(safe.shape)
    w = valid.astype(x.dtype)
    if weight is not None:
        w = w * _acc(weight).reshape(-1)[safe]
    loss = xp.where(valid, -picked * w, 0)        # an ignored row adds 0, even at -inf
    total = w.sum() if reduction != NONE else 0     # PyTorch leaves it 0 when not reducing
    if reduction == NONE:
        store(outs[0], loss)
    elif reduction == SUM:              # + 0: a zero loss is +0, as PyTorch's (it subtracts
        store(outs[0], loss.sum() + 0)  # the terms from 0), not the terms' -0
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            store(outs[0], loss.sum() / total + 0)   # all ignored: 0/0 = nan, as PyTorch
    store(outs[1], total)


def _nll_backward_native(out, grad_output, target, weight, reduction, ignore_index,
                         total_weight) -> bool:
    """nll_loss_backward by native/loss.c, for the batches `_nll_native` takes; False
    where it does not apply."""
    o = out._array()
    t = _nll_target(o, target)
    applies, w = (False, None) if t is None else _nll_weight(o, weight)
    g = _acc(grad_output)
    per_row = reduction == NONE
    if not applies or g.dtype != o.dtype or (g.shape != t.shape if per_row else g.size != 1):
        return False
    fn = native.function("loss", "nll_backward_" + native.suffix(o), "nnpnppipp")
    if fn is None:
        return False
    if reduction == MEAN:
        g = g / _acc(total_weight)
    g = np.ascontiguousarray(g).reshape(-1)
    bad = np.empty(1, np.int64)
    fn(o.shape[0], o.shape[1], native.pointer(t), ignore_index,
       None if w is None else native.pointer(w), native.pointer(g), per_row,
       native.pointer(o), native.pointer(bad))
    _raise_bad_target(t, bad)
    return True


def nll_backward_kernel(out, grad_output, self, target, weight, reduction, ignore_index,
                        total_weight):
    """nll_loss's input gradient as PyTorch's kernel computes it: zeros, and at each
    target's class -w[t] * grad (grad / total_weight for 'mean'); ignored targets give 0.
    One scatter, where the same gradient written in ops took a dozen."""
    if _nll_backward_native(out, grad_output, target, weight, reduction, ignore_index,
                            total_weight):
        return
    o = out._array()
    xp = arrays.module_of(o)
    o.fill(0)
    cd = opmath(out.dtype)
    t = target._array().astype(np.int64, copy=False)
    flat = o.ndim == 1
    t = t.reshape(1, 1) if flat else t.reshape(t.shape[0], -1)       # (N, L)
    valid = t != ignore_index
    safe = xp.where(valid, t, 0)
    w = valid.astype(cd)
    if weight is not None:
        w *= _acc(weight).reshape(-1)[safe]
    g = _acc(grad_output)
    if reduction == MEAN:
        g = g / _acc(total_weight)
    vals = xp.where(valid, -(w * (g.reshape(t.shape) if g.ndim else g)), 0)
    n, length = t.shape
    o3 = o.reshape(n, -1, length)       # the output is fresh and contiguous: a view
    o3[xp.arange(n)[:, None], safe, xp.arange(length)[None, :]] = vals.astype(o.dtype)


def pair(out, self, target):
    """Both operands in the op's compute dtype (float32 for float16/bfloat16)."""
    c = opmath(out.dtype)
    return self._array().astype(c, copy=False), target._array().astype(c, copy=False)


def bce_kernel(out, self, target, weight=None, reduction=MEAN):
    x, y = pair(out, self, target)
    if ((x < 0) | (x > 1)).any() or np.isnan(x).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    with np.errstate(divide="ignore"):
        loss = -(y * np.maximum(np.log(x), -100) + (1 - y) * np.maximum(np.log1p(-x), -100))
    if weight is not None:
        loss = loss * _acc(weight)
    store(out, reduce(np.broadcast_to(loss, x.shape), reduction))


def softplus_neg(x: np.ndarray) -> np.ndarray:
    """log(1 + exp(-x)) without overflow."""
    return np.maximum(-x, 0) + np.log1p(np.exp(-np.abs(x)))


def bce_logits_kernel(out, self, target, weight=None, pos_weight=None, reduction=MEAN):
    x, y = pair(out, self, target)
    scale = 1 if pos_weight is None else (_acc(pos_weight) - 1) * y + 1
    loss = (1 - y) * x + scale * softplus_neg(x)
    if weight is not None:
        loss = loss * _acc(weight)
    store(out, reduce(np.broadcast_to(loss, x.shape), reduction))


def multi_margin_kernel(out, self, target, p=1, margin=1, weight=None, reduction=MEAN):
    x = _acc(self).reshape(-1, self._shape[-1] if self._shape else 1)
    t = target._array().reshape(-1).astype(np.int64)
    c = x.shape[1]
    if ((t < 0) | (t >= c)).any():
        raise RuntimeError("target out of range")
    rows = arrays.module_of(t).arange(len(t))
    z = margin - x[rows, t][:, None] + x
    h = np.maximum(z, 0) ** p
    h[rows, t] = 0
    if weight is not None:
        h = h * _acc(weight).reshape(-1)[t][:, None]
    store(out, reduce(h.sum(1) / c, reduction))


def multilabel_counts(t: np.ndarray, c: int) -> np.ndarray:
    """How often each class is listed in each row's targets (up to the first negative)."""
    listed = np.cumprod(t >= 0, axis=-1).astype(bool)
    if listed.any() and (t[listed] >= c).any():
        raise RuntimeError("argument #2 'target' is out of range")
    rows = np.broadcast_to(arrays.module_of(t).arange(t.shape[0])[:, None], t.shape)
    flat = rows[listed] * c + t[listed]
    return np.bincount(flat, minlength=t.size).reshape(t.shape)


def multilabel_kernel(outs, self, target, reduction):
    c = self._shape[-1] if self._shape else 1
    x = _acc(self).reshape(-1, c)
    counts = multilabel_counts(target._array().reshape(-1, c).astype(np.int64), c)
    is_target = counts > 0
    z = np.maximum(1 - x[:, :, None] + x[:, None, :], 0)           # [n, j, i]
    pairs = counts[:, :, None] * ~is_target[:, None, :]
    store(outs[0], reduce((z * pairs).sum((1, 2)) / c, reduction))
    store(outs[1], is_target)


def _extended_labels(targets, target_lengths, blank):
    """The blank-interleaved label sequences (N, 2S+1), their lengths and where a
    transition may skip a position (s-2 -> s: a label different from the one before)."""
    lengths = np.asarray(target_lengths, np.int64)
    batch, longest = len(lengths), int(lengths.max(initial=0))
    t = targets._array().astype(np.int64)
    if t.ndim == 1:                                  # concatenated targets
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        idx = starts[:, None] + np.arange(longest)
        padded = t[np.minimum(idx, max(t.size - 1, 0))] if t.size else np.zeros(idx.shape,
                                                                                np.int64)
    else:
        padded = t[:, :longest]
    padded = np.where(np.arange(longest) < lengths[:, None], padded, blank)
    ext = np.full((batch, 2 * longest + 1), blank, np.int64)
    ext[:, 1::2] = padded
    skip = np.zeros(ext.shape, bool)
    skip[:, 3::2] = padded[:, 1:] != padded[:, :-1]
    return ext, 2 * lengths + 1, skip


def _logsumexp3(a, b, c):
    m = np.maximum(np.maximum(a, b), c)
    shift = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(a - shift) + np.exp(b - shift) + np.exp(c - shift)) + shift


def _shift(a, k):
    """a[..., s - k] (−inf where s < k)."""
    out = np.full_like(a, -np.inf)
    out[:, k:] = a[:, :a.shape[1] - k]
    return out


def ctc_kernel(outs, log_probs, targets, input_lengths, target_lengths, blank=0,
                zero_infinity=False):
    """The alpha recursion in log space, vectorised over the batch, looping over time."""
    lp = _acc(log_probs)
    n_time, batch, n_classes = lp.shape
    ext, ext_len, skip = _extended_labels(targets, target_lengths, blank)
    live = np.arange(ext.shape[1]) < ext_len[:, None]
    bad = live & ((ext < 0) | (ext >= n_classes))
    if bad.any():
        # PyTorch reads out of bounds here and returns a number; glasstorch refuses
        raise IndexError(f"ctc_loss: target {int(ext[bad][0])} is out of range for "
                         f"{n_classes} classes")
    rows = np.arange(batch)[:, None]
    alpha = np.full((batch, n_time, ext.shape[1]), -np.inf, lp.dtype)
    if n_time:
        first = np.full(ext.shape, -np.inf, lp.dtype)
        first[:, :2] = lp[0][rows, ext[:, :2]]
        alpha[:, 0] = np.where(live, first, -np.inf)
    for t in range(1, n_time):
        a = alpha[:, t - 1]
        a2 = np.where(skip, _shift(a, 2), -np.inf)
        alpha[:, t] = np.where(live, _logsumexp3(a, _shift(a, 1), a2) + lp[t][rows, ext],
                               -np.inf)
    lengths = np.asarray(input_lengths, np.int64)
    last = alpha[np.arange(batch), np.maximum(lengths - 1, 0)]
    end = ext_len - 1
    tail = np.where(end > 0, last[np.arange(batch), np.maximum(end - 1, 0)], -np.inf)
    nll = -np.logaddexp(last[np.arange(batch), end], tail)
    nll = np.where(lengths == 0, np.where(ext_len == 1, 0.0, np.inf), nll)
    if zero_infinity:
        nll = np.where(np.isinf(nll), 0.0, nll)
    store(outs[0], nll)
    store(outs[1], alpha)


def ctc_backward_kernel(out, grad, log_probs, targets, input_lengths, target_lengths,
                         neg_log_likelihood, log_alpha, blank, zero_infinity=False):
    """grad = exp(lp) - exp(log(sum over s with label c of alpha beta) + nll - lp), times
    the incoming gradient, and 0 past each input length (PyTorch's gradient, which is the
    log-softmax logits' gradient once composed with log_softmax's derivative)."""
    lp = _acc(log_probs)
    n_time, batch, n_classes = lp.shape
    ext, ext_len, skip = _extended_labels(targets, target_lengths, blank)
    rows = np.arange(batch)[:, None]
    lengths = np.asarray(input_lengths, np.int64)
    live = np.arange(ext.shape[1]) < ext_len[:, None]
    ends = (np.arange(ext.shape[1]) == ext_len[:, None] - 1) | (
        np.arange(ext.shape[1]) == ext_len[:, None] - 2)
    skip_from = np.zeros(skip.shape, bool)               # s -> s+2 allowed at s
    skip_from[:, :-2] = skip[:, 2:]
    alpha = _acc(log_alpha)
    nll = _acc(neg_log_likelihood)
    beta = np.full(alpha.shape, -np.inf, lp.dtype)
    grad_lp = np.zeros((batch, n_time, n_classes), lp.dtype)
    after = np.full(ext.shape, -np.inf, lp.dtype)
    for t in range(n_time - 1, -1, -1):
        emit = lp[t][rows, ext]
        b1 = np.full_like(after, -np.inf)
        b1[:, :-1] = after[:, 1:]
        b2 = np.full_like(after, -np.inf)
        b2[:, :-2] = np.where(skip_from[:, :-2], after[:, 2:], -np.inf)
        step = _logsumexp3(after, b1, b2) + emit
        start = np.where(ends & live, emit, -np.inf)
        cur = np.where((t == lengths - 1)[:, None], start,
                       np.where((t < lengths - 1)[:, None] & live, step, -np.inf))
        beta[:, t] = cur
        after = cur
        ab = alpha[:, t] + cur
        m = np.max(ab, axis=1, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, 0)
        summed = np.zeros((batch, n_classes), lp.dtype)
        np.add.at(summed, (np.broadcast_to(rows, ext.shape), ext), np.exp(ab - m))
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            lcab = np.log(summed) + m
            grad_lp[:, t] = np.exp(lp[t]) - np.exp(lcab + nll[:, None] - lp[t])
    g = np.moveaxis(grad_lp, 1, 0) * np.asarray(_acc(grad)).reshape(1, batch, 1)
    g = np.where((np.arange(n_time)[:, None] < lengths)[:, :, None], g, 0)
    if zero_infinity:
        g = np.where(np.isinf(nll)[None, :, None], 0, g)
    store(out, np.nan_to_num(g, nan=0.0) if zero_infinity else g)
