"""Factories: tensors made from sizes or data (empty, zeros, full, tensor, from_numpy, ...)."""
from __future__ import annotations

import builtins
import warnings

import numpy as np

from ..core import dtype as dt
from ..core.device import CPU, as_device
from ..core.shape import Size, as_shape, check_nonnegative, contiguous_strides, check_in_bounds
from ..core.storage import UntypedStorage
from ..core.tensor import Tensor, contiguous_format, preserve_format
from ..dispatch.keys import BACKEND_MASK
from .copy import assign_array, fill_ as fill_op, strides_for
from .registry import export


def _fill_fresh(t: Tensor, value) -> Tensor:
    """Fill a tensor this factory just made: straight to the backend, no version bump."""
    return fill_op.functional.redispatch(t._keyset & BACKEND_MASK, t, value)


def _size_arg(name, size) -> tuple:
    if not size:
        raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
    shape = as_shape(size)
    check_nonnegative(shape)
    return shape


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def _factory_out(out, shape, dtype):
    if out.dtype is not dtype and dtype is not None:
        raise RuntimeError(f"Expected out tensor to have dtype {dtype}, but got {out.dtype} "
                           "instead")
    if out._shape != shape:
        out.resize_(shape)
    return out


def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False, memory_format=contiguous_format):
    """An uninitialised tensor of the given size (memory is not zeroed)."""
    shape = _size_arg("empty", size)
    if out is not None:
        return _factory_out(out, shape, dtype)
    dtype = dt.get_default_dtype() if dtype is None else dtype
    stride = None if memory_format is contiguous_format else \
        strides_for(_Shaped(shape), memory_format)
    return _finish(Tensor._empty(shape, dtype, as_device(device), stride), requires_grad)


class _Shaped:
    """Just enough of a tensor for strides_for on a bare shape."""

    def __init__(self, shape):
        self._shape = shape
        self._stride = contiguous_strides(shape)

    def is_contiguous(self):
        return True


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """An uninitialised tensor with exactly the given strides."""
    shape, stride = as_shape((size,)), as_shape((stride,))
    if len(shape) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    check_nonnegative(shape)
    dtype = dt.get_default_dtype() if dtype is None else dtype
    return _finish(Tensor._empty(shape, dtype, as_device(device), stride), requires_grad)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    """A tensor filled with `fill_value`; the dtype follows the value (int64, bool, float)."""
    if dtype is None:
        dtype = dt.scalar_dtype(fill_value.item() if isinstance(fill_value, Tensor)
                                else fill_value)
    t = empty(as_shape((size,)), out=out, dtype=dtype, device=device)
    return _finish(_fill_fresh(t, fill_value), requires_grad)


def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False):
    """A tensor of zeros."""
    t = empty(_size_arg("zeros", size), out=out, dtype=dtype, device=device)
    return _finish(_fill_fresh(t, 0), requires_grad)


def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    """A tensor of ones."""
    t = empty(_size_arg("ones", size), out=out, dtype=dtype, device=device)
    return _finish(_fill_fresh(t, 1), requires_grad)


# ---- *_like and new_* ------------------------------------------------------------------

def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=preserve_format):
    """An uninitialised tensor shaped like `input` (dense strides preserved by default)."""
    dtype = input.dtype if dtype is None else dtype
    device = input.device if device is None else as_device(device)
    t = Tensor._empty(input._shape, dtype, device, strides_for(input, memory_format))
    return _finish(t, requires_grad)


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=preserve_format):
    return _finish(_fill_fresh(empty_like(input, dtype=dtype, device=device,
                                          memory_format=memory_format), 0),
                   requires_grad)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=preserve_format):
    return _finish(_fill_fresh(empty_like(input, dtype=dtype, device=device,
                                          memory_format=memory_format), 1),
                   requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None,
              requires_grad=False, memory_format=preserve_format):
    return _finish(_fill_fresh(empty_like(input, dtype=dtype, device=device,
                                          memory_format=memory_format), fill_value),
                   requires_grad)


def _new(factory):
    def method(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
               pin_memory=False):
        return factory(*size, dtype=self.dtype if dtype is None else dtype,
                       device=self.device if device is None else device,
                       requires_grad=requires_grad)
    method.__name__ = method.__qualname__ = "new_" + factory.__name__
    method.__doc__ = f"{factory.__name__}(...) with self's dtype and device by default."
    return method


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
             layout=None, pin_memory=False):
    return full(size, fill_value, dtype=self.dtype if dtype is None else dtype,
                device=self.device if device is None else device, requires_grad=requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                      layout=None, pin_memory=False):
    return empty_strided(size, stride, dtype=self.dtype if dtype is None else dtype,
                         device=self.device if device is None else device,
                         requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None,
               pin_memory=False):
    return tensor(data, dtype=self.dtype if dtype is None else dtype,
                  device=self.device if device is None else device,
                  requires_grad=requires_grad)


# ---- from data -------------------------------------------------------------------------

def _leaves(data, shape, dim, out):
    """Collect the scalars of nested sequences into `out`, refusing ragged nesting."""
    if isinstance(data, Tensor) and data.dim() > 0:
        data = [data.select(0, i) for i in range(data.shape[0])]
    if isinstance(data, (list, tuple)):
        if len(shape) == dim:
            shape.append(len(data))
        elif shape[dim] != len(data):
            raise ValueError(f"expected sequence of length {shape[dim]} at dim {dim} "
                             f"(got {len(data)})")
        for x in data:
            _leaves(x, shape, dim + 1, out)
        return
    if len(shape) > dim:
        raise ValueError(f"expected sequence of length {shape[dim]} at dim {dim} "
                         f"(got {type(data).__name__})")
    out.append(data)


