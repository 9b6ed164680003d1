"""Gather, scatter and the index_* family: reads and writes along one dimension at given indices.

gather/scatter pair every element of an `index` tensor (as many dims as self) with the
position it names along `dim`; the index may be smaller than self (and than src) in every
other dim. The index_* ops instead take a vector of positions along `dim` and move whole
slices. put/take_along_dim/masked_scatter complete the family. Writes go through NumPy's
fancy assignment, and accumulating writes through `ufunc.at`, so duplicate indices add up
(or multiply, or take the max/min) as in PyTorch. Index values are checked before anything
is written, so a bad index leaves the destination unchanged.

The kernels (backends/cpu/scatter.py) run on NumPy and CuPy arrays alike. CuPy's `ufunc.at`
scatters only with add (and max/min for some dtypes), so on a GPU the other accumulating
writes combine the values bound for each position first (`combine_at`) and then write every
position once.
"""
from __future__ import annotations

import warnings

from ...core import dtype as dt
from ...core.shape import broadcast_shapes2, wrap_dim
from ...core.tensor import Tensor, preserve_format
from ..copying.copies import strides_for
from ...backends.cpu.indexing import check_scalar_fits, masked_fill_cpu
from .subscripts import _masked_fill_meta, masked_fill as _masked_fill_scalar
from ..registry import composite, export, spec, structured
from ..autocast import PROMOTE, autocast_policy
from ..wrappers import bad_self, generate_wrapper
from ...backends.cpu.scatter import (SCATTER_REDUCE, _size, gather_cpu, index_add_cpu,
    index_copy_cpu, index_fill_cpu, masked_scatter_cpu, put_cpu, scatter_add_cpu,
    scatter_reduce_cpu, scatter_src_kernel, scatter_value_kernel)

_INDEX_DTYPES = (dt.int32, dt.int64)


def _nonempty_dim(t: Tensor) -> int:
    return max(t.dim(), 1)


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
gather.impl("CPU")(gather_cpu)


# ---- scatter ---------------------------------------------------------------------------

def _scatter_src_meta(self, dim, index, src, reduce=None):
    d = wrap_dim(dim, self.dim())
    _check_index_dtype("scatter", index)
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter(): argument 'src' must be Tensor, not {type(src).__name__}")
    if src.dtype is not self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce is not None and reduce not in SCATTER_REDUCE:
        raise RuntimeError("reduce argument must be either add or multiply.")
    _scatter_shape_check(self, d, index, src)
    return spec(self._shape, self.dtype)


def _scatter_value_meta(self, dim, index, value, reduce=None):
    d = wrap_dim(dim, self.dim())
    _check_index_dtype("scatter", index)
    if reduce is not None and reduce not in SCATTER_REDUCE:
        raise RuntimeError("reduce argument must be either add or multiply.")
    check_scalar_fits(value, self.dtype)
    _scatter_shape_check(self, d, index)
    return spec(self._shape, self.dtype)


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
    _decl.impl("CPU")(scatter_src_kernel)
for _decl in (scatter_value, scatter_reduce_value):
    _decl.impl("CPU")(scatter_value_kernel)

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
scatter_add.impl("CPU")(scatter_add_cpu)


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


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
scatter_reduce.impl("CPU")(scatter_reduce_cpu)


# ---- index_add / index_copy / index_fill -----------------------------------------------

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
index_add.impl("CPU")(index_add_cpu)


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
index_copy.impl("CPU")(index_copy_cpu)


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


_INDEX_FILL_DOC = "self with the slices at `index` along `dim` set to `value`."
index_fill_scalar = structured("index_fill.int_Scalar(Tensor self, int dim, Tensor index, "
                               "Scalar value) -> Tensor", _index_fill_meta, out=False,
                               promotes=False, doc=_INDEX_FILL_DOC)
index_fill_tensor = structured("index_fill.int_Tensor(Tensor self, int dim, Tensor index, "
                               "Tensor value) -> Tensor", _index_fill_meta, out=False,
                               promotes=False, doc=_INDEX_FILL_DOC)
index_fill_scalar.impl("CPU")(index_fill_cpu)
index_fill_tensor.impl("CPU")(index_fill_cpu)
index_fill_scalar.fills_expanded = index_fill_tensor.fills_expanded = True
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
put.impl("CPU")(put_cpu)


# ---- masked_fill with a tensor value / masked_scatter ----------------------------------

masked_fill_tensor = structured("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> "
                                "Tensor", _masked_fill_meta, out=False,
                                doc=_masked_fill_scalar.doc)
masked_fill_tensor.impl("CPU")(masked_fill_cpu)
masked_fill_tensor.fills_expanded = True
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
masked_scatter.impl("CPU")(masked_scatter_cpu)

# autocast runs these in another precision (ops/autocast.py)
autocast_policy(index_copy, cpu=PROMOTE)
autocast_policy(scatter_add, cuda=PROMOTE)
