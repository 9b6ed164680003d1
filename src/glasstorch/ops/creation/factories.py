"""Factories: tensors made from sizes or data (empty, zeros, full, tensor, from_numpy, ...).

The size-based factories are dispatcher operators with PyTorch's ATen names (`aten::zeros`,
`aten::empty.memory_format`, `aten::zeros_like`, ...), so a TorchDispatchMode sees them. A
factory without tensor arguments has no tensor to take a backend key from: like PyTorch, it
dispatches on the BackendSelect key, whose kernel reads the `device=` argument and continues
on that backend. One kernel (CompositeExplicitAutograd) makes the tensor on every backend.
The public functions keep PyTorch's Python signatures: they parse sizes, pass the device
(the default one when none is given) and `pin_memory` as PyTorch's bindings do, and apply
`requires_grad` to the result, which the operators' schemas do not carry. `out=` calls write
into the given tensor directly. `tensor`/`as_tensor` copy data in Python, then pass the new
tensor through `aten::lift_fresh` as PyTorch does, so a mode sees the constant (and
FakeTensorMode makes it fake); `from_numpy` shares memory and dispatches nothing.
"""
from __future__ import annotations

import builtins
import warnings

import numpy as np

from ...core import dtype as dt
from ...core import device as _devices
from ...core.device import CPU, as_device, device as Device
from ...core.shape import Size, as_shape, check_nonnegative, contiguous_strides, check_in_bounds
from ...core.storage import UntypedStorage
from ...core.tensor import Tensor, contiguous_format, preserve_format
from ...dispatch.dispatcher import (PLAIN_CPU_GRAD_KEYSET, PLAIN_CPU_KEYSET, _tracers,
                                    define)
from ...dispatch.keys import BACKEND_MASK, BACKEND_OF_DEVICE, DispatchKey, threads_off_default
from ..copying.copies import assign_array, fill_ as fill_op, strides_for
from ..registry import export

BACKEND_SELECT = 1 << DispatchKey.BackendSelect   # the key set of a call without tensors
_BACKEND_BIT = {kind: 1 << key for kind, key in BACKEND_OF_DEVICE.items()}
OPTIONS = "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None"


def _backend_select(device_position: int):
    """The BackendSelect kernel of a factory: the backend is the one of its `device=`."""
    def backend_select(op, ks, *args):
        device = as_device(args[device_position])
        return op.redispatch(ks | _BACKEND_BIT[device.type], *args)
    return backend_select


def factory_op(schema_text: str, kernel):
    """Declare a factory operator whose one `kernel` makes its result on any backend."""
    op = define(schema_text)
    op.register("CompositeExplicitAutograd", kernel)
    if op.tensor_positions:
        # zeros_like & co. read a tensor only for its metadata: the autograd layer records
        # nothing for them (autograd.recording.not_differentiable, declared here directly)
        op.info["autograd"] = "not differentiable"
    else:
        names = [a.name for a in op.schema.arguments]
        op.register(DispatchKey.BackendSelect, _backend_select(names.index("device")))
    return op


def _on_cpu(device) -> bool:
    """Whether a factory's `device=` is the CPU (given, or the default device)."""
    if device is None:
        return _devices.default_device is CPU
    return device is CPU or (device.__class__ is str and device == "cpu") or (
        device.__class__ is Device and device.type == "cpu" and device.index is None)


def backend_call(op, device, head: tuple, tail: tuple) -> Tensor:
    """op(*head, device, *tail), a factory without tensor arguments, dispatched on the
    BackendSelect key. On the CPU, on a thread in its default state (no mode, trace or
    autocast), the kernel BackendSelect would reach (`op.plain_cpu`) is called directly:
    the same tensor without the dispatcher's two layers (zeros(16): 4.7 -> 2.9 us)."""
    if _on_cpu(device) and not threads_off_default[0] and not _tracers:
        return op.plain_cpu(*head, CPU, *tail)
    return op.dispatch(BACKEND_SELECT, *head, as_device(device), *tail)


def _like_call(op, input, keys: int, args: tuple) -> Tensor:
    """op(input, *args), a *_like or new_* factory, dispatched on input's key set `keys`:
    its plain CPU kernel called directly, as `backend_call`, where input is a plain CPU
    tensor and the thread in its default state (args name no other device then, since
    the callers pass `device` only where it is None)."""
    if not threads_off_default[0] and not _tracers:
        kernel = op.plain_cpu if keys == PLAIN_CPU_KEYSET else \
            op.plain_cpu_grad if keys == PLAIN_CPU_GRAD_KEYSET else None
        if kernel is not None:
            return kernel(input, *args)
    return op.dispatch(keys, input, *args)


