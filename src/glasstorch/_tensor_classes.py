"""PyTorch's legacy tensor and storage types: `torch.FloatTensor`, `torch.LongTensor(3)`,
`torch.cuda.FloatTensor`, `torch.FloatStorage`, and `TypedStorage`.

Each legacy tensor type stands for a (dtype, device) pair. Calling it makes a tensor of that
type (`FloatTensor(2, 3)` uninitialized, `FloatTensor([1, 2])` from data); `isinstance(x,
torch.FloatTensor)` asks whether x is a float32 CPU tensor; `x.type(torch.DoubleTensor)`
converts. A typed storage is a 1-D view of a tensor's elements by dtype over its
UntypedStorage.

    >>> import glasstorch as torch
    >>> x = torch.FloatTensor([1, 2])
    >>> x.type(), isinstance(x, torch.FloatTensor), isinstance(x, torch.LongTensor)
    ('torch.FloatTensor', True, False)
"""
from __future__ import annotations

import numbers

from .core import dtype as dt
from .core.device import device as _device
from .core.tensor import Tensor
from .ops.creation.factories import empty, tensor

_NAMES = {dt.float64: "Double", dt.float32: "Float", dt.float16: "Half",
          dt.bfloat16: "BFloat16", dt.int64: "Long", dt.int32: "Int", dt.int16: "Short",
          dt.int8: "Char", dt.uint8: "Byte", dt.bool: "Bool"}
_STORAGE_NAMES = {**_NAMES, dt.complex64: "ComplexFloat", dt.complex128: "ComplexDouble"}


def _sizes(args) -> tuple | None:
    """The sizes of a legacy constructor call (ints, or one torch.Size), or None."""
    if len(args) == 1 and isinstance(args[0], tuple) and all(
            isinstance(a, numbers.Integral) for a in args[0]):
        return tuple(args[0])
    if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
        return tuple(int(a) for a in args)
    return None


class _LegacyTensorType(type):
    """The metaclass of torch.FloatTensor and friends: instances are the tensors of one
    dtype on one device type."""

    def __instancecheck__(cls, obj) -> bool:
        return (isinstance(obj, Tensor) and obj.dtype is cls.dtype
                and obj.device.type == cls._device_type)

    def __call__(cls, *args, device=None, **kwargs):
        if kwargs:
            raise TypeError(f"{cls.__name__}() got unexpected keyword arguments "
                            f"{sorted(kwargs)}")
        where = _device(device) if device is not None else _device(cls._device_type)
        if where.type != cls._device_type:
            raise RuntimeError(f"legacy constructor expects device type: "
                               f"{cls._device_type} but device type: {where.type} was passed")
        sizes = _sizes(args)
        if sizes is not None:
            return empty(sizes, dtype=cls.dtype, device=where)
        if len(args) == 1 and isinstance(args[0], Tensor):
            if args[0].dtype is not cls.dtype or args[0].device.type != cls._device_type:
                raise TypeError(f"expected {cls.__module__}.{cls.__name__} (got "
                                f"{args[0].type()})")
            return args[0]
        if len(args) == 1:
            return tensor(args[0], dtype=cls.dtype, device=where)
        raise TypeError(f"{cls.__name__}() takes sizes (ints) or one sequence of data, not "
                        f"{', '.join(type(a).__name__ for a in args)}")

    def __repr__(cls) -> str:
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def _legacy_type(name: str, d: dt.dtype, device_type: str, module: str):
    return _LegacyTensorType(name, (), {"dtype": d, "_device_type": device_type,
                                        "is_cuda": device_type == "cuda", "is_sparse": False,
                                        "__module__": module})


CPU_TYPES = {d: _legacy_type(f"{n}Tensor", d, "cpu", "torch") for d, n in _NAMES.items()}
CUDA_TYPES = {d: _legacy_type(f"{n}Tensor", d, "cuda", "torch.cuda") for d, n in _NAMES.items()}


