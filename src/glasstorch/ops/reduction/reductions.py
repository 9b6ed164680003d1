"""Reductions and scans: sum, mean, prod, max/min, var/std, norm, all/any, cumsum, ...

Each op is one `structured` declaration. Its meta function checks dims and dtypes with
PyTorch's errors and gives the output: the reduced shape (kept as size 1 with keepdim),
row-major strides whatever the input's layout (PyTorch allocates reduction outputs fresh),
and the result dtype (sum/prod of integers or bool give int64, mean needs a floating input,
all/any give bool but uint8 for uint8). Ops whose PyTorch signature is overloaded in ways a
schema can't express (max(x) / max(x, dim) / max(x, other), var(x, unbiased), norm's string
orders) get a thin public wrapper over their declarations; multi-output ops return
`glasstorch.return_types` named tuples where PyTorch does.
"""
from __future__ import annotations

import operator
import sys
import warnings
from math import prod as _prod

import numpy as np

from ... import return_types
from ...backends.cpu import reduction as cpu
from ...backends.cpu.parallel import GRAIN
from ...core import dtype as dt
from ...core.grad_state import inference_anywhere, state as grad_state
from ...core.shape import Size, contiguous_strides, wrap_dim, wrap_dims
from ...core.tensor import Tensor, new_cpu_tensor
from ..registry import PLAIN_FLOATS, TensorSpec, export, functions, overload, spec, structured
from ..autocast import FP32, autocast_policy
from ..wrappers import bad_self

# ---- shapes ----------------------------------------------------------------------------


def reduction_dims(name: str, self: Tensor, dim, *, all_if_empty: bool = True) -> tuple:
    """The wrapped dims to reduce; None (or [] unless all_if_empty is off) means all.

    A 0-dim tensor accepts dim 0 and -1 and reduces nothing.
    """
    ndim = len(self._shape)
    if dim is None or (all_if_empty and not dim and isinstance(dim, (tuple, list))):
        return tuple(range(ndim))
    if not isinstance(dim, (tuple, list)):
        try:
            dim = (operator.index(dim),)
        except TypeError:
            raise TypeError(f"{name}(): argument 'dim' must be int or tuple of ints, not "
                            f"{type(dim).__name__}") from None
    dims = wrap_dims(dim, ndim)
    return dims if ndim else ()


def reduced_shape(shape, dims, keepdim: bool) -> Size:
    if keepdim:
        return Size(1 if i in dims else s for i, s in enumerate(shape))
    return Size(s for i, s in enumerate(shape) if i not in dims)


def _reduced_spec(name, self, dim, keepdim, dtype, **kw):
    if dim is None and not keepdim:                 # the common total: a 0-dim result
        return TensorSpec((), dtype, ())
    dims = reduction_dims(name, self, dim, **kw)
    return spec(reduced_shape(self._shape, dims, keepdim), dtype)


def _single_dim(name: str, self: Tensor, dim) -> int:
    """A single wrapped dim (0-dim tensors accept 0 and -1)."""
    try:
        return wrap_dim(dim, len(self._shape))
    except TypeError:
        raise TypeError(f"{name}(): argument 'dim' must be int, not "
                        f"{type(dim).__name__}") from None


def _stacklevel() -> int:
    """The warnings stacklevel of the first caller outside glasstorch."""
    frame, level = sys._getframe(1), 1
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not (module == "glasstorch" or module.startswith("glasstorch.") or
                frame.f_code.co_filename.startswith("<glasstorch")):   # generated wrappers
            break
        frame, level = frame.f_back, level + 1
    return level


# ---- dtypes ----------------------------------------------------------------------------

def _integral_to_long(d: dt.dtype) -> dt.dtype:
    """sum/prod/cumsum result dtype: integers and bool accumulate in int64."""
    return dt.int64 if d.category <= dt.INT else d