def _fill_fresh(t: Tensor, value) -> Tensor:
    """Fill a tensor this factory just made: straight to the backend, no version bump; by
    NumPy's fill for zeros and ones of a plain CPU tensor of an ordinary dtype (every one
    holds 0 and 1 exactly) where no dispatch trace watches the backend's fill_ (ones(16):
    -0.7 us)."""
    if value.__class__ is int and (value == 0 or value == 1) and \
            t._keyset == PLAIN_CPU_KEYSET and t.dtype.family is None and not _tracers:
        t._array().fill(value)
        return t
    return fill_op.functional.redispatch(t._keyset & BACKEND_MASK, t, value)


def _size_arg(name, size, keyword=None) -> tuple:
    """The shape from positional sizes (`zeros(2, 3)`, `zeros((2, 3))`) or `size=`."""
    if keyword is not None:
        if size:
            raise TypeError(f"{name}() got both positional sizes and size=")
        size = (keyword,)
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


def _format(memory_format, default):
    """A schema's `MemoryFormat?`: None stands for the Python default (as PyTorch passes it)."""
    return None if memory_format is default else memory_format


# ---- the operators' kernels --------------------------------------------------------------

def _empty_kernel(size, dtype=None, layout=None, device=None, pin_memory=None,
                  memory_format=None):
    shape = tuple(size)
    check_nonnegative(shape)
    dtype = dt.get_default_dtype() if dtype is None else dtype
    stride = None if memory_format is None or memory_format is contiguous_format else \
        strides_for(_Shaped(shape), memory_format)
    return Tensor._empty(shape, dtype, as_device(device), stride)


def _empty_strided_kernel(size, stride, dtype=None, layout=None, device=None,
                          pin_memory=None):
    shape, stride = tuple(size), tuple(stride)
    if len(shape) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    check_nonnegative(shape)
    dtype = dt.get_default_dtype() if dtype is None else dtype
    return Tensor._empty(shape, dtype, as_device(device), stride)


def _filled_kernel(value):
    def kernel(size, dtype=None, layout=None, device=None, pin_memory=None):
        t = _empty_kernel(size, dtype, layout, device)
        if value == 0 and t.dtype.family is not None:
            return _zero_bytes(t)
        return _fill_fresh(t, value)
    return kernel


def _zero_bytes(t: Tensor) -> Tensor:
    """zeros of a partial dtype: zero bytes, as PyTorch's zero_ writes them (float8_e8m0fnu
    has no zero: its zero bytes are 2**-127); quantized tensors have no zero_."""
    if t.dtype.family == "quantized":
        raise NotImplementedError("Could not run 'aten::zero_' with arguments from the "
                                  "'QuantizedCPU' backend.")
    t._array().reshape(-1).view(np.uint8)[...] = 0       # a fresh, contiguous tensor
    return t


def _full_dtype(fill_value):
    return dt.scalar_dtype(fill_value.item() if isinstance(fill_value, Tensor) else fill_value)


