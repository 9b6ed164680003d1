"""Sorting and selection: sort, topk, kthvalue, median, mode, unique, searchsorted, histograms.

Every kernel works on whole arrays: a stable NumPy argsort (or argpartition) along the dim,
then gathers. NaN sorts as the largest value, as in PyTorch; float16/bfloat16 are compared
as float32 (exactly) and the values gathered from the input itself. Ops whose output shapes
are known from the arguments are `structured` (so out= comes for free); unique, bincount and
friends build their outputs. Multi-output ops return `glasstorch.return_types` named tuples.
The kernels (backends/cpu/sorting.py) run on NumPy and CuPy arrays alike (CUDA tensors sort
on the GPU).
"""
from __future__ import annotations

import operator

from ... import return_types
from ...core import dtype as dt
from ...core.shape import dense_strides_like, is_non_overlapping_and_dense, wrap_dim
from ...core.tensor import Tensor
from ..indexing.subscripts import TYPE_META_NAMES
from ...core.promotion import common_dtype
from ..registry import export, kernel_op, resize_output, spec, structured
from ..wrappers import bad_self
from ...backends.cpu.sorting import (HD, SS, _bincount_cpu, _histogram_cpu, _kthvalue_cpu,
    _topk_cpu, bucketize_cpu, histc_cpu, histogram_bins_cpu, median_all_kernel,
    median_dim_kernel, mode_cpu, not_implemented, search_side, searchsorted_cpu, sort_cpu,
    sort_stable_cpu, unique2_cpu, unique_consecutive_cpu, unique_dim_cpu)


def _single_dim(name: str, self: Tensor, dim) -> int:
    try:
        return wrap_dim(dim, len(self._shape))
    except TypeError:
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}") from None


def _reduced(self: Tensor, d: int, keepdim: bool) -> tuple:
    shape = list(self._shape)
    if shape:
        if keepdim:
            shape[d] = 1
        else:
            del shape[d]
    return tuple(shape)


def _no_complex(kernel: str, self: Tensor) -> None:
    if self.dtype.is_complex:
        not_implemented(kernel, self)


def _int_arg(name: str, arg: str, position: int, value) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be int, not "
                        f"{type(value).__name__}") from None


def _legacy(d: dt.dtype) -> str:
    return f"torch.{d.cname}Tensor"


# What each op says when an out= tensor has the wrong dtype: (values, indices) messages.
_OUT_DTYPE_ERRORS = {
    "kthvalue": (lambda want, got: "output values must be of same type as input",
                 lambda want, got: "output indices must be of scalar type Long"),
    "median": (lambda want, got: "Expected tensor for 'values' to have the same type as tensor "
               f"for argument #2 'self'; but type {_legacy(got)} does not equal "
               f"{_legacy(want)} (while checking arguments for median)",
               lambda want, got: "Expected tensor for argument #1 'indices' to have scalar type "
               f"Long; but got {_legacy(got)} instead (while checking arguments for median)"),
    "mode": (lambda want, got: f"expected scalar type '{want.cname}' but got '{got.cname}' for "
             "values output",
             lambda want, got: f"expected scalar type '{want.cname}' but got '{got.cname}' for "
             "indices output"),
}


def _check_outs(name: str, self, out) -> None:
    """(values, indices) out= tensors must have the input's dtype and int64, as PyTorch."""
    if out is None or not isinstance(self, Tensor) or not isinstance(out, (tuple, list)):
        return
    for i, (t, want) in enumerate(zip(out, (self.dtype, dt.int64))):
        if isinstance(t, Tensor) and t.dtype is not want:
            if name in _OUT_DTYPE_ERRORS:
                raise RuntimeError(_OUT_DTYPE_ERRORS[name][i](want, t.dtype))
            raise RuntimeError(f"Expected out tensor to have dtype {TYPE_META_NAMES[want]}, but "
                               f"got {TYPE_META_NAMES[t.dtype]} instead")


def _check_nonempty(name: str, self: Tensor, d: int) -> None:
    if self._shape and self._shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


# ---- sort, argsort, msort --------------------------------------------------------------

