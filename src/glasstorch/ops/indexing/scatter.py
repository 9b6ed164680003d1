"""Gather, scatter and the index_* family: reads and writes along one dimension at given indices.

gather/scatter pair every element of an `index` tensor (as many dims as self) with the
position it names along `dim`; the index may be smaller than self (and than src) in every
other dim. The index_* ops instead take a vector of positions along `dim` and move whole
slices. put/take_along_dim/masked_scatter complete the family. Writes go through NumPy's
fancy assignment, and accumulating writes through `ufunc.at`, so duplicate indices add up
(or multiply, or take the max/min) as in PyTorch. Index values are checked before anything
is written, so a bad index leaves the destination unchanged.

The kernels run on NumPy and CuPy arrays alike. CuPy's `ufunc.at` scatters only with add
(and max/min for some dtypes), so on a GPU the other accumulating writes combine the values
bound for each position first (`_combine_at`) and then write every position once.
"""
from __future__ import annotations

import warnings

import numpy as np

from ...backends.arrays import module_of
from ...core import dtype as dt
from ...core.shape import broadcast_shapes2, wrap_dim
from ...core.tensor import Tensor, preserve_format
from ..copying.copies import assign_array, strides_for
from .subscripts import (_assert_no_overlap, _masked_fill_cpu, _masked_fill_meta, add_at,
                       check_scalar_fits, masked_fill as _masked_fill_scalar)
from ..registry import composite, export, spec, structured
from ..autocast import PROMOTE, autocast_policy
from ..wrappers import bad_self, generate_wrapper

_INDEX_DTYPES = (dt.int32, dt.int64)


def _nonempty_dim(t: Tensor) -> int:
    return max(t.dim(), 1)


def _size(t: Tensor, d: int) -> int:
    return t._shape[d] if t._shape else 1


def _as_nd(a: np.ndarray) -> np.ndarray:
    """A 0-dim array as a 1-element vector view (PyTorch treats scalars as size-1 dims)."""
    return a.reshape(1) if a.ndim == 0 else a


def _copy_self(out: Tensor, self: Tensor, *read) -> np.ndarray:
    """out's array holding self's values, after PyTorch's check that out shares no memory
    with the tensors the op still has to read."""
    for t in read:
        if isinstance(t, Tensor):
            _assert_no_overlap(out, t)
    arr = out._array()
    if out is not self:
        assign_array(arr, self._array())
    return _as_nd(arr)


# ---- gather / scatter checks -----------------------------------------------------------

def _check_index_dtype(name: str, index: Tensor) -> None:
    if index.dtype not in _INDEX_DTYPES and index.numel():   # an empty index reads nothing
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


def _gather_shape_check(self, d, index) -> None:
    if index.numel() == 0:      # an empty index reads nothing, so nothing is checked
        return
    if _nonempty_dim(index) != _nonempty_dim(self):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for k in range(_nonempty_dim(self)):
        if k != d and _size(index, k) > _size(self, k):
            raise RuntimeError(f"Size does not match at dimension {k} expected index "
                               f"{list(index._shape)} to be no larger than self "
                               f"{list(self._shape)} apart from dimension {d}")


def _scatter_shape_check(self, d, index, src=None) -> None:
    if index.numel() == 0:
        return
    if _nonempty_dim(index) != _nonempty_dim(self):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if src is not None and _nonempty_dim(index) != _nonempty_dim(src):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    for k in range(_nonempty_dim(self)):
        if (k != d and _size(index, k) > _size(self, k)) or (
                src is not None and _size(index, k) > _size(src, k)):
            text = (f"Expected index {list(index._shape)} to be no larger than self "
                    f"{list(self._shape)} apart from dimension {d}")
            if src is not None:
                text += f" and to be no larger size than src {list(src._shape)}"
            raise RuntimeError(text)