def _require_floating(name: str, self: Tensor, dtype) -> dt.dtype:
    """mean-like ops: the result dtype must be floating or complex."""
    if dtype is None:
        if self.dtype.category < dt.FLOAT:
            raise RuntimeError(f"{name}(): could not infer output dtype. Input dtype must be "
                               "either a floating point or complex dtype. Got: "
                               f"{self.dtype.cname}")
        return self.dtype
    if dtype.category < dt.FLOAT:
        raise RuntimeError(f"{name}(): could not infer output dtype. Optional dtype must be "
                           f"either a floating point or complex dtype. Got: {dtype.cname}")
    return dtype


def _no_complex(name: str, self: Tensor, error=RuntimeError) -> None:
    if self.dtype.category == dt.COMPLEX:
        if error is NotImplementedError:
            raise NotImplementedError(f'"{name}" not implemented for \'{self.dtype.cname}\'')
        raise RuntimeError(f"{name}(): does not support complex input")


# ---- sum, nansum, mean, nanmean, prod --------------------------------------------------

def _sum_meta(self, dim=None, keepdim=False, dtype=None):
    return _reduced_spec("sum", self, dim, keepdim, dtype or _integral_to_long(self.dtype))


sum_op = structured(
    "sum.dim_IntList(Tensor self, int[1]? dim=None, bool keepdim=False, *, "
    "ScalarType? dtype=None) -> Tensor", _sum_meta, inplace=False, tags=("reduction",),
    doc="Sum of elements over `dim` (all dims by default). Integer and bool inputs sum "
        "in int64; `dtype` casts the input first.\n\n"
        "    >>> glasstorch.tensor([[1, 2], [3, 4]]).sum(0)\n    tensor([4, 6])")
sum_op.impl("CPU")(cpu.sum_kernel)


# PyTorch's parser picks a reduction's `.default` overload (all dims) when no dim is given
_ALL_DIMS = "{dim} is None and {keepdim} is False"
overload(sum_op, "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor",
         lambda self, dtype: _sum_meta(self, None, False, dtype),
         lambda out, self, dtype: cpu.sum_kernel(out, self, None, False, dtype),
         when=_ALL_DIMS, out=False)


def _nansum_meta(self, dim=None, keepdim=False, dtype=None):
    if self.dtype.category == dt.COMPLEX:
        raise RuntimeError("nansum does not support complex inputs")
    return _reduced_spec("nansum", self, dim, keepdim, dtype or _integral_to_long(self.dtype))


nansum = structured(
    "nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) "
    "-> Tensor", _nansum_meta, inplace=False, tags=("reduction",),
    doc="Sum treating NaN as zero.")
nansum.impl("CPU")(cpu.nansum_kernel)


def _mean_meta(self, dim=None, keepdim=False, dtype=None):
    return _reduced_spec("mean", self, dim, keepdim, _require_floating("mean", self, dtype))


mean = structured(
    "mean.dim(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)"
    " -> Tensor", _mean_meta, inplace=False, tags=("reduction",),
    doc="Mean over `dim` (all dims by default); the input (or `dtype`) must be floating "
        "point or complex.")
mean.impl("CPU")(cpu.mean_kernel)
overload(mean, "mean(Tensor self, *, ScalarType? dtype=None) -> Tensor",
         lambda self, dtype: _mean_meta(self, None, False, dtype),
         lambda out, self, dtype: cpu.mean_kernel(out, self, None, False, dtype),
         when=_ALL_DIMS, out=False)


def _nanmean_meta(self, dim=None, keepdim=False, dtype=None):
    if self.dtype.category == dt.COMPLEX:
        raise RuntimeError("nansum does not support complex inputs")
    if self.dtype.category < dt.FLOAT:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype"
                           f" but got {self.dtype.cname}")
    return _reduced_spec("nanmean", self, dim, keepdim,
                         _require_floating("nanmean", self, dtype))


nanmean = structured(
    "nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) "
    "-> Tensor", _nanmean_meta, inplace=False, tags=("reduction",),
    doc="Mean of the non-NaN elements (NaN where all are NaN).")
nanmean.impl("CPU")(cpu.nanmean_kernel)