def legacy_type(spec):
    """(dtype, device type) of a legacy tensor type or its name ('torch.cuda.FloatTensor'),
    or None when spec is neither."""
    if isinstance(spec, _LegacyTensorType):
        return spec.dtype, spec._device_type
    if isinstance(spec, str):
        device_type = "cuda" if spec.startswith("torch.cuda.") else "cpu"
        for types in (CPU_TYPES, CUDA_TYPES):
            for d, cls in types.items():
                if spec == f"{cls.__module__}.{cls.__name__}":
                    return d, device_type
        raise ValueError(f"invalid type: '{spec}'")
    return None


# ---- storages --------------------------------------------------------------------------

class TypedStorage:
    """The elements of an UntypedStorage read as one dtype (deprecated in PyTorch, kept for
    programs that still call `x.storage()` or `torch.FloatStorage(n)`)."""

    is_sparse = False

    def __init__(self, *args, dtype=None, device=None, wrap_storage=None, _elements=None):
        if _elements is not None:
            self._elements = _elements
            return
        d = dtype or dt.get_default_dtype()
        if wrap_storage is not None:
            from .ops.creation.factories import empty as _empty
            count = wrap_storage.nbytes() // d.itemsize
            self._elements = _empty(0, dtype=d, device=wrap_storage.device).set_(
                wrap_storage, 0, (count,), (1,))
        elif len(args) == 1 and isinstance(args[0], numbers.Integral):
            self._elements = empty(int(args[0]), dtype=d, device=device)
        elif len(args) == 1:
            self._elements = tensor(list(args[0]), dtype=d, device=device).reshape(-1)
        elif not args:
            self._elements = empty(0, dtype=d, device=device)
        else:
            raise TypeError("TypedStorage() takes a size or a sequence of values")

    @property
    def dtype(self):
        return self._elements.dtype

    @property
    def device(self):
        return self._elements.device

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def size(self) -> int:
        return self._elements.numel()

    __len__ = size

    def element_size(self) -> int:
        return self.dtype.itemsize

    def nbytes(self) -> int:
        return self.size() * self.element_size()

    def untyped(self):
        return self._elements.untyped_storage()

    _untyped_storage = property(untyped)

    def data_ptr(self) -> int:
        return self._elements.data_ptr()

    def __getitem__(self, index):
        value = self._elements[index]
        return value.item() if value.dim() == 0 else TypedStorage(_elements=value)

    def __setitem__(self, index, value) -> None:
        self._elements[index] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self) -> list:
        return self._elements.tolist()

    def fill_(self, value) -> "TypedStorage":
        self._elements.fill_(value)
        return self

    def copy_(self, source, non_blocking=None) -> "TypedStorage":
        self._elements.copy_(source._elements if isinstance(source, TypedStorage) else source)
        return self

    def clone(self) -> "TypedStorage":
        return TypedStorage(_elements=self._elements.clone())

    def type(self, dtype=None):
        if dtype is None:
            return f"torch.{_STORAGE_NAMES[self.dtype]}Storage"
        raise NotImplementedError("TypedStorage.type(dtype): convert the tensor instead")

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist())
        return (f"{body}\n[{self.type()} of size {self.size()}]" if body
                else f"[{self.type()} of size 0]")


class _LegacyStorageType(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, TypedStorage) and obj.dtype is cls.dtype

    def __call__(cls, *args, device=None, **kwargs):
        return TypedStorage(*args, dtype=cls.dtype, device=device, **kwargs)


STORAGE_TYPES = {d: _LegacyStorageType(f"{n}Storage", (), {"dtype": d, "__module__": "torch"})
                 for d, n in _STORAGE_NAMES.items()}


def exported_names() -> dict:
    """The names `glasstorch` (and `glasstorch.cuda`) gain: FloatTensor, FloatStorage, ..."""
    names = {cls.__name__: cls for cls in CPU_TYPES.values()}
    names.update({cls.__name__: cls for cls in STORAGE_TYPES.values()})
    names["TypedStorage"] = TypedStorage
    return names


def cuda_names() -> dict:
    return {cls.__name__: cls for cls in CUDA_TYPES.values()}