def _check_bounds(idx: np.ndarray, d: int, size: int, *, negative=False, error=RuntimeError,
                  prefix="") -> None:
    """PyTorch's 'index i is out of bounds for dimension d with size n'."""
    if not idx.size:
        return
    low = -size if negative else 0
    if idx.__class__ is np.ndarray:
        wrong = idx.min() < low or idx.max() >= size
    else:                               # a GPU array: one synchronisation, not two
        wrong = bool(((idx < low) | (idx >= size)).any())
    if wrong:
        bad = int(idx[(idx < low) | (idx >= size)].ravel()[0])
        raise error(f"{prefix}index {bad} is out of bounds for dimension {d} with size {size}")


def _scatter_key(idx: np.ndarray, d: int) -> tuple:
    """The fancy index that sends element p of `idx` to position p with p[d] = idx[p]."""
    n, xp = idx.ndim, module_of(idx)
    return tuple(idx if k == d else xp.arange(s).reshape((s,) + (1,) * (n - 1 - k))
                 for k, s in enumerate(idx.shape))


_HALF = (dt.float16.np, dt.bfloat16.np)


def _ufunc_at(ufunc, arr, key, values) -> None:
    """ufunc.at(arr, key, values) for add, multiply, maximum or minimum, on NumPy or CuPy
    arrays (key: index arrays; slices too for add)."""
    if arr.__class__ is np.ndarray:
        ufunc.at(arr, key, values)
    elif ufunc is np.add:
        add_at(arr, key, values)
    else:
        _combine_at(ufunc, arr, key, values)


def _combine_at(ufunc, arr, key, values) -> None:
    """ufunc.at on a CuPy array: the values are sorted by the position they go to, combined
    per position by a segmented scan (log2(n) whole-array steps, each combining a value with
    the partial result `step` places before it when both go to the same position), and each
    position is then combined once with its values' result. NaN propagates as in ufunc.at."""
    xp = module_of(arr)
    idx = xp.broadcast_arrays(*key)
    flat = xp.zeros(idx[0].shape, np.int64)
    for i, size in zip(idx, arr.shape):
        flat = flat * size + i
    flat = flat.ravel()
    if not flat.size:
        return
    order = xp.argsort(flat, kind="stable")
    where = flat[order]
    v = xp.broadcast_to(xp.asarray(values, arr.dtype), idx[0].shape).ravel()[order]
    step, n = 1, where.size
    while step < n:
        same = where[step:] == where[:-step]
        v[step:] = xp.where(same, ufunc(v[step:], v[:-step]), v[step:])
        step *= 2
    last = xp.ones(n, bool)
    last[:-1] = where[1:] != where[:-1]
    pos = xp.unravel_index(where[last], arr.shape)
    arr[pos] = ufunc(arr[pos], v[last])


def _accumulate(ufunc, arr: np.ndarray, key, values) -> None:
    """ufunc.at(arr, key, values); float16/bfloat16 accumulate in float32 and round once, as
    PyTorch's scatter/index_add kernels do."""
    if arr.dtype in _HALF:
        work = arr.astype(np.float32)
        _ufunc_at(ufunc, work, key, values.astype(np.float32))
        assign_array(arr, work)
    else:
        _ufunc_at(ufunc, arr, key, values)


def _leading(a: np.ndarray, shape) -> np.ndarray:
    """The corner of `a` with the index's shape (src may be larger in every dim)."""
    return a[tuple(slice(0, s) for s in shape)]


def _read_index(index: Tensor, d: int, size: int) -> np.ndarray:
    idx = _as_nd(index._array())
    _check_bounds(idx, d, size)
    return idx


# ---- gather ----------------------------------------------------------------------------

def _gather_meta(self, dim, index, sparse_grad=False):
    d = wrap_dim(dim, self.dim())
    _check_index_dtype("gather", index)
    _gather_shape_check(self, d, index)
    return spec(index._shape, self.dtype)


gather = structured("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> "
                    "Tensor", _gather_meta, inplace=False, promotes=False,
                    doc="out[p] = self[p with p[dim] replaced by index[p]]: the elements of "
                        "self at `index` along `dim` (shaped like index).")