def _sort_spec(self, dim, descending):
    if self.dtype.is_complex:
        raise RuntimeError("Sort does not support complex dtypes on CPU")
    _single_dim("sort", self, dim)
    # the input's strides where they are dense, else dense ones in the same dim order
    stride = (self._stride if is_non_overlapping_and_dense(self._shape, self._stride)
              else dense_strides_like(self._shape, self._stride))
    return spec(self._shape, self.dtype, stride), spec(self._shape, dt.int64, stride)


def _sort_meta(self, dim=-1, descending=False):
    return _sort_spec(self, dim, descending)


def _sort_stable_meta(self, stable=None, dim=-1, descending=False):
    return _sort_spec(self, dim, descending)


sort_op = structured("sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, "
                     "Tensor indices)", _sort_meta, method=False, function=False,
                     inplace=False, promotes=False)
sort_stable_op = structured("sort.stable(Tensor self, *, bool? stable, int dim=-1, "
                            "bool descending=False) -> (Tensor values, Tensor indices)",
                            _sort_stable_meta, method=False, function=False, inplace=False,
                            promotes=False)


sort_op.impl("CPU")(sort_cpu)


sort_stable_op.impl("CPU")(sort_stable_cpu)


def sort(input, dim=-1, descending=False, stable=None, *, out=None):
    """return_types.sort(values, indices) along `dim`. The sort is always stable here (ties
    keep their input order, also when descending); NaN counts as the largest value."""
    if not isinstance(input, Tensor):
        bad_self("sort", input)
    _check_outs("sort", input, out)
    if stable is None:
        r = sort_op.function(input, dim, descending, out=out)
    else:
        r = sort_stable_op.function(input, stable=stable, dim=dim, descending=descending,
                                    out=out)
    return return_types.sort(r) if out is None else return_types.sort_out(r)


def _sort_method(self, dim=-1, descending=False, stable=None):
    return sort(self, dim, descending, stable)


def argsort(input, dim=-1, descending=False, stable=False):
    """The indices that sort `input` along `dim` (sort(...).indices)."""
    return sort(input, dim, descending, stable).indices


def msort(input, *, out=None):
    """`input` sorted along its first dim (sort(input, 0).values)."""
    values = sort(input, 0).values
    if out is None:
        return values
    if out._shape != values._shape:
        resize_output(out, values._shape)
    return out.copy_(values)


def _msort_method(self):
    return msort(self)


_sort_method.__doc__ = sort.__doc__
_msort_method.__doc__ = msort.__doc__
export("sort", sort)
export("sort", _sort_method, method=True, function=False)
export("argsort", argsort, method=True)
export("msort", msort)
export("msort", _msort_method, method=True, function=False)


# ---- topk, kthvalue --------------------------------------------------------------------

def _topk_meta(self, k, dim=-1, largest=True, sorted=True):
    d = _single_dim("topk", self, dim)
    k = _int_arg("topk", "k", 1, k)
    if not 0 <= k <= (self._shape[d] if self._shape else 1):
        raise RuntimeError("selected index k out of range")
    if self.dtype is dt.bool:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    if self.dtype.is_complex:                 # PyTorch's text, its leading space included
        raise RuntimeError(" topk does not support complex dtypes on CPU")
    shape = list(self._shape)
    if shape:
        shape[d] = k
    return spec(shape, self.dtype), spec(shape, dt.int64)


topk_op = structured("topk(Tensor self, SymInt k, int dim=-1, bool largest=True, "
                     "bool sorted=True) -> (Tensor values, Tensor indices)", _topk_meta,
                     method=False, function=False, inplace=False, promotes=False)
topk_op.impl("CPU")(_topk_cpu)


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """return_types.topk(values, indices): the k largest (or smallest) elements along `dim`,
    in order. NaN counts as the largest value."""
    _check_outs("topk", input, out)
    r = topk_op.function(input, k, dim, largest, sorted, out=out)
    return return_types.topk(r) if out is None else return_types.topk_out(r)