def _prod_meta(self, dim=None, keepdim=False, dtype=None):
    if dim is not None and not isinstance(dim, int):
        raise TypeError(f"prod(): argument 'dim' (position 2) must be int, not "
                        f"{type(dim).__name__}")
    return _reduced_spec("prod", self, dim, keepdim, dtype or _integral_to_long(self.dtype))


prod = structured(
    "prod.dim_int(Tensor self, int? dim=None, bool keepdim=False, *, ScalarType? dtype=None)"
    " -> Tensor", _prod_meta, inplace=False, tags=("reduction",),
    doc="Product of all elements, or along one `dim`; integers and bool give int64.")
prod.impl("CPU")(cpu.prod_kernel)
overload(prod, "prod(Tensor self, *, ScalarType? dtype=None) -> Tensor",
         lambda self, dtype: _prod_meta(self, None, False, dtype),
         lambda out, self, dtype: cpu.prod_kernel(out, self, None, False, dtype),
         when=_ALL_DIMS, out=False)


def _small_float_total(ufunc):
    """The fast path of sum() and prod() over all elements (`OpDeclaration.fast_path`): a
    float32 or float64 tensor below the threading grain, no dtype, reduced by one
    `ufunc.reduce` straight into the 0-dim output, which is what `_ufunc_reduce` does for
    such a total after the meta function and its operand and dtype steps."""
    empty = Tensor._empty

    def make(general):
        def kernel(self, dtype):
            if dtype is None and self.__class__ is Tensor and self.dtype in PLAIN_FLOATS:
                a = self._np if self._np is not None else self._array()
                if a.size < GRAIN:
                    d = self.dtype
                    out = (empty((), d) if inference_anywhere.blocks and grad_state.inference else
                           new_cpu_tensor((), d, (), d.itemsize, True))
                    ufunc.reduce(a, axis=None, dtype=a.dtype,
                                 out=out._np if out._np is not None else out._array())
                    return out
            return general(self, dtype)
        return kernel
    return make


sum_op.overload("default").fast_path(_small_float_total(np.add))


def _leading_dims_sum(general):
    """The fast path of sum(dim) over the leading dims of a contiguous float32/float64
    tensor, no dtype (a bias's gradient: `OpDeclaration.fast_path`): the C column sums that
    `sum_kernel` runs there (`reduction._native_sum`), straight into a fresh output,
    without the meta function (minGPT's (704, 48) over dim 0: ~6 us of a ~13 us call)."""
    def kernel(self, dim=None, keepdim=False, dtype=None):
        if dtype is None and dim and self.__class__ is Tensor and self.dtype in PLAIN_FLOATS \
                and not (inference_anywhere.blocks and grad_state.inference):
            shape = self._shape
            nd, k = len(shape), len(dim)
            if k < nd and all(d.__class__ is int and -nd <= d < nd for d in dim) and \
                    sorted(d % nd for d in dim) == list(range(k)):
                a = self._np if self._np is not None else self._array()
                cols = _prod(shape[k:])
                if a.size >= cpu._NATIVE_SUM_MIN and cols > 1 and a.flags.c_contiguous:
                    out_shape = (1,) * k + shape[k:] if keepdim else shape[k:]
                    d = self.dtype
                    out = new_cpu_tensor(out_shape, d, contiguous_strides(out_shape),
                                         cols * d.itemsize, True)
                    if cpu._native_sum(a, tuple(range(k)), out._np) is not None:
                        return out
        return general(self, dim, keepdim, dtype)
    return kernel


sum_op.fast_path(_leading_dims_sum)
prod.overload("default").fast_path(_small_float_total(np.multiply))


# ---- max, min, amax, amin, aminmax, argmax, argmin -------------------------------------

def _check_numel_for_all(name: str, self: Tensor) -> None:
    if self.numel() == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the 'dim' "
                           "argument.")


def _check_nonempty_dim(name: str, self: Tensor, d: int, shown=None) -> None:
    if self._shape and self._shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d if shown is None else shown} "
                         "to have non-zero size.")