@gather.impl("CPU")
def _gather_cpu(out, self, dim, index, sparse_grad=False):
    if not out.numel():
        return
    d = wrap_dim(dim, self.dim())
    _assert_no_overlap(out, self)
    arr = _as_nd(self._array())
    idx = _read_index(index, d, arr.shape[d])
    sub = arr[tuple(slice(None) if k == d else slice(0, s) for k, s in enumerate(idx.shape))]
    assign_array(out._array(), np.take_along_axis(sub, idx, axis=d).reshape(out._shape))


# ---- scatter ---------------------------------------------------------------------------

_SCATTER_REDUCE = {"add": np.add, "multiply": np.multiply}


def _scatter_src_meta(self, dim, index, src, reduce=None):
    d = wrap_dim(dim, self.dim())
    _check_index_dtype("scatter", index)
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter(): argument 'src' must be Tensor, not {type(src).__name__}")
    if src.dtype is not self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce is not None and reduce not in _SCATTER_REDUCE:
        raise RuntimeError("reduce argument must be either add or multiply.")
    _scatter_shape_check(self, d, index, src)
    return spec(self._shape, self.dtype)


def _scatter_value_meta(self, dim, index, value, reduce=None):
    d = wrap_dim(dim, self.dim())
    _check_index_dtype("scatter", index)
    if reduce is not None and reduce not in _SCATTER_REDUCE:
        raise RuntimeError("reduce argument must be either add or multiply.")
    check_scalar_fits(value, self.dtype)
    _scatter_shape_check(self, d, index)
    return spec(self._shape, self.dtype)


def _scatter_into(out, self, dim, index, values, reduce, src=None):
    """values: an array (src) or a scalar; reduce None, 'add' or 'multiply'."""
    d = wrap_dim(dim, self.dim())
    idx = _read_index(index, d, _size(self, d)) if index.numel() else None
    arr = _copy_self(out, self, index, src)
    if idx is None:
        return
    key = _scatter_key(idx, d)
    if src is not None:
        values = _leading(_as_nd(values), idx.shape)
    else:
        values = np.asarray(values).astype(arr.dtype)
    if reduce is None:
        arr[key] = values
    else:
        _accumulate(_SCATTER_REDUCE[reduce], arr, key, values)


def _scatter_src_kernel(out, self, dim, index, src, reduce=None):
    _scatter_into(out, self, dim, index, src._array(), reduce, src)


def _scatter_value_kernel(out, self, dim, index, value, reduce=None):
    _scatter_into(out, self, dim, index, value.item() if isinstance(value, Tensor) else value,
                  reduce)


_SCATTER_DOC = "self with `src` (or `value`) written at `index` along `dim`."
scatter_src = structured("scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
                         _scatter_src_meta, promotes=False, doc=_SCATTER_DOC)
scatter_value = structured("scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> "
                           "Tensor", _scatter_value_meta, promotes=False, doc=_SCATTER_DOC)
scatter_reduce_src = structured("scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, "
                                "*, str reduce) -> Tensor", _scatter_src_meta, promotes=False,
                                doc=_SCATTER_DOC)
scatter_reduce_value = structured("scatter.value_reduce(Tensor self, int dim, Tensor index, "
                                  "Scalar value, *, str reduce) -> Tensor", _scatter_value_meta,
                                  promotes=False, doc=_SCATTER_DOC)
for _decl in (scatter_src, scatter_reduce_src):
    _decl.impl("CPU")(_scatter_src_kernel)
for _decl in (scatter_value, scatter_reduce_value):
    _decl.impl("CPU")(_scatter_value_kernel)

_REDUCE_WARNING = ("The reduce argument of torch.scatter with Tensor src is deprecated and will "
                   "be removed in a future PyTorch release. Use torch.scatter_reduce instead for "
                   "more reduction options.")


def _scatter_overload(src, value, reduce, stacklevel=4):
    """(declaration, the src-or-value argument) for a scatter call, as PyTorch's binding.
    The warning's stacklevel counts the public function's __torch_function__ wrapper."""
    if (src is None) == (value is None):
        raise TypeError("scatter(): expected exactly one of 'src' (a Tensor) or 'value' "
                        "(a number)")
    arg = src if src is not None else value
    if isinstance(arg, Tensor):
        if reduce is not None:
            warnings.warn(_REDUCE_WARNING, UserWarning, stacklevel=stacklevel)
            return scatter_reduce_src, arg
        return scatter_src, arg
    return (scatter_value if reduce is None else scatter_reduce_value), arg