def _kthvalue_meta(self, k, dim=-1, keepdim=False):
    d = _single_dim("kthvalue", self, dim)
    _check_nonempty("kthvalue", self, d)
    if self.dim():                  # a 0-dim tensor is its own answer, whatever its dtype
        if self.dtype is dt.bool:
            not_implemented("kthvalue_cpu", self)
        _no_complex("kthvalue_cpu", self)
    if not 1 <= _int_arg("kthvalue", "k", 1, k) <= (self._shape[d] if self._shape else 1):
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    shape = _reduced(self, d, keepdim)
    return spec(shape, self.dtype), spec(shape, dt.int64)


kthvalue_op = structured("kthvalue(Tensor self, SymInt k, int dim=-1, bool keepdim=False) -> "
                         "(Tensor values, Tensor indices)", _kthvalue_meta, method=False,
                         function=False, inplace=False, promotes=False)
kthvalue_op.impl("CPU")(_kthvalue_cpu)


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """return_types.kthvalue(values, indices): the k-th smallest element along `dim`."""
    _check_outs("kthvalue", input, out)
    r = kthvalue_op.function(input, k, dim, keepdim, out=out)
    return return_types.kthvalue(r) if out is None else return_types.kthvalue_out(r)


export("topk", topk, method=True)
export("kthvalue", kthvalue, method=True)


# ---- median, nanmedian -----------------------------------------------------------------

def _median_all_meta_for(name):
    def meta(self):
        if self.dtype is dt.bool:
            not_implemented(f"{name}_cpu", self)
        _no_complex(f"{name}_cpu", self)
        return spec((), self.dtype)
    return meta


def _median_dim_meta_for(name):
    def meta(self, dim, keepdim=False):
        d = _single_dim(name, self, dim)
        _check_nonempty(name, self, d)
        if self.dtype is dt.bool:
            not_implemented(f"{name}_out", self)
        _no_complex(f"{name}_out", self)
        shape = _reduced(self, d, keepdim)
        return spec(shape, self.dtype), spec(shape, dt.int64)
    return meta


median_all = structured("median(Tensor self) -> Tensor", _median_all_meta_for("median"),
                        method=False, function=False, inplace=False, promotes=False)
median_all.impl("CPU")(median_all_kernel(False))
median_dim = structured("median.dim(Tensor self, int dim, bool keepdim=False) -> "
                        "(Tensor values, Tensor indices)", _median_dim_meta_for("median"),
                        method=False, function=False, inplace=False, promotes=False)
median_dim.impl("CPU")(median_dim_kernel(False))
nanmedian_all = structured("nanmedian(Tensor self) -> Tensor",
                           _median_all_meta_for("nanmedian"), method=False, function=False,
                           inplace=False, promotes=False)
nanmedian_all.impl("CPU")(median_all_kernel(True))
nanmedian_dim = structured("nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> "
                           "(Tensor values, Tensor indices)",
                           _median_dim_meta_for("nanmedian"), method=False, function=False,
                           inplace=False, promotes=False)
nanmedian_dim.impl("CPU")(median_dim_kernel(True))


def _median_fn(name, all_decl, dim_decl, result_type, result_out_type, doc):
    def fn(input, dim=None, keepdim=False, *, out=None):
        if not isinstance(input, Tensor):
            bad_self(name, input)
        if dim is None:
            return all_decl.function(input, out=out)
        if out is None:
            return result_type(dim_decl.function(input, dim, keepdim))
        _check_outs("median", input, out)
        return result_out_type(dim_decl.function(input, dim, keepdim, out=out))

    def method(self, dim=None, keepdim=False):
        return fn(self, dim, keepdim)
    fn.__name__ = fn.__qualname__ = method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    fn.__module__ = "glasstorch"
    fn.__doc__ = method.__doc__ = doc
    export(name, fn)
    export(name, method, method=True, function=False)


_median_fn("median", median_all, median_dim, return_types.median, return_types.median_out,
           """median(input) -> the lower median of all elements (NaN if any is NaN).
median(input, dim, keepdim=False) -> return_types.median(values, indices) along `dim`.""")
_median_fn("nanmedian", nanmedian_all, nanmedian_dim, return_types.nanmedian,
           return_types.nanmedian_out,
           """nanmedian(input) -> the lower median of the non-NaN elements.
nanmedian(input, dim, keepdim=False) -> return_types.nanmedian(values, indices).""")


# ---- mode ------------------------------------------------------------------------------