def _extremum_all_meta(name):
    def meta(self):
        _check_numel_for_all(name, self)        # PyTorch's meta, before its kernel's dtypes
        _no_complex(name + "_all", self, NotImplementedError)
        return spec((), self.dtype)
    meta.__name__ = meta.__qualname__ = f"_{name}_all_meta"
    return meta


def _extremum_dim_meta(name):
    def meta(self, dim, keepdim=False):
        d = _single_dim(name, self, dim)
        _check_nonempty_dim(name, self, d)
        _no_complex(name, self)
        shape = reduced_shape(self._shape, (d,) if self._shape else (), keepdim)
        return spec(shape, self.dtype), spec(shape, dt.int64)
    meta.__name__ = meta.__qualname__ = f"_{name}_dim_meta"
    return meta


max_all = structured("max(Tensor self) -> Tensor", _extremum_all_meta("max"), method=False,
                     function=False, inplace=False, promotes=False, tags=("reduction",))
max_all.impl("CPU")(cpu.max_all_kernel)
max_dim = structured("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
                     "Tensor indices)", _extremum_dim_meta("max"), method=False,
                     function=False, inplace=False, promotes=False, tags=("reduction",))
max_dim.impl("CPU")(cpu.max_dim_kernel)
min_all = structured("min(Tensor self) -> Tensor", _extremum_all_meta("min"), method=False,
                     function=False, inplace=False, promotes=False, tags=("reduction",))
min_all.impl("CPU")(cpu.min_all_kernel)
min_dim = structured("min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
                     "Tensor indices)", _extremum_dim_meta("min"), method=False,
                     function=False, inplace=False, promotes=False, tags=("reduction",))
min_dim.impl("CPU")(cpu.min_dim_kernel)


def _extremum(name, all_decl, dim_decl, binary, result_type, result_out_type):
    def extremum(input, dim=None, keepdim=False, *, out=None):
        if not isinstance(input, Tensor):
            bad_self(name, input)
        if isinstance(dim, Tensor):
            if out is None:
                return getattr(input, binary)(dim)
            return functions[binary](input, dim, out=out)
        if dim is None:
            if keepdim:
                raise TypeError(f"{name}(): keepdim=True needs a reduction dim: use "
                                f"{name}(input, dim, keepdim=True)")
            return all_decl.function(input, out=out)
        if out is None:
            return result_type(dim_decl.function(input, dim, keepdim))
        return result_out_type(dim_decl.function(input, dim, keepdim, out=out))
    extremum.__name__ = extremum.__qualname__ = name
    extremum.__module__ = "glasstorch"
    return extremum


max_fn = _extremum("max", max_all, max_dim, "maximum", return_types.max, return_types.max_out)
max_fn.__doc__ = """max(input) -> the largest element, as a 0-dim tensor.
max(input, dim, keepdim=False) -> return_types.max(values, indices) along `dim`.
max(input, other) -> maximum(input, other), elementwise.

NaN is the largest value; ties give the index of the first occurrence.

    >>> glasstorch.tensor([[1, 5], [7, 2]]).max(1)
    torch.return_types.max(
    values=tensor([5, 7]),
    indices=tensor([1, 0]))"""
min_fn = _extremum("min", min_all, min_dim, "minimum", return_types.min, return_types.min_out)
min_fn.__doc__ = """min(input) -> the smallest element, as a 0-dim tensor.
min(input, dim, keepdim=False) -> return_types.min(values, indices) along `dim`.
min(input, other) -> minimum(input, other), elementwise.

NaN is the smallest value; ties give the index of the first occurrence."""
export("max", max_fn, method=True)
export("min", min_fn, method=True)


def _amax_meta_for(name, kernel):
    """Emptiness is checked first; the dtype only when there is something to compute (an
    empty result never reaches PyTorch's kernel, `kernel`, which has no complex loop)."""
    def meta(self, dim=(), keepdim=False):
        if self.numel() == 0:
            if not dim:
                _check_numel_for_all(name, self)
            for shown in dim:
                _check_nonempty_dim(name, self, wrap_dim(shown, self.dim()), shown)
        dims = reduction_dims(name, self, dim)
        shape = reduced_shape(self._shape, dims, keepdim)
        if 0 not in shape:
            _no_complex(kernel, self, NotImplementedError)
        return spec(shape, self.dtype)
    meta.__name__ = meta.__qualname__ = f"_{name}_meta"
    return meta


