"""Copies and casts: copy_, fill_, clone, contiguous, to/_to_copy and the dtype shorthands.

The CPU kernels of copy_ and fill_ are in backends/cpu/copy.py."""
from __future__ import annotations

import functools

from ...core import dtype as dt
from ...core.device import as_device, device as Device
from ...core.shape import has_internal_overlap
from ...dispatch.dispatcher import define
from ...dispatch.keys import BACKEND_MASK, MATH_BITS
from ...core.tensor import Tensor, contiguous_format, preserve_format, suggest_memory_format
from ..registry import composite, export, kernel_op
from ...backends.cpu.casts import check_conversion
from ...backends.cpu.copy import (assign_array, check_copy, check_fill_fits, check_fill_value,
    copy_across, copy_cpu, copy_values, fill_cpu, internal_overlap_error, scalar_value,
    strides_for)

# ---- copy_ -----------------------------------------------------------------------------

copy_ = kernel_op("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
                  function=False, mutates=(0,), tags=("cross_device",),
                  doc="Copy `src` into self, broadcasting and converting the dtype.")
copy_.impl("CPU")(copy_cpu)

_copy_tensor = Tensor.copy_
_NUMBER_DTYPES = {bool: dt.bool, int: dt.int64, float: dt.float64, complex: dt.complex128}


@functools.wraps(_copy_tensor)
def _copy_method(self, src, non_blocking=False):
    """Tensor.copy_: a Python number is taken as a 0-d tensor (of double precision, as
    PyTorch wraps numbers), then copied like any source."""
    number_dtype = _NUMBER_DTYPES.get(src.__class__)
    if number_dtype is not None:
        from ..creation.factories import full
        src = full((), src, dtype=number_dtype, device=self.device)
    return _copy_tensor(self, src, non_blocking)


Tensor.copy_ = _copy_method


@copy_.impl("CUDA")
def _copy_cuda(self, src, non_blocking=False):
    check_copy(self, src)
    return copy_across(self, src, non_blocking)


@copy_.impl("Meta")
def _copy_meta(self, src, non_blocking=False):
    check_copy(self, src)
    return self