def _mode_meta(self, dim=-1, keepdim=False):
    d = _single_dim("mode", self, dim)
    _check_nonempty("mode", self, d)
    if self.dim() and self.numel():     # else nothing is compared, whatever the dtype
        _no_complex("mode_cpu", self)
    shape = _reduced(self, d, keepdim)
    return spec(shape, self.dtype), spec(shape, dt.int64)


mode_op = structured("mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, "
                     "Tensor indices)", _mode_meta, method=False, function=False,
                     inplace=False, promotes=False)
mode_op.impl("CPU")(mode_cpu)


def mode(input, dim=-1, keepdim=False, *, out=None):
    """return_types.mode(values, indices): the most frequent value along `dim` (the smallest
    of equally frequent ones) and the index of its last occurrence."""
    _check_outs("mode", input, out)
    r = mode_op.function(input, dim, keepdim, out=out)
    return return_types.mode(r) if out is None else return_types.mode_out(r)


export("mode", mode, method=True)


# ---- unique, unique_consecutive --------------------------------------------------------

unique2_op = kernel_op("_unique2(Tensor self, bool sorted=True, bool return_inverse=False, "
                       "bool return_counts=False) -> (Tensor, Tensor, Tensor)", method=False,
                       function=False, tags=("dynamic_output_shape",))
unique2_op.on_cuda = "shared"
unique2_op.impl("CPU")(unique2_cpu)


unique_dim_op = kernel_op("unique_dim(Tensor self, int dim, bool sorted=True, "
                          "bool return_inverse=False, bool return_counts=False) -> "
                          "(Tensor, Tensor, Tensor)", method=False, function=False,
                          tags=("dynamic_output_shape",))
unique_dim_op.on_cuda = "shared"
unique_dim_op.impl("CPU")(unique_dim_cpu)


unique_consecutive_op = kernel_op(
    "unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, "
    "int? dim=None) -> (Tensor, Tensor, Tensor)", method=False, function=False,
    tags=("dynamic_output_shape",))
unique_consecutive_op.on_cuda = "shared"
unique_consecutive_op.impl("CPU")(unique_consecutive_cpu)