def _scalar_kind(x) -> dt.dtype:
    """The dtype a scalar inside `tensor(...)` data implies."""
    if isinstance(x, Tensor):
        return x.dtype
    if isinstance(x, np.generic):
        return dt.from_numpy_dtype(x.dtype)
    if isinstance(x, (builtins.bool, int, float, complex)):
        return dt.scalar_dtype(x)
    raise TypeError(f"new(): invalid data type '{type(x).__name__}'")


def _infer_list_dtype(leaves) -> dt.dtype:
    if not leaves:
        return dt.get_default_dtype()
    result = _scalar_kind(leaves[0])
    for x in leaves[1:]:
        k = _scalar_kind(x)
        if k is not result:
            result = dt.promote_types(result, k)
    return result


def _from_data(data, dtype, device) -> Tensor:
    """Copy nested sequences, scalars, NumPy arrays or tensors into a new tensor."""
    if isinstance(data, Tensor):
        src = data.detach()
        out = Tensor._empty(src._shape, src.dtype if dtype is None else dtype, src.device)
        out.copy_(src)
    else:
        if isinstance(data, (list, tuple)):
            shape, leaves = [], []
            _leaves(data, shape, 0, leaves)
            inferred = _infer_list_dtype(leaves)
            values = [x.item() if isinstance(x, Tensor) else x for x in leaves]
            # Python floats are doubles: keep them so until the one cast to the target dtype
            wide = (np.complex128 if inferred.is_complex else
                    np.float64 if inferred.is_floating_point else inferred.np)
            arr = np.array(values, dtype=wide).reshape(shape)
        elif isinstance(data, (builtins.bool, int, float, complex, np.generic)):
            inferred = _scalar_kind(data)
            arr = np.asarray(data)
        else:
            arr = np.asarray(data)
            if arr.dtype == object or arr.dtype.kind in "USV":
                raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
            inferred = dt.from_numpy_dtype(arr.dtype)
        out = Tensor._empty(arr.shape, inferred if dtype is None else dtype, CPU)
        assign_array(out._array(), arr)
    device = as_device(device)
    return out if out.device == device else out.to(device)


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor copying `data` (nested lists, numbers, NumPy arrays, tensors)."""
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use "
            "sourceTensor.detach().clone() or sourceTensor.detach().clone().requires_grad_(True),"
            " rather than torch.tensor(sourceTensor).", UserWarning, stacklevel=2)
    return _finish(_from_data(data, dtype, device), requires_grad)


def as_tensor(data, dtype=None, device=None):
    """`data` itself when it already is a matching tensor; shares NumPy memory if it can."""
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device)
    if isinstance(data, np.ndarray) and (device is None or as_device(device).type == "cpu"):
        t = from_numpy(data)
        return t if dtype is None else t.to(dtype)
    return _from_data(data, dtype, device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    t = as_tensor(obj, dtype=dtype, device=device)
    if copy:
        t = t.clone()
    return _finish(t, requires_grad)


class _ArrayHolder:
    """An object exposing raw bytes of an ndarray's extent while keeping it alive."""

    def __init__(self, interface, owner):
        self.__array_interface__ = interface
        self.owner = owner


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing `ndarray`'s memory: writes through either are seen by both."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dtype = dt.from_numpy_dtype(ndarray.dtype)
    isz = ndarray.itemsize
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and "
                         "tensors with negative strides are not currently supported. (You can "
                         "probably work around this by making a copy of your array  with "
                         "array.copy().) ")
    if any(s % isz for s in ndarray.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. "
                         "Copy the numpy array to reallocate the memory.")
    shape = ndarray.shape
    stride = tuple(s // isz for s in ndarray.strides)
    extent = 0 if ndarray.size == 0 else (
        sum((n - 1) * s for n, s in zip(shape, stride)) + 1) * isz
    holder = _ArrayHolder({"data": (ndarray.__array_interface__["data"][0], False),
                           "shape": (extent,), "typestr": "|u1", "version": 3}, ndarray)
    raw = np.asarray(holder)
    storage = UntypedStorage._wrap(raw)
    check_in_bounds(shape, stride, 0, isz, extent)
    return Tensor._make(storage, 0, shape, stride, dtype)


def legacy_tensor_new(cls, *args, device=None, dtype=None):
    """torch.Tensor(...): Tensor(2, 3) is uninitialised float, Tensor(data) copies data."""
    if len(args) == 1 and not isinstance(args[0], (int, Size)):   # Tensor(Size) is a size
        data = args[0]
        if isinstance(data, Tensor):
            return data
        return _from_data(data, dt.get_default_dtype(), device)
    return empty(*args, device=device)


for _f in (empty, empty_strided, full, zeros, ones, empty_like, zeros_like, ones_like,
           full_like, tensor, as_tensor, asarray, from_numpy):
    export(_f.__name__, _f)
for _f in (empty, zeros, ones):
    export("new_" + _f.__name__, _new(_f), method=True, function=False)
export("new_full", new_full, method=True, function=False)
export("new_empty_strided", new_empty_strided, method=True, function=False)
export("new_tensor", new_tensor, method=True, function=False)