amax = structured("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
                  _amax_meta_for("amax", "max_values_cpu"), inplace=False, promotes=False, tags=("reduction",),
                  doc="Largest values over `dim` (all dims by default); NaN propagates.")
amax.impl("CPU")(cpu.amax_kernel)
amin = structured("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
                  _amax_meta_for("amin", "min_values_cpu"), inplace=False, promotes=False, tags=("reduction",),
                  doc="Smallest values over `dim` (all dims by default); NaN propagates.")
amin.impl("CPU")(cpu.amin_kernel)


def _aminmax_meta(self, dim=None, keepdim=False):
    if dim is None:
        if self.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        dims = tuple(range(self.dim()))
    else:
        d = _single_dim("aminmax", self, dim)
        if self._shape and self._shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
        dims = (d,) if self._shape else ()
    _no_complex("aminmax_cpu", self, NotImplementedError)
    shape = reduced_shape(self._shape, dims, keepdim)
    return spec(shape, self.dtype), spec(shape, self.dtype)


aminmax_op = structured(
    "aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)",
    _aminmax_meta, method=False, function=False, inplace=False, promotes=False,
    tags=("reduction",))
aminmax_op.impl("CPU")(cpu.aminmax_kernel)


def aminmax(input, *, dim=None, keepdim=False, out=None):
    """return_types.aminmax(min, max) over `dim`, or over all elements when dim is None."""
    if out is None:
        return return_types.aminmax(aminmax_op.function(input, dim=dim, keepdim=keepdim))
    return return_types.aminmax_out(aminmax_op.function(input, dim=dim, keepdim=keepdim,
                                                        out=out))


export("aminmax", aminmax, method=True)


def _arg_meta_for(name):
    def meta(self, dim=None, keepdim=False):
        _no_complex(name, self)
        if self.dtype is dt.bool:
            raise RuntimeError(f"{name}(): does not support bool input")
        if dim is None:
            if self.numel() == 0:
                raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                                 "input.numel() == 0.")
            return spec((1,) * self.dim() if keepdim else (), dt.int64)
        d = _single_dim(name, self, dim)
        _check_nonempty_dim(name, self, d)
        return spec(reduced_shape(self._shape, (d,) if self._shape else (), keepdim), dt.int64)
    meta.__name__ = meta.__qualname__ = f"_{name}_meta"
    return meta


argmax = structured("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
                    _arg_meta_for("argmax"), inplace=False, promotes=False,
                    tags=("reduction",),
                    doc="Index of the largest value along `dim`, or in the flattened input "
                        "when dim is None (first occurrence; NaN counts as largest).")
argmax.impl("CPU")(cpu.argmax_kernel)
argmin = structured("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
                    _arg_meta_for("argmin"), inplace=False, promotes=False,
                    tags=("reduction",),
                    doc="Index of the smallest value along `dim`, or in the flattened input "
                        "when dim is None (first occurrence; NaN counts as smallest).")
argmin.impl("CPU")(cpu.argmin_kernel)


# ---- var, std, var_mean, std_mean ------------------------------------------------------

def _warn_degrees_of_freedom(name, self, out_shape, correction) -> None:
    out_numel = _prod(out_shape)
    n = self.numel() // out_numel if out_numel else 0
    if n - (1 if correction is None else correction) <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly "
                      "less than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=_stacklevel())


def _var_spec(name, self, dim, correction, keepdim):
    if self.dtype.category < dt.FLOAT:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    s = _reduced_spec(name, self, dim, keepdim, self.dtype.to_real())
    _warn_degrees_of_freedom(name, self, s.shape, correction)
    return s


def _var_meta_for(name):
    def meta(self, dim=None, correction=None, keepdim=False):
        return _var_spec(name, self, dim, correction, keepdim)
    meta.__name__ = meta.__qualname__ = f"_{name}_meta"
    return meta