def _selected(outputs, return_inverse, return_counts):
    values, inverse, counts = outputs
    if not return_inverse and not return_counts:
        return values
    return (values,) + ((inverse,) if return_inverse else ()) + (
        (counts,) if return_counts else ())


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements (or slices along `dim`) in ascending order, with optionally the
    index of each input element's value (`return_inverse`) and how often each occurs."""
    if not isinstance(input, Tensor):
        bad_self("unique", input)
    if dim is None:
        r = unique2_op.function(input, sorted, return_inverse, return_counts)
    else:
        r = unique_dim_op.function(input, dim, sorted, return_inverse, return_counts)
    return _selected(r, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse each run of equal consecutive elements (or slices along `dim`) into one."""
    if not isinstance(input, Tensor):
        bad_self("unique_consecutive", input)
    r = unique_consecutive_op.function(input, return_inverse, return_counts, dim)
    return _selected(r, return_inverse, return_counts)


export("unique", unique, method=True)
export("unique_consecutive", unique_consecutive, method=True)


# ---- searchsorted, bucketize -----------------------------------------------------------

def _searchsorted_meta(sorted_sequence, self, out_int32=False, right=False, side=None,
                       sorter=None):
    search_side(side, right)
    boundaries = sorted_sequence
    if not boundaries._shape:
        raise RuntimeError(f"{SS}boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    scalar = not isinstance(self, Tensor)
    if scalar and not isinstance(self, (int, float)):
        raise TypeError(f"searchsorted(): argument 'input' must be Tensor or Number, not "
                        f"{type(self).__name__}")
    shape = () if scalar else self._shape
    if boundaries.dim() > 1:
        if scalar or not shape:
            raise RuntimeError(
                f"{SS}input value can be a scalar only when boundaries tensor dimension is 1, "
                f"but we got boundaries tensor dim({boundaries.dim()}) and input value's "
                f"dim({len(shape)}) numel(1)")
        if boundaries._shape[:-1] != shape[:-1]:
            raise RuntimeError(
                f"{SS}boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                "boundaries tensor and input value tensor must match, but we got boundaries "
                f"tensor {list(boundaries._shape)} and input value tensor {list(shape)}")
    if sorter is not None:
        if sorter.dtype is not dt.int64:
            raise RuntimeError(f"{SS}sorter must be a tensor of long dtype but got dtype "
                               f"{sorter.dtype.cname}")
        if sorter._shape != boundaries._shape:
            raise RuntimeError(f"{SS}boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(boundaries._shape)}and got sorter tensor"
                               f" {list(sorter._shape)}")
    common = common_dtype(boundaries, self)
    if common is dt.bool:
        not_implemented("searchsorted_out_cpu", boundaries)
    if common.is_complex:
        not_implemented("searchsorted_out_cpu", boundaries if boundaries.dtype.is_complex
                         else self)
    return spec(shape, dt.int32 if out_int32 else dt.int64)


def _searchsorted_check_out(s, out, sorted_sequence, self, out_int32=False, right=False,
                            side=None, sorter=None):
    if out.dtype is not s.dtype:
        raise RuntimeError(
            f"{SS}output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) "
            f"depending on whether out_int32 flag is True, but we got output tensor's dtype "
            f"{out.dtype.cname} and out_int32 flag is {'True' if out_int32 else 'False'}")


searchsorted_op = structured(
    "searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, "
    "bool right=False, str? side=None, Tensor? sorter=None) -> Tensor", _searchsorted_meta,
    method=False, function=False, inplace=False, promotes=False,
    check_out=_searchsorted_check_out)
searchsorted_op.impl("CPU")(searchsorted_cpu)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, out=None,
                 sorter=None):
    """The indices where `input` would be inserted into the last dim of `sorted_sequence` to
    keep it sorted (the first such index, or the last with right=True / side='right');
    `input` may be a Python number, `sorter` the indices that sort an unsorted sequence."""
    if not isinstance(sorted_sequence, Tensor):
        raise TypeError("searchsorted(): argument 'sorted_sequence' (position 1) must be Tensor,"
                        f" not {type(sorted_sequence).__name__}")
    return searchsorted_op.function(sorted_sequence, input, out_int32=out_int32, right=right,
                                    side=side, sorter=sorter, out=out)


export("searchsorted", searchsorted)


def _bucketize_meta(self, boundaries, out_int32=False, right=False):
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got "
                           f"dim({boundaries.dim()})")
    return _searchsorted_meta(boundaries, self, out_int32, right)


def _bucketize_check_out(s, out, self, boundaries, out_int32=False, right=False):
    _searchsorted_check_out(s, out, boundaries, self, out_int32, right)


bucketize_op = structured(
    "bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, "
    "bool right=False) -> Tensor", _bucketize_meta, method=False, inplace=False,
    promotes=False, number_self=True, check_out=_bucketize_check_out,
    doc="The index of the bucket of `boundaries` (1-D, ascending) each element falls in: "
        "searchsorted(boundaries, input, right=right).")
bucketize_op.impl("CPU")(bucketize_cpu)


# ---- histc, histogram, bincount --------------------------------------------------------

def _bins_check(bins) -> None:
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")


def _histc_meta(self, bins=100, min=0, max=0):
    if self.dtype.category < dt.FLOAT or self.dtype.is_complex:
        not_implemented("histogram_cpu", self)
    _bins_check(bins)
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    return spec((bins,), self.dtype)


def _histc_check_out(s, out, self, bins=100, min=0, max=0):
    if out.dtype is not self.dtype:
        raise RuntimeError("torch.histogram: input tensor and hist tensor should have the same "
                           f"dtype, but got input {TYPE_META_NAMES[self.dtype]} and hist "
                           f"{TYPE_META_NAMES[out.dtype]}")


histc_op = structured("histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor",
                      _histc_meta, method=False, function=False, inplace=False,
                      promotes=False, check_out=_histc_check_out)
histc_op.impl("CPU")(histc_cpu)


def histc(input, bins=100, min=0, max=0, *, out=None):
    """Counts of the elements in `bins` equal bins over [min, max] (the data's range when
    min == max), in the input's dtype. Elements outside are ignored. Not differentiable."""
    if isinstance(input, Tensor) and input.requires_grad:
        input = input.detach()
    return histc_op.function(input, bins, min, max, out=out)


def _histc_method(self, bins=100, min=0, max=0):
    return histc(self, bins, min, max)


_histc_method.__doc__ = histc.__doc__
export("histc", histc)
export("histc", _histc_method, method=True, function=False)

def _histogram_checks(self, weight):
    if self.dtype not in (dt.float32, dt.float64):
        not_implemented("histogramdd", self)
    if weight is not None:
        if weight.dtype is not self.dtype:
            raise RuntimeError(f"{HD}if weight tensor is provided, input tensor and weight "
                               "tensor should have the same dtype, but got "
                               f"input({self.dtype.cname.lower()}), and "
                               f"weight({weight.dtype.cname.lower()})")
        if weight._shape != self._shape:
            raise RuntimeError(f"{HD}if weight tensor is provided it should have the same "
                               "shape as the input tensor excluding its innermost dimension, "
                               f"but got input with shape {[self.numel(), 1]} and weight with "
                               f"shape {list(weight._shape)}")


def _histogram_meta(self, bins=100, range=None, weight=None, density=False):
    _histogram_checks(self, weight)
    _bins_check(bins)
    if range is not None and range[0] > range[1]:
        raise RuntimeError(f"{HD}min should not exceed max, but got min {range[0]:g} max "
                           f"{range[1]:g} for dimension 0")
    return spec((bins,), self.dtype), spec((bins + 1,), self.dtype)


def _histogram_bins_meta(self, bins, weight=None, density=False):
    _histogram_checks(self, weight)
    if bins.dim() != 1:
        raise RuntimeError(f"{HD}bins tensor should have one dimension, but got {bins.dim()} "
                           "dimensions in the bins tensor for dimension 0")
    if bins.dtype is not self.dtype:
        raise RuntimeError(f"{HD}input tensor and bins tensors should have the same dtype, but "
                           f"got input with dtype {self.dtype.cname.lower()} and bins for "
                           f"dimension 0 with dtype {bins.dtype.cname.lower()}")
    if bins.numel() < 2:
        _bins_check(bins.numel() - 1)
    return spec((bins.numel() - 1,), self.dtype), spec(bins._shape, self.dtype)


histogram_op = structured(
    "histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, "
    "bool density=False) -> (Tensor hist, Tensor bin_edges)", _histogram_meta, method=False,
    function=False, inplace=False, promotes=False)
histogram_op.impl("CPU")(_histogram_cpu)


histogram_bins_op = structured(
    "histogram.bins_tensor(Tensor self, Tensor bins, *, Tensor? weight=None, "
    "bool density=False) -> (Tensor hist, Tensor bin_edges)", _histogram_bins_meta,
    method=False, function=False, inplace=False, promotes=False)
histogram_bins_op.impl("CPU")(histogram_bins_cpu)


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """return_types.histogram(hist, bin_edges): counts (or weight sums; a density with
    density=True) of the elements in `bins` equal bins over `range` (the data's range by
    default), or between the edges of a `bins` tensor. float32/float64 inputs."""
    if isinstance(bins, Tensor):
        r = histogram_bins_op.function(input, bins, weight=weight, density=density, out=out)
    else:
        r = histogram_op.function(input, bins, range=range, weight=weight, density=density,
                                  out=out)
    return return_types.histogram(r) if out is None else return_types.histogram_out(r)


def _histogram_method(self, bins=100, *, range=None, weight=None, density=False):
    return histogram(self, bins, range=range, weight=weight, density=density)


_histogram_method.__doc__ = histogram.__doc__
export("histogram", histogram)
export("histogram", _histogram_method, method=True, function=False)

bincount_op = kernel_op("bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> "
                        "Tensor", doc="Occurrences of each value 0..max(input) of a 1-D "
                        "non-negative integer tensor (int64), or the sums of `weights` per "
                        "value (float32 weights give float32, others float64); at least "
                        "`minlength` bins.", tags=("dynamic_output_shape",))
bincount_op.on_cuda = "shared"
bincount_op.impl("CPU")(_bincount_cpu)
