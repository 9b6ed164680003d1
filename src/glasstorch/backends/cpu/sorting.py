"""CPU kernels for sorting and selection: sort, topk, kthvalue, mode, unique, searchsorted,
bucketize, histc, histogram and bincount, on NumPy arrays (NaN sorted last, as PyTorch)."""
from __future__ import annotations

import numpy as np

from ...core import dtype as dt
from ...core.promotion import common_dtype
from ...core.shape import contiguous_strides, wrap_dim
from ...core.tensor import Tensor
from ..arrays import asarray, module_of
from .ranges import linspace_values


_FLOAT32 = np.dtype(np.float32)


def _keys(a: np.ndarray, d: dt.dtype) -> np.ndarray:
    """What to compare: the elements, with float16/bfloat16 widened to float32 (exact)."""
    return a.astype(_FLOAT32) if d is dt.float16 or d is dt.bfloat16 else a


def _reversed(a, axis: int):
    """a's view reversed along `axis` (np.flip's result, without its argument checks)."""
    return a[(slice(None),) * axis + (slice(None, None, -1),)]


def _argsort(keys: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable order along `axis` (NaN largest); descending keeps ties in input order."""
    if not descending:
        return np.argsort(keys, axis=axis, kind="stable")
    n = keys.shape[axis]
    order = np.argsort(_reversed(keys, axis), axis=axis, kind="stable")
    return (n - 1) - _reversed(order, axis)


def _rows(t: Tensor, dim: int):
    """The elements (and comparison keys) with `dim` moved last, as (rows, n) arrays."""
    if not t._shape:
        a = t._array().reshape(1, 1)
    else:
        a = np.moveaxis(t._array(), dim, -1)
        if a.size:                                   # callers skip empty inputs
            a = a.reshape(-1, a.shape[-1])
    return a, _keys(a, t.dtype)


def store(out: Tensor, result: np.ndarray) -> None:
    """Write a per-row result into a reduced (or keepdim) output, casting to its dtype."""
    np.copyto(out._array(), result.reshape(out._shape), casting="unsafe")


def not_implemented(kernel: str, self: Tensor) -> None:
    raise NotImplementedError(f'"{kernel}" not implemented for \'{self.dtype.cname}\'')


def _sort_fill(outs, self, dim, descending):
    values, indices = outs
    a = self._array()
    if not self._shape:
        np.copyto(values._array(), a, casting="unsafe")
        indices._array()[()] = 0
        return
    d = wrap_dim(dim, a.ndim)
    order = _argsort(_keys(a, self.dtype), d, descending)
    np.copyto(indices._array(), order)
    np.copyto(values._array(), np.take_along_axis(a, order, d), casting="unsafe")


def sort_cpu(outs, self, dim=-1, descending=False):
    _sort_fill(outs, self, dim, descending)


def sort_stable_cpu(outs, self, stable=None, dim=-1, descending=False):
    _sort_fill(outs, self, dim, descending)


def _topk_cpu(outs, self, k, dim=-1, largest=True, sorted=True):
    values, indices = outs
    a = self._array()
    if not self._shape:
        np.copyto(values._array(), a, casting="unsafe")
        indices._array()[()] = 0
        return
    d = wrap_dim(dim, a.ndim)
    keys = _keys(a, self.dtype)
    n = a.shape[d]
    # few of many: partition (NaN last), then sort just those; a GPU sorts (CuPy's partition
    # does not order NaN)
    if 0 < k <= n // 8 and a.__class__ is np.ndarray:
        cut = (slice(None),) * d + ((slice(n - k, None) if largest else slice(0, k)),)
        chosen = np.argpartition(keys, n - k if largest else k - 1, axis=d)[cut]
        picked = np.take_along_axis(keys, chosen, d)
        order = np.take_along_axis(chosen, _argsort(picked, d, largest), d)
    else:
        order = _argsort(keys, d, largest)[(slice(None),) * d + (slice(0, k),)]
    np.copyto(indices._array(), order)
    np.copyto(values._array(), np.take_along_axis(a, order, d), casting="unsafe")


def _kthvalue_cpu(outs, self, k, dim=-1, keepdim=False):
    a, keys = _rows(self, wrap_dim(dim, self.dim()))
    if not a.size:
        return
    if keys.__class__ is np.ndarray:
        pos = np.argpartition(keys, k - 1, axis=1)[:, k - 1:k]      # NaN partitions last
    else:                       # CuPy's partition does not order NaN: a stable sort does
        pos = _argsort(keys, 1, False)[:, k - 1:k]
    store(outs[1], pos)
    store(outs[0], np.take_along_axis(a, pos, 1))


def mode_cpu(outs, self, dim=-1, keepdim=False):
    a, keys = _rows(self, wrap_dim(dim, self.dim()))
    if not a.size:
        return
    rows, n = keys.shape
    xp = module_of(keys)
    order = np.argsort(keys, axis=1, kind="stable")
    s = np.take_along_axis(keys, order, 1)
    start = xp.ones((rows, n), dtype=bool)
    start[:, 1:] = s[:, 1:] != s[:, :-1]
    starts = np.flatnonzero(start)                   # runs of equal values, row after row
    ends = np.append(starts[1:], rows * n) - 1
    counts = ends - starts + 1
    run_row = starts // n
    if xp is np:
        best = np.maximum.reduceat(counts, np.searchsorted(run_row, np.arange(rows)))
    else:                           # CuPy's maximum has no reduceat: a scatter-max per row
        best = xp.zeros(rows, counts.dtype)
        xp.maximum.at(best, run_row, counts)
    candidates = np.flatnonzero(counts == best[run_row])
    rows_of = run_row[candidates]
    first = xp.ones(candidates.size, dtype=bool)     # each row's first (smallest) candidate
    first[1:] = rows_of[1:] != rows_of[:-1]
    pos = order.reshape(-1)[ends[candidates[first]]]     # the run's last input index
    store(outs[1], pos)
    store(outs[0], a[xp.arange(rows), pos])


def _check_unique_dtype(name: str, self: Tensor) -> None:
    if self.dtype.is_complex:
        not_implemented(name, self)


def _flat_unique(self: Tensor, consecutive: bool):
    """(values, inverse, counts) as arrays over the flattened elements (NaNs all distinct)."""
    a = self._array().reshape(-1)
    keys = _keys(a, self.dtype)
    order = None if consecutive else np.argsort(keys, kind="stable")
    s = keys if consecutive else keys[order]
    new = module_of(a).empty(s.shape, dtype=bool)
    new[:1] = True
    np.not_equal(s[1:], s[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    values = (a if consecutive else a[order])[starts]
    ids = np.cumsum(new) - 1
    if not consecutive:
        inverse = np.empty_like(ids)
        inverse[order] = ids
        ids = inverse
    counts = np.diff(np.append(starts, a.size))
    return values, ids.reshape(self._shape), counts


def _dim_unique(self: Tensor, d: int, consecutive: bool):
    """(slices, inverse, counts): the distinct slices along `d`, in lexicographic order
    unless `consecutive` (a slice holding NaN is distinct from every other)."""
    n = self._shape[d]
    if self.numel() == 0 and n:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    moved = np.moveaxis(self._array(), d, 0)
    xp = module_of(moved)
    keys = _keys(moved.reshape(n, moved[0].size if n else 0), self.dtype)
    if consecutive or n == 0:
        order = xp.arange(n)
    else:
        order = np.lexsort(keys.T[::-1]) if keys.shape[1] else xp.arange(n)
    s = keys[order]
    new = xp.empty(n, dtype=bool)
    new[:1] = True
    np.any(s[1:] != s[:-1], axis=1, out=new[1:])
    starts = np.flatnonzero(new)
    values = np.moveaxis(moved[order[starts]], 0, d)
    ids = np.cumsum(new) - 1
    inverse = np.empty_like(ids)
    inverse[order] = ids
    counts = np.diff(np.append(starts, n))
    return values, inverse, counts


def _tensors(self: Tensor, values, inverse, counts, return_inverse, return_counts, dim=None):
    stride = None
    if dim is not None:       # laid out as the slices (dim first), as PyTorch's result
        moved = contiguous_strides((values.shape[dim],) + values.shape[:dim]
                                   + values.shape[dim + 1:])
        stride = moved[1:dim + 1] + moved[:1] + moved[dim + 1:]
    out = Tensor._empty(values.shape, self.dtype, self.device, stride)
    np.copyto(out._array(), values)
    inv = Tensor._empty(inverse.shape if return_inverse else (0,), dt.int64, self.device)
    if return_inverse:
        np.copyto(inv._array(), inverse)
    cnt = Tensor._empty(counts.shape if return_counts else (0,), dt.int64, self.device)
    if return_counts:
        np.copyto(cnt._array(), counts)
    return out, inv, cnt


def unique2_cpu(self, sorted=True, return_inverse=False, return_counts=False):
    _check_unique_dtype("unique", self)
    return _tensors(self, *_flat_unique(self, False), return_inverse, return_counts)


def unique_dim_cpu(self, dim, sorted=True, return_inverse=False, return_counts=False):
    _check_unique_dtype("unique_dim", self)
    d = wrap_dim(dim, self.dim(), scalar_ok=False)
    return _tensors(self, *_dim_unique(self, d, False), return_inverse, return_counts, d)


def unique_consecutive_cpu(self, return_inverse=False, return_counts=False, dim=None):
    _check_unique_dtype("unique_consecutive", self)
    if dim is None:
        return _tensors(self, *_flat_unique(self, True), return_inverse, return_counts)
    d = wrap_dim(dim, self.dim(), scalar_ok=False)
    return _tensors(self, *_dim_unique(self, d, True), return_inverse, return_counts, d)


SS = "torch.searchsorted(): "


def search_side(side, right) -> bool:
    """Whether to search on the right: `side` wins, but may not contradict `right`."""
    if side is None:
        return bool(right)
    if side not in ("left", "right"):
        raise RuntimeError(f"{SS}side can only be 'left' or 'right' but got {side}")
    if side == "left" and right:
        raise RuntimeError(f"{SS}side and right can't be set to opposites, got side of left "
                           "while right was True")
    return side == "right"


def _search(boundaries: np.ndarray, values: np.ndarray, right: bool) -> np.ndarray:
    """Row-wise searchsorted of values (*B, K) in boundaries (*B, M) or (M,)."""
    side = "right" if right else "left"
    if boundaries.ndim == 1:
        return np.searchsorted(boundaries, values, side)
    m = boundaries.shape[-1]
    xp = module_of(boundaries)
    if m == 0 or values.size == 0:
        return xp.zeros(values.shape, dtype=np.int64)
    b = boundaries.reshape(-1, m)
    v = values.reshape(b.shape[0], -1)
    # One search over every row: replace the keys by their ranks among all keys (order and
    # ties kept) and shift each row's ranks past the previous row's.
    _, ranks = np.unique(np.concatenate([b.ravel(), v.ravel()]), return_inverse=True)
    shift = (ranks.max() + 1) * xp.arange(b.shape[0])[:, None]      # ranks is not empty
    rb = ranks[:b.size].reshape(b.shape) + shift
    rv = ranks[b.size:].reshape(v.shape) + shift
    found = np.searchsorted(rb.ravel(), rv, side) - m * xp.arange(b.shape[0])[:, None]
    return found.reshape(values.shape)


def _searchsorted_fill(out, boundaries_t, values, right, sorter):
    common = common_dtype(boundaries_t, values)
    compute = _FLOAT32 if common is dt.float16 or common is dt.bfloat16 else common.np
    boundaries = boundaries_t._array()
    if sorter is not None:
        order = sorter._array()
        n = boundaries.shape[-1]
        if order.size and (order.min() < 0 or order.max() >= n):
            raise RuntimeError(f"{SS}sorter index out of range")
        boundaries = np.take_along_axis(boundaries, order, -1)
    boundaries = boundaries.astype(compute, copy=False)
    if isinstance(values, Tensor):
        v = values._array().astype(compute, copy=False)
    else:
        v = asarray(values, compute, like=boundaries)
    np.copyto(out._array(), _search(boundaries, v, right), casting="unsafe")


def searchsorted_cpu(out, sorted_sequence, self, out_int32=False, right=False, side=None,
                      sorter=None):
    _searchsorted_fill(out, sorted_sequence, self, search_side(side, right), sorter)


def bucketize_cpu(out, self, boundaries, out_int32=False, right=False):
    _searchsorted_fill(out, boundaries, self, right, None)


def _bin_counts(x: np.ndarray, edges_lo, edges_hi, bins, weights=None, edges=None):
    """Counts (or weight sums) of x in `bins` equal bins over [lo, hi] (the last bin closed),
    or in the bins between `edges`."""
    inside = (x >= edges_lo) & (x <= edges_hi)
    x = x[inside]
    if edges is None:
        pos = ((x - edges_lo) * bins / (edges_hi - edges_lo)).astype(np.int64)
    else:
        pos = np.searchsorted(edges, x, "right") - 1
    np.minimum(pos, bins - 1, out=pos)
    return np.bincount(pos, None if weights is None else weights[inside], minlength=bins)


def histc_cpu(out, self, bins=100, min=0, max=0):
    x = self._array().reshape(-1)        # in its own dtype: float16 rounds every step, as c10
    lo, hi = x.dtype.type(min), x.dtype.type(max)
    if lo == hi and x.size:
        lo, hi = x.min(), x.max()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{float(lo):g}, {float(hi):g}] is not "
                           "finite")
    np.copyto(out._array(), _bin_counts(x, lo, hi, bins), casting="unsafe")


HD = "torch.histogramdd: "


def histogram_fill(outs, self, edges, weight, density):
    hist, bin_edges = outs
    x = self._array().reshape(-1)
    w = None if weight is None else weight._array().reshape(-1)
    counts = _bin_counts(x, edges[0], edges[-1], edges.size - 1, w, edges)
    if density:
        total = counts.sum()
        counts = counts / (total * np.diff(edges)) if total else counts * np.nan
    np.copyto(hist._array(), counts, casting="unsafe")
    np.copyto(bin_edges._array(), edges, casting="unsafe")


def histogram_bins_cpu(outs, self, bins, weight=None, density=False):
    histogram_fill(outs, self, bins._array(), weight, density)


def _bincount_cpu(self, weights=None, minlength=0):
    if self.dtype.category != dt.INT:
        not_implemented("bincount_cpu", self)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    x = self._array()
    if x.ndim != 1 or (x.size and x.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.dim() != 1 or weights.numel() != x.size):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if weights is None:
        result, dtype = np.bincount(x, minlength=minlength), dt.int64
    else:
        dtype = dt.float32 if weights.dtype is dt.float32 else dt.float64
        w = weights._array().astype(np.float64)
        result = np.bincount(x, w, minlength=minlength)
    out = Tensor._empty(result.shape, dtype, self.device)
    np.copyto(out._array(), result, casting="unsafe")
    return out


def _histogram_cpu(outs, self, bins=100, range=None, weight=None, density=False):
    x = self._array()
    if range is not None:
        lo, hi = float(range[0]), float(range[1])
    elif x.size:
        lo, hi = float(x.min()), float(x.max())
    else:
        lo, hi = 0.0, 1.0
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"{HD}dimension 0's range [{lo:g}, {hi:g}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    lo, hi = (float(v) for v in np.array([lo, hi], dtype=x.dtype))
    edges = linspace_values(lo, hi, bins + 1, self.dtype)       # torch.linspace's edges
    histogram_fill(outs, self, asarray(edges, like=x), weight, density)


def _median_positions(keys: np.ndarray, ignore_nan: bool):
    """Per row of `keys` (rows, n): the input index of the lower median. With NaN present
    median picks the first NaN; nanmedian skips NaNs (all NaN: the first NaN)."""
    order = np.argsort(keys, axis=1, kind="stable")
    n = keys.shape[1]
    if keys.dtype.kind == "f":
        nans = np.isnan(keys).sum(axis=1, keepdims=True)
        if ignore_nan:
            valid = n - nans
            pos = np.where(valid > 0, (valid - 1) // 2, 0)
        else:
            pos = np.where(nans > 0, n - nans, (n - 1) // 2)
    else:
        pos = module_of(keys).full((keys.shape[0], 1), (n - 1) // 2)
    return np.take_along_axis(order, pos, 1)


def median_all_kernel(ignore_nan):
    def kernel(out, self):
        if self.numel() == 0:            # NaN; what the NaN converts to for integers
            out._array()[()] = np.nan if self.dtype.is_floating_point else np.iinfo(
                self.dtype.np).min
            return
        a = self._array().reshape(1, -1)
        keys = _keys(a, self.dtype)
        store(out, np.take_along_axis(a, _median_positions(keys, ignore_nan), 1))
    return kernel


def median_dim_kernel(ignore_nan):
    def kernel(outs, self, dim, keepdim=False):
        a, keys = _rows(self, wrap_dim(dim, self.dim()))
        if not a.size:
            return
        pos = _median_positions(keys, ignore_nan)
        store(outs[1], pos)
        store(outs[0], np.take_along_axis(a, pos, 1))
    return kernel


def histogramdd_counts(points: np.ndarray, edges: list, weights, density: bool) -> np.ndarray:
    """histogramdd's counts (or weight sums, or density) of the (n, d) points over the grid
    of bins that the d edge arrays make; the last bin of each dim is closed on the right."""
    sizes = [e.size - 1 for e in edges]
    inside = np.ones(points.shape[0], dtype=bool)
    cells = []
    for i, e in enumerate(edges):        # the last bin of each dim is closed on the right
        x = points[:, i]
        inside &= (x >= e[0]) & (x <= e[-1])
        cells.append(np.minimum(np.searchsorted(e, x, "right") - 1, sizes[i] - 1))
    flat = np.ravel_multi_index([np.clip(c[inside], 0, None) for c in cells], sizes) \
        if sizes else np.zeros(0, np.int64)
    w = None if weights is None else weights[inside]
    hist = np.bincount(flat, w, minlength=int(np.prod(sizes))).reshape(sizes)
    if density:
        total = hist.sum()
        volume = np.ones(sizes)
        for i, e in enumerate(edges):
            shape = [1] * len(sizes)
            shape[i] = sizes[i]
            volume = volume * np.diff(e).reshape(shape)
        with np.errstate(all="ignore"):
            hist = hist / (total * volume)
    return hist