def _full_kernel(size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = _full_dtype(fill_value) if dtype is None else dtype
    return _fill_fresh(_empty_kernel(size, dtype, layout, device), fill_value)


def empty_like_kernel(self, dtype=None, layout=None, device=None, pin_memory=None,
                      memory_format=None):
    """A fresh tensor with `self`'s shape (dense strides kept under preserve_format)."""
    dtype = self.dtype if dtype is None else dtype
    device = self.device if device is None else as_device(device)
    fmt = preserve_format if memory_format is None else memory_format
    return Tensor._empty(self._shape, dtype, device, strides_for(self, fmt))


def _filled_like_kernel(value):
    def kernel(self, dtype=None, layout=None, device=None, pin_memory=None,
               memory_format=None):
        return _fill_fresh(empty_like_kernel(self, dtype, layout, device, pin_memory,
                                             memory_format), value)
    return kernel


def _full_like_kernel(self, fill_value, dtype=None, layout=None, device=None, pin_memory=None,
                      memory_format=None):
    return _fill_fresh(empty_like_kernel(self, dtype, layout, device, pin_memory,
                                         memory_format), fill_value)


def _new_empty(self, size, dtype, device) -> Tensor:
    """empty(size) with self's dtype and device unless given (the new_* methods)."""
    return _empty_kernel(size, self.dtype if dtype is None else dtype, None,
                         self.device if device is None else device)


def _new_filled_kernel(value):
    def kernel(self, size, dtype=None, layout=None, device=None, pin_memory=None):
        t = _new_empty(self, size, dtype, device)
        return t if value is None else _fill_fresh(t, value)
    return kernel


def _new_full_kernel(self, size, fill_value, dtype=None, layout=None, device=None,
                     pin_memory=None):
    return _fill_fresh(_new_empty(self, size, dtype, device), fill_value)


def _new_empty_strided_kernel(self, size, stride, dtype=None, layout=None, device=None,
                              pin_memory=None):
    return _empty_strided_kernel(size, stride, self.dtype if dtype is None else dtype, None,
                                 self.device if device is None else device)


empty_op = factory_op("empty.memory_format(SymInt[] size, *, " + OPTIONS
                      + ", MemoryFormat? memory_format=None) -> Tensor", _empty_kernel)
empty_strided_op = factory_op("empty_strided(SymInt[] size, SymInt[] stride, *, " + OPTIONS
                              + ") -> Tensor", _empty_strided_kernel)
zeros_op = factory_op(f"zeros(SymInt[] size, *, {OPTIONS}) -> Tensor", _filled_kernel(0))
ones_op = factory_op(f"ones(SymInt[] size, *, {OPTIONS}) -> Tensor", _filled_kernel(1))
full_op = factory_op(f"full(SymInt[] size, Scalar fill_value, *, {OPTIONS}) -> Tensor",
                     _full_kernel)
_LIKE = f"{OPTIONS}, MemoryFormat? memory_format=None) -> Tensor"
empty_like_op = factory_op(f"empty_like(Tensor self, *, {_LIKE}", empty_like_kernel)
zeros_like_op = factory_op(f"zeros_like(Tensor self, *, {_LIKE}", _filled_like_kernel(0))
ones_like_op = factory_op(f"ones_like(Tensor self, *, {_LIKE}", _filled_like_kernel(1))
full_like_op = factory_op(f"full_like(Tensor self, Scalar fill_value, *, {_LIKE}",
                          _full_like_kernel)
new_empty_op = factory_op(f"new_empty(Tensor self, SymInt[] size, *, {OPTIONS}) -> Tensor",
                          _new_filled_kernel(None))
new_zeros_op = factory_op(f"new_zeros(Tensor self, SymInt[] size, *, {OPTIONS}) -> Tensor",
                          _new_filled_kernel(0))
new_ones_op = factory_op(f"new_ones(Tensor self, SymInt[] size, *, {OPTIONS}) -> Tensor",
                         _new_filled_kernel(1))
new_full_op = factory_op(f"new_full(Tensor self, SymInt[] size, Scalar fill_value, *, "
                         f"{OPTIONS}) -> Tensor", _new_full_kernel)
new_empty_strided_op = factory_op(f"new_empty_strided(Tensor self, SymInt[] size, "
                                  f"SymInt[] stride, *, {OPTIONS}) -> Tensor",
                                  _new_empty_strided_kernel)


def like_keyset(name: str, input) -> int:
    """The key set of a *_like call, refusing a non-tensor `input` as PyTorch does."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input._keyset


# ---- the public functions ----------------------------------------------------------------

def empty(*sizes, size=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False, memory_format=contiguous_format):
    """An uninitialised tensor of the given size (memory is not zeroed)."""
    shape = _size_arg("empty", sizes, size)
    if out is not None:
        return _factory_out(out, shape, dtype)
    t = backend_call(empty_op, device, (shape, dtype, layout),
                     (pin_memory, _format(memory_format, contiguous_format)))
    return _finish(t, requires_grad)


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
    t = backend_call(empty_strided_op, device, (shape, stride, dtype, layout), (pin_memory,))
    return _finish(t, requires_grad)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    """A tensor filled with `fill_value`; the dtype follows the value (int64, bool, float)."""
    shape = as_shape((size,))
    if out is not None:
        t = _factory_out(out, shape, _full_dtype(fill_value) if dtype is None else dtype)
        return _finish(_fill_fresh(t, fill_value), requires_grad)
    t = backend_call(full_op, device, (shape, fill_value, dtype, layout), (pin_memory,))
    return _finish(t, requires_grad)


def _filled(name, op, value):
    def factory(*sizes, size=None, out=None, dtype=None, layout=None, device=None,
                requires_grad=False, pin_memory=False):
        shape = _size_arg(name, sizes, size)
        if out is not None:
            return _finish(_fill_fresh(_factory_out(out, shape, dtype), value), requires_grad)
        t = backend_call(op, device, (shape, dtype, layout), (pin_memory,))
        return _finish(t, requires_grad)
    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = f"A tensor of {name}."
    return factory


zeros = _filled("zeros", zeros_op, 0)
ones = _filled("ones", ones_op, 1)


# ---- *_like and new_* ------------------------------------------------------------------

def _like(name, op):
    def like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
             memory_format=preserve_format):
        keys = like_keyset(name, input)
        args = (dtype, layout, device, False, _format(memory_format, preserve_format))
        t = _like_call(op, input, keys, args) if device is None else \
            op.dispatch(keys, input, *args)
        return _finish(t, requires_grad)
    like.__name__ = like.__qualname__ = name
    return like


empty_like = _like("empty_like", empty_like_op)
empty_like.__doc__ = "An uninitialised tensor shaped like `input` (dense strides preserved)."
zeros_like = _like("zeros_like", zeros_like_op)
ones_like = _like("ones_like", ones_like_op)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None,
              requires_grad=False, memory_format=preserve_format):
    t = full_like_op.dispatch(like_keyset("full_like", input), input, fill_value, dtype,
                              layout, device, False, _format(memory_format, preserve_format))
    return _finish(t, requires_grad)


def _new(name, op):
    def method(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
               pin_memory=False):
        args = (_size_arg(name, size), dtype, layout, device, pin_memory)
        t = _like_call(op, self, self._keyset, args) if device is None else \
            op.dispatch(self._keyset, self, *args)
        return _finish(t, requires_grad)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"{name.removeprefix('new_')}(...) with self's dtype and device by default."
    return method


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
             layout=None, pin_memory=False):
    t = new_full_op.dispatch(self._keyset, self, as_shape((size,)), fill_value, dtype, layout,
                             device, pin_memory)
    return _finish(t, requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                      layout=None, pin_memory=False):
    t = new_empty_strided_op.dispatch(self._keyset, self, as_shape((size,)),
                                      as_shape((stride,)), dtype, layout, device, pin_memory)
    return _finish(t, requires_grad)


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


lift_fresh_op = define("lift_fresh(Tensor(a) self) -> Tensor(a)")
lift_fresh_op.register("CompositeExplicitAutograd", lambda self: self)   # the tensor itself
lift_fresh_op.info["autograd"] = "not differentiable"   # no node: gradients reach it as it is
# What make_fx records for a constant made inside the traced function (a copy, so the graph
# never hands out the stored constant itself), as PyTorch's make_fx does.
lift_fresh_copy_op = define("lift_fresh_copy(Tensor self) -> Tensor")
lift_fresh_copy_op.register("CompositeExplicitAutograd", lambda self: self.clone())


def _unsigned(values, dtype) -> np.ndarray:
    """Python ints as uint16/32/64 elements, as PyTorch's tensor() reads them: a list with
    an int beyond int64 is read as unsigned 64-bit (no negatives then); otherwise negative
    ints wrap; every value must fit the type's range (its max, or down to -max)."""
    ints = [builtins.int(v) for v in values]
    if any(v > _INT64_MAX for v in ints):
        if any(v < 0 for v in ints):
            raise OverflowError("can't convert negative int to unsigned")
        if any(v >= 1 << 64 for v in ints):
            raise OverflowError("int too big to convert")
    top = dt.iinfo(dtype).max
    for v in ints:
        if not -top <= v <= top:
            raise RuntimeError(f"value cannot be converted to type {dtype.name} without "
                               "overflow")
    return np.array([v % (top + 1) for v in ints], dtype=dtype.np)


_INT64_MAX = (1 << 63) - 1


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
            if dtype is not None and dtype.family == "unsigned" and inferred.category <= dt.INT:
                arr = _unsigned(values, dtype).reshape(shape)
            else:
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
        out = lift_fresh_op.dispatch(out._keyset, out)
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
for _name, _op in (("new_empty", new_empty_op), ("new_zeros", new_zeros_op),
                  ("new_ones", new_ones_op)):
    export(_name, _new(_name, _op), method=True, function=False)
export("new_full", new_full, method=True, function=False)
export("new_empty_strided", new_empty_strided, method=True, function=False)
export("new_tensor", new_tensor, method=True, function=False)