def scatter(input, dim, index, src=None, *, value=None, reduce=None, out=None):
    """Out-of-place scatter_: self with src (a Tensor) or value (a number) written at `index`
    along `dim`; reduce='add'/'multiply' combines with the existing values instead."""
    return _scatter(input, dim, index, src, value, reduce, out)


def _scatter(input, dim, index, src, value, reduce, out=None):
    if not isinstance(input, Tensor):
        bad_self("scatter", input)
    decl, arg = _scatter_overload(src, value, reduce, stacklevel=5)
    kwargs = {} if reduce is None else {"reduce": reduce}
    if out is not None:
        kwargs["out"] = out
    return decl.function(input, dim, index, arg, **kwargs)


_scatter_inplace = {d: generate_wrapper("scatter_", d.inplace.schema, d.inplace, method=True,
                                        doc=d.doc)
                    for d in (scatter_src, scatter_value, scatter_reduce_src,
                              scatter_reduce_value)}


def _scatter_method(self, dim, index, src=None, *, value=None, reduce=None):
    return _scatter(self, dim, index, src, value, reduce)


def _scatter_inplace_method(self, dim, index, src=None, *, value=None, reduce=None):
    decl, arg = _scatter_overload(src, value, reduce)
    if reduce is None:
        return _scatter_inplace[decl](self, dim, index, arg)
    return _scatter_inplace[decl](self, dim, index, arg, reduce=reduce)


def _export_method(name, fn, doc):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    export(name, fn, method=True, function=False)


export("scatter", scatter)
_export_method("scatter", _scatter_method, scatter.__doc__)
_export_method("scatter_", _scatter_inplace_method, "In-place scatter (see scatter).")


# ---- scatter_add / scatter_reduce ------------------------------------------------------

def _scatter_add_meta(self, dim, index, src):
    d = wrap_dim(dim, self.dim())
    _check_index_dtype("scatter", index)
    if src.dtype is not self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    _scatter_shape_check(self, d, index, src)
    return spec(self._shape, self.dtype)


scatter_add = structured("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
                         _scatter_add_meta, promotes=False,
                         doc="self with src added at `index` along `dim` (repeated indices "
                             "accumulate).")


@scatter_add.impl("CPU")
def _scatter_add_cpu(out, self, dim, index, src):
    _scatter_into(out, self, dim, index, src._array(), "add", src)


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_REDUCE_UFUNC = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
                 "amin": np.minimum}


def _scatter_reduce_meta(self, dim, index, src, reduce, include_self=True):
    d = wrap_dim(dim, self.dim())
    _check_index_dtype("scatter", index)
    if src.dtype is not self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if reduce == "mean" and self.dtype is dt.bool:
        raise NotImplementedError("\"scatter_reduce\" with reduce='mean' not implemented for "
                                  "'Bool'")
    _scatter_shape_check(self, d, index, src)
    return spec(self._shape, self.dtype)


scatter_reduce = structured("scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, "
                            "str reduce, *, bool include_self=True) -> Tensor",
                            _scatter_reduce_meta, promotes=False,
                            doc="self with src reduced into it at `index` along `dim` by sum, "
                                "prod, mean, amax or amin (include_self=False leaves self's "
                                "values at the written positions out).")