def copy_fresh(out: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """Copy into a tensor just allocated here with src's shape: no checks to make, no
    version to bump, so CPU copies go straight to NumPy."""
    if out.dtype.family is not None or src.dtype.family is not None:
        check_conversion(out.dtype, src.dtype)
    if src._keyset & MATH_BITS:          # a lazily conjugated or negated source
        from ..math_bits import copy_fresh_with_bits
        return copy_fresh_with_bits(out, src, non_blocking)
    if out._storage.device.type == "cpu" and src._storage.device.type == "cpu":
        copy_values(out, src)
        return out
    return copy_.functional.redispatch(out._keyset & BACKEND_MASK, out, src, non_blocking)


# ---- fill_ / zero_ ---------------------------------------------------------------------

fill_ = kernel_op("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)", function=False,
                  mutates=(0,), doc="Fill self with one value.")
fill_.impl("CPU")(fill_cpu)


@fill_.impl("CUDA")
def _fill_cuda(self, value):
    from ...backends.cuda.copy import fill
    check_fill_fits(self, value)
    fill(self, scalar_value(value))
    return self


@fill_.impl("Meta")
def _fill_meta(self, value):
    return self


# A 0-dim tensor value has its own overload, as in PyTorch, so that autograd sees it as an
# input (the value's gradient is the sum of self's) and a mode sees fill_.Tensor.
fill_tensor_ = kernel_op("fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)",
                         method=False, function=False, mutates=(0,))


def _fill_with_tensor(fill):
    """fill_.Tensor's kernel: PyTorch copies a value on self's device in, and copy_ refuses
    an expanded self (which fill_.Scalar fills); a value from elsewhere is filled as a number."""
    def kernel(self, value):
        check_fill_value(value)
        if value.device == self.device and has_internal_overlap(self._shape, self._stride):
            raise internal_overlap_error()
        return fill(self, value)
    return kernel


fill_tensor_.impl("CPU")(_fill_with_tensor(fill_cpu))
fill_tensor_.impl("CUDA")(_fill_with_tensor(_fill_cuda))


@fill_tensor_.impl("Meta")
def _fill_tensor_meta(self, value):
    check_fill_value(value)
    return self


def _fill_(self, value):
    """Fill self with one value: a number, or a 0-dim tensor."""
    return (fill_tensor_ if isinstance(value, Tensor) else fill_).functional(self, value)


export("fill_", _fill_, method=True, function=False)


def zero_(self):
    """Fill with zeros in place."""
    return self.fill_(0)


export("zero_", zero_, method=True, function=False)


# The functional forms of copy_, fill_ and zero_: a new tensor laid out as self, which
# graph tools (functionalization, decompositions) call in place of the in-place ops.
def _functional(schema: str, fn):
    define(schema).register("CompositeImplicitAutograd", fn)


_functional("copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor",
            lambda self, src, non_blocking=False: self.clone().copy_(src, non_blocking))
_functional("fill.Scalar(Tensor self, Scalar value) -> Tensor",
            lambda self, value: self.clone().fill_(value))
_functional("fill.Tensor(Tensor self, Tensor value) -> Tensor",
            lambda self, value: self.clone().fill_(value))
_functional("zero(Tensor self) -> Tensor", lambda self: self.clone().zero_())


# ---- clone / contiguous ----------------------------------------------------------------

clone_op = kernel_op("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor",
                     doc="A copy with its own storage; preserve_format keeps dense strides.")


def _clone_impl(self, memory_format=None):
    fmt = preserve_format if memory_format is None else memory_format
    out = Tensor._empty(self._shape, self.dtype, self.device, strides_for(self, fmt))
    return copy_fresh(out, self)


clone_op.impl("CPU")(_clone_impl)
clone_op.impl("CUDA")(_clone_impl)
clone_op.impl("Meta")(_clone_impl)


@composite(method=True, function=False)
def contiguous(self, memory_format=contiguous_format):
    """self when already contiguous in `memory_format`, else a copy that is."""
    if self.is_contiguous(memory_format):
        return self
    return self.clone(memory_format=memory_format)


# ---- to / type conversions -------------------------------------------------------------

to_copy = kernel_op("_to_copy(Tensor self, *, ScalarType? dtype=None, Device? device=None, "
                    "bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
                    method=False, doc="A copy converted to another dtype and/or device.")


def _to_copy_impl(self, dtype=None, device=None, non_blocking=False, memory_format=None):
    dtype = self.dtype if dtype is None else dtype
    device = self.device if device is None else as_device(device)
    fmt = preserve_format if memory_format is None else memory_format
    out = Tensor._empty(self._shape, dtype, device, strides_for(self, fmt))
    return copy_fresh(out, self, non_blocking)


to_copy.impl("CPU")(_to_copy_impl)
to_copy.impl("CUDA")(_to_copy_impl)
to_copy.impl("Meta")(_to_copy_impl)


def _parse_to_args(self, args, kwargs):
    """PyTorch's three forms: to(dtype, non_blocking, copy), to(device, dtype, non_blocking,
    copy) and to(other, non_blocking, copy); memory_format is keyword-only."""
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    rest = list(args)
    if rest:
        first = rest.pop(0)
        if isinstance(first, dt.dtype):
            dtype = first
        elif isinstance(first, Tensor):
            dtype, device = first.dtype, first.device
        else:
            device = first
            if rest and (rest[0] is None or isinstance(rest[0], dt.dtype)):
                dtype = rest.pop(0)
    if len(rest) > 2 or not all(isinstance(f, bool) for f in rest):
        raise TypeError(f"to() received an invalid combination of arguments - got "
                        f"{tuple(type(a).__name__ for a in args)}")
    flags = dict(zip(("non_blocking", "copy"), rest))
    non_blocking = kwargs.pop("non_blocking", flags.get("non_blocking", False))
    copy = kwargs.pop("copy", flags.get("copy", False))
    memory_format = kwargs.pop("memory_format", preserve_format)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return dtype, (None if device is None else as_device(device)), non_blocking, copy, \
        memory_format


def to(self, *args, **kwargs):
    """Convert dtype and/or device: to(dtype), to(device, dtype), to(other); self if no-op
    (a memory format counts as met where PyTorch's suggest_memory_format names it: a
    transposed matrix stays itself under contiguous_format, as in PyTorch)."""
    if not kwargs and len(args) == 1:          # x.to(torch.float32), x.to(device), unparsed
        target = args[0]
        if target.__class__ is dt.dtype:
            return _to_dtype(self, target)
        if target.__class__ is str and target == self.device.type or target.__class__ is \
                Device and target.index is None and target.type == self.device.type:
            return self                        # a batch's x.to(device) when it is there
    dtype, device, non_blocking, copy, memory_format = _parse_to_args(self, args, dict(kwargs))
    same_dtype = dtype is None or dtype is self.dtype
    same_device = device is None or device == self.device or (
        device.type == self.device.type and device.index is None)
    if same_dtype and same_device and not copy and (
            memory_format is preserve_format or suggest_memory_format(self._shape, self._stride) is memory_format):
        return self
    return to_copy.functional(self, dtype, device, non_blocking,
                              None if memory_format is preserve_format else memory_format)


export("to", to, method=True, function=False)


def _to_dtype(self, dtype):
    """self.to(dtype): self where it has that dtype already (x.float() on a float tensor,
    x.type_as(y), as common as the conversions themselves), else a converted copy."""
    if dtype is self.dtype:
        return self
    return to_copy.functional(self, dtype, None, False, None)


def _caster(dtype_):
    def cast(self, memory_format=preserve_format):
        if memory_format is preserve_format:
            return _to_dtype(self, dtype_)
        return self.to(dtype_, memory_format=memory_format)
    cast.__name__ = cast.__qualname__ = dtype_.name
    cast.__doc__ = f"self.to({dtype_!r})"
    return cast


for _name, _dtype in (("float", dt.float32), ("double", dt.float64), ("half", dt.float16),
                      ("bfloat16", dt.bfloat16), ("long", dt.int64), ("int", dt.int32),
                      ("short", dt.int16), ("char", dt.int8), ("byte", dt.uint8),
                      ("bool", dt.bool), ("cfloat", dt.complex64), ("cdouble", dt.complex128),
                      ("chalf", dt.complex32)):
    export(_name, _caster(_dtype), method=True, function=False)


def type_as(self, other):
    """self converted to other's dtype."""
    return _to_dtype(self, other.dtype)


def cpu(self, memory_format=preserve_format):
    return self.to("cpu", memory_format=memory_format)


def cuda(self, device=None, non_blocking=False, memory_format=preserve_format):
    return self.to("cuda" if device is None else as_device(device if not isinstance(
        device, int) else f"cuda:{device}"), non_blocking=non_blocking,
        memory_format=memory_format)


def pin_memory(self, device=None):
    """A copy in page-locked host memory, which GPU copies can read asynchronously (self
    if already pinned)."""
    from ...backends.cuda import pinned
    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    if self.is_pinned():
        return self
    out = Tensor._make(pinned.new_storage(self.nbytes), 0, self._shape,
                       strides_for(self, preserve_format), self.dtype)
    assign_array(out._array(), self._array())
    return out


def is_pinned(self, device=None) -> bool:
    """Whether the tensor lives in page-locked host memory (Tensor.pin_memory())."""
    return self._storage.is_pinned()


def record_stream(self, stream) -> None:
    """Tell the caching allocator that `stream` uses this tensor's memory, so that its block
    is not reused before the work queued on `stream` so far has finished."""
    if self.device.type != "cuda":
        raise RuntimeError("record_stream: expected a CUDA tensor")
    storage = self._storage
    if storage.buf is not None and storage.nbytes():
        storage._allocator.record_stream(storage.buf, stream.cuda_stream)


def type_(self, dtype=None, non_blocking=False):
    """With no argument, the legacy type name ('torch.FloatTensor'); else a cast to a dtype,
    a legacy type (torch.DoubleTensor, torch.cuda.FloatTensor) or its name."""
    if dtype is None:
        prefix = "torch." if self.device.type == "cpu" else f"torch.{self.device.type}."
        return prefix + _LEGACY_NAMES[self.dtype]
    device_type = self.device.type
    if isinstance(dtype, str):
        name = dtype.rsplit(".", 1)[-1]
        matches = [d for d, n in _LEGACY_NAMES.items() if n == name]
        if not matches or dtype not in (f"torch.{name}", f"torch.cuda.{name}"):
            raise ValueError(f"invalid type: '{dtype}'")
        dtype, device_type = matches[0], "cuda" if dtype.startswith("torch.cuda.") else "cpu"
    elif isinstance(getattr(dtype, "_device_type", None), str):    # torch.FloatTensor, ...
        dtype, device_type = dtype.dtype, dtype._device_type
    if device_type != self.device.type:
        return self.to(device_type, dtype, non_blocking=non_blocking)
    return self.to(dtype, non_blocking=non_blocking)


_LEGACY_NAMES = {dt.float32: "FloatTensor", dt.float64: "DoubleTensor",
                 dt.float16: "HalfTensor", dt.bfloat16: "BFloat16Tensor",
                 dt.int64: "LongTensor", dt.int32: "IntTensor", dt.int16: "ShortTensor",
                 dt.int8: "CharTensor", dt.uint8: "ByteTensor", dt.bool: "BoolTensor",
                 dt.complex64: "ComplexFloatTensor", dt.complex128: "ComplexDoubleTensor"}
_LEGACY_NAMES.update({d: f"{d.cname}Tensor" for d in dt.PARTIAL_DTYPES})   # UInt32Tensor, ...

export("type_as", type_as, method=True, function=False)
export("cpu", cpu, method=True, function=False)
export("cuda", cuda, method=True, function=False)
export("pin_memory", pin_memory, method=True, function=False)
export("is_pinned", is_pinned, method=True, function=False)
export("record_stream", record_stream, method=True, function=False)
export("type", type_, method=True, function=False)