def _var_mean_meta_for(name):
    def meta(self, dim=None, correction=None, keepdim=False):
        s = _var_spec(name, self, dim, correction, keepdim)
        return s, spec(s.shape, self.dtype)
    meta.__name__ = meta.__qualname__ = f"_{name}_meta"
    return meta


_CORRECTION_SCHEMA = ("(Tensor self, int[1]? dim=None, *, Scalar? correction=None, "
                      "bool keepdim=False)")
var_op = structured(f"var.correction{_CORRECTION_SCHEMA} -> Tensor", _var_meta_for("var"),
                    method=False, function=False, inplace=False, tags=("reduction",))
var_op.impl("CPU")(cpu.var_kernel)
std_op = structured(f"std.correction{_CORRECTION_SCHEMA} -> Tensor", _var_meta_for("std"),
                    method=False, function=False, inplace=False, tags=("reduction",))
std_op.impl("CPU")(cpu.std_kernel)
var_mean_op = structured(f"var_mean.correction{_CORRECTION_SCHEMA} -> (Tensor, Tensor)",
                         _var_mean_meta_for("var_mean"), method=False, function=False,
                         inplace=False, out=False, tags=("reduction",))
var_mean_op.impl("CPU")(cpu.var_mean_kernel)
std_mean_op = structured(f"std_mean.correction{_CORRECTION_SCHEMA} -> (Tensor, Tensor)",
                         _var_mean_meta_for("std_mean"), method=False, function=False,
                         inplace=False, out=False, tags=("reduction",))
std_mean_op.impl("CPU")(cpu.std_mean_kernel)


def _correction(name, dim, unbiased, correction):
    """Fold the legacy `unbiased` flag (also var(x, True)) into a correction."""
    if isinstance(dim, bool):
        if unbiased is not None:
            raise TypeError(f"{name}(): argument 'dim' must be int or tuple of ints, not bool")
        dim, unbiased = None, dim
    if unbiased is not None:
        if correction is not None:
            raise TypeError(f"{name}(): pass either `unbiased` or `correction`, not both")
        correction = 1 if unbiased else 0
    return dim, correction


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance over `dim` (all dims by default), dividing by N - correction (default 1).

    The legacy `unbiased` flag means correction=1 (True) or 0 (False); var(x, False) works.
    """
    dim, correction = _correction("var", dim, unbiased, correction)
    return var_op.function(input, dim, correction=correction, keepdim=keepdim, out=out)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Standard deviation over `dim`: sqrt(var(...)), with var's arguments."""
    dim, correction = _correction("std", dim, unbiased, correction)
    return std_op.function(input, dim, correction=correction, keepdim=keepdim, out=out)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over `dim`, with the arguments of var."""
    dim, correction = _correction("var_mean", dim, unbiased, correction)
    return var_mean_op.function(input, dim, correction=correction, keepdim=keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over `dim`, with the arguments of std."""
    dim, correction = _correction("std_mean", dim, unbiased, correction)
    return std_mean_op.function(input, dim, correction=correction, keepdim=keepdim)


export("var", var, method=True)
export("std", std, method=True)
export("var_mean", var_mean)
export("std_mean", std_mean)


# ---- logsumexp, norm -------------------------------------------------------------------

def _logsumexp_meta(self, dim, keepdim=False):
    d = self.dtype if self.dtype.category >= dt.FLOAT else dt.get_default_dtype()
    return _reduced_spec("logsumexp", self, dim, keepdim, d)


logsumexp = structured("logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
                       _logsumexp_meta, inplace=False, tags=("reduction",),
                       doc="log(sum(exp(input))) over `dim`, computed without overflow by "
                           "shifting by the largest value.")
logsumexp.impl("CPU")(cpu.logsumexp_kernel)


def _format_order(p) -> str:
    return f"{float(p):g}"