def _identity(reduce: str, np_dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if np_dtype.kind == "b":
        return reduce == "amin"
    if np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        return info.min if reduce == "amax" else info.max
    return -np.inf if reduce == "amax" else np.inf


@scatter_reduce.impl("CPU")
def _scatter_reduce_cpu(out, self, dim, index, src, reduce, include_self=True):
    d = wrap_dim(dim, self.dim())
    idx = _read_index(index, d, _size(self, d)) if index.numel() else None
    arr = _copy_self(out, self, index, src)
    if idx is None:
        return
    key = _scatter_key(idx, d)
    values = _leading(_as_nd(src._array()), idx.shape)
    work = arr.astype(np.float32) if arr.dtype in _HALF else arr    # round once at the end
    if not include_self:
        work[key] = _identity(reduce, work.dtype)
    _ufunc_at(_REDUCE_UFUNC[reduce], work, key, values)
    if reduce == "mean":
        if work is not arr:             # PyTorch rounds the sum before dividing it
            assign_array(arr, work)
            work = arr.astype(np.float32)
        count = module_of(work).full(work.shape, 1 if include_self else 0, np.int64)
        _ufunc_at(np.add, count, key, 1)
        hit = count > 0
        if work.dtype.kind in "iu":
            work[hit] = np.floor_divide(work[hit], count[hit])
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                work[hit] = work[hit] / count[hit]
    if work is not arr:
        assign_array(arr, work)


# ---- index_add / index_copy / index_fill -----------------------------------------------

def _slice_key(d: int, idx: np.ndarray) -> tuple:
    return (slice(None),) * d + (idx,)


def _index_add_meta(self, dim, index, source, alpha=1):
    d = wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: "
                         f"{index.dim()} with type: {index.dtype.cname} and size: "
                         f"{list(index._shape)}")
    if index.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{index.dtype.cname}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"index_add_(): self ({self.dtype.cname}) and source "
                           f"({source.dtype.cname}) must have the same scalar type")
    if d >= _nonempty_dim(source):
        raise IndexError(f"index_add_(): Indexing dim {d} is out of bounds of the source tensor "
                         f"with dim {source.dim()}")
    if index.numel() != _size(source, d):
        raise RuntimeError(f"index_add_(): Number of indices ({index.numel()}) should be equal "
                           f"to source.size(dim): ({_size(source, d)}), for dim: {d}")
    if source.dim() != self.dim() or any(k != d and s != source._shape[k]
                                         for k, s in enumerate(self._shape)):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(self._shape)} "
                           f"source.shape = {list(source._shape)}")
    check_scalar_fits(alpha, self.dtype)
    return spec(self._shape, self.dtype)


index_add = structured("index_add(Tensor self, int dim, Tensor index, Tensor source, *, "
                       "Scalar alpha=1) -> Tensor", _index_add_meta, promotes=False,
                       doc="self with alpha * source's slices added at `index` along `dim` "
                           "(repeated indices accumulate).")


@index_add.impl("CPU")
def _index_add_cpu(out, self, dim, index, source, alpha=1):
    d = wrap_dim(dim, self.dim())
    idx = index._array().reshape(-1)
    _check_bounds(idx, d, _size(self, d))
    arr = _copy_self(out, self, index, source)
    values = _as_nd(source._array())
    if alpha != 1:
        values = values * np.asarray(alpha).astype(arr.dtype)[()]
    _accumulate(np.add, arr, _slice_key(d, idx), values)


def _index_copy_meta(self, dim, index, source):
    d = wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got "
                         f"{index.dim()})")
    if index.dtype is not dt.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                           f"{index.dtype.cname}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {self.dtype.cname} and (source) "
                           f"{source.dtype.cname}")
    if self.dim() and source.dim() and self.dim() != source.dim():
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({source.dim()}), "
                         f"destination dimensionality ({self.dim()})")
    rest_self = self._shape[:d] + self._shape[d + 1:]
    rest_source = source._shape[:d] + source._shape[d + 1:]
    if self.dim() and source.dim() and rest_self != rest_source:
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice "
                           f"shapes. Destination slice shape: {' '.join(map(str, rest_self))} "
                           f"at dimension {d} and source slice shape: "
                           f"{' '.join(map(str, rest_source))} at dimension {d}.")
    if index.numel() != _size(source, d):
        raise IndexError(f"index_copy_(): Number of indices ({index.numel()}) should be equal "
                         f"to source.size(dim) ({_size(source, d)})")
    return spec(self._shape, self.dtype)


index_copy = structured("index_copy(Tensor self, int dim, Tensor index, Tensor source) -> "
                        "Tensor", _index_copy_meta, promotes=False,
                        doc="self with source's slices copied to `index` along `dim`.")


@index_copy.impl("CPU")
def _index_copy_cpu(out, self, dim, index, source):
    d = wrap_dim(dim, self.dim())
    idx = index._array().reshape(-1)
    _check_bounds(idx, d, _size(self, d), error=IndexError, prefix="index_copy_(): ")
    arr = _copy_self(out, self, index, source)
    arr[_slice_key(d, idx)] = _as_nd(source._array()).reshape(
        arr.shape[:d] + (idx.size,) + arr.shape[d + 1:])


def _index_fill_meta(self, dim, index, value):
    wrap_dim(dim, self.dim())
    if index.dtype is not dt.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index.dim() > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if isinstance(value, Tensor):
        if value.dim():
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.dim()} dimension(s).")
    else:
        check_scalar_fits(value, self.dtype)
    return spec(self._shape, self.dtype, strides_for(self, preserve_format))


def _index_fill_cpu(out, self, dim, index, value):
    d = wrap_dim(dim, self.dim())
    size = _size(self, d)
    idx = index._array().reshape(-1)
    _check_bounds(idx, d, size, negative=True, error=IndexError)
    arr = _copy_self(out, self, index, value)
    fill = value.item() if isinstance(value, Tensor) else value
    arr[_slice_key(d, idx)] = np.asarray(fill).astype(arr.dtype)


_INDEX_FILL_DOC = "self with the slices at `index` along `dim` set to `value`."
index_fill_scalar = structured("index_fill.int_Scalar(Tensor self, int dim, Tensor index, "
                               "Scalar value) -> Tensor", _index_fill_meta, out=False,
                               promotes=False, doc=_INDEX_FILL_DOC)
index_fill_tensor = structured("index_fill.int_Tensor(Tensor self, int dim, Tensor index, "
                               "Tensor value) -> Tensor", _index_fill_meta, out=False,
                               promotes=False, doc=_INDEX_FILL_DOC)
index_fill_scalar.impl("CPU")(_index_fill_cpu)
index_fill_tensor.impl("CPU")(_index_fill_cpu)
_index_fill_inplace = {d: generate_wrapper("index_fill_", d.inplace.schema, d.inplace,
                                           method=True, doc=d.doc)
                       for d in (index_fill_scalar, index_fill_tensor)}


def index_fill(input, dim, index, value):
    """self with the slices at `index` along `dim` set to `value` (a number or a 0-dim
    tensor, which gradients reach)."""
    decl = index_fill_tensor if isinstance(value, Tensor) else index_fill_scalar
    return decl.function(input, dim, index, value)


def _index_fill_method(self, dim, index, value):
    return index_fill(self, dim, index, value)


def _index_fill_inplace_method(self, dim, index, value):
    decl = index_fill_tensor if isinstance(value, Tensor) else index_fill_scalar
    return _index_fill_inplace[decl](self, dim, index, value)


export("index_fill", index_fill)
_export_method("index_fill", _index_fill_method, index_fill.__doc__)
_export_method("index_fill_", _index_fill_inplace_method, "In-place index_fill.")


# ---- take_along_dim / put --------------------------------------------------------------

@composite(method=True)
def take_along_dim(input, indices, dim=None, *, out=None):
    """Elements of input at `indices` along `dim` (input and indices broadcast apart from
    dim; negative indices count from the end); without dim, over the flattened input.

    PyTorch silently wraps indices >= size along `dim` (modulo); glasstorch raises gather's
    out-of-bounds error for them instead."""
    if not isinstance(input, Tensor):
        bad_self("take_along_dim", input)
    if indices.dtype is not dt.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{indices.dtype.cname}")
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1), out=out)
    if input.dim() != indices.dim():
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.dim()} dimensions for input, "
                           f"and {indices.dim()} dimensions for indices")
    d = wrap_dim(dim, input.dim(), scalar_ok=False)
    wanted = list(input._shape)
    wanted[d] = indices._shape[d]
    shape = list(broadcast_shapes2(tuple(wanted), indices._shape))
    indices = indices.expand(shape)
    shape[d] = input._shape[d]
    input = input.expand(shape)
    size = input._shape[d]
    if indices.numel() and bool((indices < 0).any()):
        indices = indices + (indices < 0) * size
    return gather(input, d, indices, out=out)