def _norm_meta(self, p, dim=None, keepdim=False, dtype=None):
    name = "linalg.vector_norm"
    if self.dtype.category < dt.FLOAT:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {self.dtype.cname}")
    if dtype is not None:
        if dtype.category < dt.FLOAT:
            raise RuntimeError(f"{name}: dtype should be floating point or complex, but got "
                               f"{dtype.cname}")
        if (dtype.category == dt.COMPLEX) != (self.dtype.category == dt.COMPLEX):
            kind = "complex for complex" if self.dtype.is_complex else "real for real"
            raise RuntimeError(f"{name}: dtype should be {kind} inputs, but got {dtype.cname}")
        if dt.promote_types(self.dtype, dtype) is not dtype:
            raise RuntimeError(f"{name}: the dtype of the input ({self.dtype.cname}) should be "
                               "convertible without narrowing to the specified dtype "
                               f"({dtype.cname})")
    dims = reduction_dims("norm", self, dim)
    p = 2 if p is None else p
    if self.numel() == 0 and (p < 0 or p == float("inf")):
        if dim is None or not dim:
            raise RuntimeError(f"{name} cannot compute the {_format_order(p)} norm on an empty "
                               "tensor because the operation does not have an identity")
        for d in dims:
            if self._shape[d] == 0:
                raise RuntimeError(f"{name} cannot compute the {_format_order(p)} norm on the "
                                   f"dimension {d}because this dimension is empty and the "
                                   "operation does not have an identity")
    result = (self.dtype if dtype is None else dtype).to_real()
    return spec(reduced_shape(self._shape, dims, keepdim), result)


norm_op = structured(
    "norm.ScalarOpt_dim_dtype(Tensor self, Scalar? p, int[1]? dim=None, bool keepdim=False, "
    "*, ScalarType? dtype=None) -> Tensor", _norm_meta, method=False, function=False,
    inplace=False, promotes=False, tags=("reduction",))
norm_op.impl("CPU")(cpu.norm_kernel)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """Vector p-norm over `dim` (all elements by default): 'fro' and 2 are Euclidean, inf
    and -inf the largest and smallest magnitude, 0 the count of non-zeros, others
    (sum |x|**p) ** (1/p); 'nuc' is linalg.matrix_norm's nuclear norm over two dims.
    """
    if isinstance(p, str):
        if p == "nuc":
            from ..linalg.decompositions import matrix_norm
            dims = tuple(range(input.dim())) if dim is None else dim
            return matrix_norm(input, "nuc", dims, keepdim, dtype=dtype, out=out)
        if p != "fro":
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
        if dim is not None and not isinstance(dim, int) and len(dim) > 2:
            raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got "
                               + " ".join(str(d) for d in dim))
        p = 2
    return norm_op.function(input, p, dim, keepdim, dtype=dtype, out=out)


def _norm_method(self, p="fro", dim=None, keepdim=False, dtype=None):
    return norm(self, p, dim, keepdim, dtype=dtype)


_norm_method.__doc__ = norm.__doc__
_norm_method.__name__ = "norm"
_norm_method.__qualname__ = "Tensor.norm"
export("norm", norm)
export("norm", _norm_method, method=True, function=False)


# ---- all, any, count_nonzero -----------------------------------------------------------

def _logical_meta_for(name):
    def meta(self, dim=None, keepdim=False):
        d = dt.uint8 if self.dtype is dt.uint8 else dt.bool
        return _reduced_spec(name, self, dim, keepdim, d, all_if_empty=False)
    meta.__name__ = meta.__qualname__ = f"_{name}_meta"
    return meta


all_op = structured("all.dims(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor",
                    _logical_meta_for("all"), inplace=False, tags=("reduction",),
                    doc="True where every element over `dim` is non-zero (uint8 for uint8 "
                        "input); dim=None reduces all dims, dim=() none.")
all_op.impl("CPU")(cpu.all_kernel)
any_op = structured("any.dims(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor",
                    _logical_meta_for("any"), inplace=False, tags=("reduction",),
                    doc="True where some element over `dim` is non-zero (uint8 for uint8 "
                        "input); dim=None reduces all dims, dim=() none.")
any_op.impl("CPU")(cpu.any_kernel)


def _all_dims_overload(decl) -> None:
    """all/any without a dim: PyTorch's `.default` overload, over every dim."""
    meta, kernel = decl.meta, decl.impls["CPU"]
    overload(decl, f"{decl.name}(Tensor self) -> Tensor", lambda self: meta(self, None, False),
             lambda out, self: kernel(out, self, None, False), when=_ALL_DIMS, out=False)


_all_dims_overload(all_op)
_all_dims_overload(any_op)


def _count_nonzero_meta(self, dim=None):
    return _reduced_spec("count_nonzero", self, dim, False, dt.int64)


count_nonzero = structured(
    "count_nonzero.dim_IntList(Tensor self, int[1]? dim=None) -> Tensor", _count_nonzero_meta,
    inplace=False, out=False, tags=("reduction",),
    doc="Number of non-zero elements over `dim` (all dims by default), as int64.")
count_nonzero.impl("CPU")(cpu.count_nonzero_kernel)
overload(count_nonzero, "count_nonzero(Tensor self) -> Tensor",
         lambda self: _count_nonzero_meta(self, None),
         lambda out, self: cpu.count_nonzero_kernel(out, self, None), when="{dim} is None")


# ---- scans: cumsum, cumprod, logcumsumexp ----------------------------------------------

def _scan_meta_for(name):
    def meta(self, dim, dtype=None):
        _single_dim(name, self, dim)
        if dtype is dt.bool and self.dim() and self.numel():    # else PyTorch runs no kernel
            raise NotImplementedError(f'"{name}_out_cpu" not implemented for \'Bool\'')
        return spec(self._shape, dtype or _integral_to_long(self.dtype))
    meta.__name__ = meta.__qualname__ = f"_{name}_meta"
    return meta


cumsum = structured("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
                    _scan_meta_for("cumsum"), tags=("scan",),
                    doc="Running sums along `dim`; integers and bool give int64, `dtype` casts"
                        " the input first.")
cumsum.impl("CPU")(cpu.cumsum_kernel)
cumprod = structured("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
                     _scan_meta_for("cumprod"), tags=("scan",),
                     doc="Running products along `dim`; integers and bool give int64.")
cumprod.impl("CPU")(cpu.cumprod_kernel)


def _in_out_dtype(meta):
    """The out= meta of a reduction or scan with a `dtype` argument (its last): given no
    dtype, PyTorch casts the input to out's dtype and computes in that (a sum into a bool
    or int32 out)."""
    def out_meta(out, *inputs):
        if inputs[-1] is None:
            inputs = inputs[:-1] + (out.dtype,)
        return meta(*inputs)
    return out_meta


for _decl in (sum_op, nansum, prod, cumsum, cumprod):
    _decl.out_meta = _in_out_dtype(_decl.meta)


def _same_dtype_out(spec, out, self, *args):
    if out.dtype is not self.dtype:
        raise RuntimeError(f"Expected the dtype for input and out to match, but got "
                           f"{self.dtype.cname} for input's dtype and {out.dtype.cname} for "
                           "out's dtype.")


amax.check_out = amin.check_out = _same_dtype_out


def _logcumsumexp_meta(self, dim):
    if self.dtype.category < dt.FLOAT:
        raise NotImplementedError(f'"logcumsumexp" not implemented for '
                                  f"'{self.dtype.cname}'")
    _single_dim("logcumsumexp", self, dim)
    return spec(self._shape, self.dtype)


logcumsumexp = structured("logcumsumexp(Tensor self, int dim) -> Tensor", _logcumsumexp_meta,
                          inplace=False, promotes=False, tags=("scan",),
                          doc="log(cumsum(exp(input))) along `dim`, without overflow.")
logcumsumexp.impl("CPU")(cpu.logcumsumexp_kernel)

# autocast runs these in another precision (ops/autocast.py)
autocast_policy(cumprod, cumsum, sum_op, prod.overload("default"), cuda=FP32)
autocast_policy(prod, cpu=FP32)