def _put_meta(self, index, source, accumulate=False):
    if index.dtype is not dt.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{index.dtype.cname}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {self.dtype.cname} and source.dtype = "
                           f"{source.dtype.cname}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, index.numel() "
                         f"= {index.numel()}")
    if index.numel() and not self.numel():
        raise IndexError("put_(): Tried to put elements into an empty tensor")
    return spec(self._shape, self.dtype, strides_for(self, preserve_format))


put = structured("put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor",
                 _put_meta, promotes=False, out=False,
                 doc="self, read as if flattened, with source written (or added, with "
                     "accumulate=True) at `index`.")


@put.impl("CPU")
def _put_cpu(out, self, index, source, accumulate=False):
    idx = index._array().reshape(-1)
    n = self.numel()
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = int(idx[(idx < -n) | (idx >= n)].ravel()[0])
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         "elements.")
    arr = _copy_self(out, self, index, source).reshape(out._shape)
    flat = arr.reshape(-1)                  # a copy unless arr is row-major contiguous
    values = source._array().reshape(-1)
    if accumulate:
        add_at(flat, idx, values)
    else:
        flat[idx] = values
    if not arr.flags.c_contiguous:          # flat is a copy
        arr[...] = flat.reshape(arr.shape)


# ---- masked_fill with a tensor value / masked_scatter ----------------------------------

masked_fill_tensor = structured("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> "
                                "Tensor", _masked_fill_meta, out=False,
                                doc=_masked_fill_scalar.doc)
masked_fill_tensor.impl("CPU")(_masked_fill_cpu)
_masked_fill_inplace = {d: generate_wrapper("masked_fill_", d.inplace.schema, d.inplace,
                                            method=True, doc=d.doc)
                        for d in (_masked_fill_scalar, masked_fill_tensor)}


def masked_fill(input, mask, value):
    """input with `value` where `mask` is True (mask broadcasts); a 0-dim tensor value
    receives gradients."""
    decl = masked_fill_tensor if isinstance(value, Tensor) else _masked_fill_scalar
    return decl.function(input, mask, value)


def _masked_fill_method(self, mask, value):
    return masked_fill(self, mask, value)


def _masked_fill_inplace_method(self, mask, value):
    decl = masked_fill_tensor if isinstance(value, Tensor) else _masked_fill_scalar
    return _masked_fill_inplace[decl](self, mask, value)


export("masked_fill", masked_fill)
_export_method("masked_fill", _masked_fill_method, masked_fill.__doc__)
_export_method("masked_fill_", _masked_fill_inplace_method, "In-place masked_fill.")


def _masked_scatter_meta(self, mask, source):
    if mask.dtype is not dt.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {mask.dtype.cname}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got{self.dtype.cname} and {source.dtype.cname}")
    try:
        shape = broadcast_shapes2(mask._shape, self._shape)
    except RuntimeError:
        raise RuntimeError(f"masked_scatter: mask of shape {list(mask._shape)} and self of "
                           f"shape {list(self._shape)} cannot be broadcast together") from None
    return spec(shape, self.dtype)


masked_scatter = structured("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor",
                            _masked_scatter_meta, promotes=False, out=False,
                            doc="self (broadcast with mask) with source's leading elements, in "
                                "order, written where mask is True.")


@masked_scatter.impl("CPU")
def _masked_scatter_cpu(out, self, mask, source):
    arr = out._array()
    where = np.broadcast_to(mask._array(), arr.shape)
    count = int(np.count_nonzero(where))
    values = source._array().reshape(-1)
    if count > values.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    arr = _copy_self(out, self, mask, source).reshape(out._shape)
    arr[where] = values[:count]

# autocast runs these in another precision (ops/autocast.py)
autocast_policy(index_copy, cpu=PROMOTE)
autocast_policy(scatter_add, cuda=PROMOTE)
