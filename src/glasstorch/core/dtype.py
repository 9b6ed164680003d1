"""dtypes, type promotion and the NumPy mapping (PyTorch's c10/core/ScalarType.h).

A dtype is a small immutable object; the module-level singletons (`float32`, ...) are the
only instances. Promotion follows PyTorch exactly: categories bool < integer < floating <
complex, and `result_type` combines three priority groups (dimensioned tensors, 0-dim
tensors, Python scalars) where a lower group only matters if its category is higher.
"""
from __future__ import annotations

import builtins

import ml_dtypes
import numpy as np

BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type, printed and named as PyTorch's (`torch.float32`)."""

    __slots__ = ("name", "itemsize", "category", "is_signed", "np", "cname", "_index")

    def __init__(self, name, np_dtype, category, is_signed, cname, index):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.category = category
        self.is_signed = is_signed
        self.cname = cname  # the C++ ScalarType name used in PyTorch's error messages
        self._index = index

    @property
    def is_floating_point(self):
        return self.category == FLOAT

    @property
    def is_complex(self):
        return self.category == COMPLEX

    def to_real(self):
        return _COMPLEX_TO_REAL.get(self, self)

    def to_complex(self):
        return _REAL_TO_COMPLEX.get(self, self)

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return self.name

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


bool = dtype("bool", np.bool_, BOOL, False, "Bool", 0)
uint8 = dtype("uint8", np.uint8, INT, False, "Byte", 1)
int8 = dtype("int8", np.int8, INT, True, "Char", 2)
int16 = dtype("int16", np.int16, INT, True, "Short", 3)
int32 = dtype("int32", np.int32, INT, True, "Int", 4)
int64 = dtype("int64", np.int64, INT, True, "Long", 5)
float16 = dtype("float16", np.float16, FLOAT, True, "Half", 6)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, FLOAT, True, "BFloat16", 7)
float32 = dtype("float32", np.float32, FLOAT, True, "Float", 8)
float64 = dtype("float64", np.float64, FLOAT, True, "Double", 9)
complex64 = dtype("complex64", np.complex64, COMPLEX, True, "ComplexFloat", 10)
complex128 = dtype("complex128", np.complex128, COMPLEX, True, "ComplexDouble", 11)

ALL_DTYPES = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
              complex64, complex128)

# PyTorch's aliases: torch.float is torch.float32, torch.long is torch.int64, ...
ALIASES = {
    "float": float32, "double": float64, "half": float16, "cfloat": complex64,
    "cdouble": complex128, "long": int64, "int": int32, "short": int16,
}

_COMPLEX_TO_REAL = {complex64: float32, complex128: float64}
_REAL_TO_COMPLEX = {float16: complex64, bfloat16: complex64, float32: complex64,
                    float64: complex128}
_FROM_NUMPY = {d.np: d for d in ALL_DTYPES}


def from_numpy_dtype(np_dtype) -> dtype:
    """The glasstorch dtype for a NumPy dtype; TypeError for ones PyTorch cannot hold."""
    try:
        return _FROM_NUMPY[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype)}. The only supported "
            "types are: float64, float32, float16, complex64, complex128, int64, int32, "
            "int16, int8, uint8, and bool.") from None


# ---- default dtype ------------------------------------------------------------------------

_default_dtype = float32


def get_default_dtype() -> dtype:
    return _default_dtype


def set_default_dtype(d: dtype) -> None:
    """Set the dtype Python floats and float factories produce (float32 by default)."""
    global _default_dtype
    if not isinstance(d, dtype) or d.category != FLOAT:
        raise TypeError("only floating-point types are supported as the default type")
    _default_dtype = d


def default_complex_dtype() -> dtype:
    return complex128 if _default_dtype is float64 else complex64


# ---- promotion ----------------------------------------------------------------------------

def _promote_slow(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.category == BOOL:
        return b
    if b.category == BOOL:
        return a
    if a.category == COMPLEX or b.category == COMPLEX:
        real = _promote_slow(a.to_real(), b.to_real())
        return real.to_complex() if real.category == FLOAT else (
            a if a.category == COMPLEX else b)
    if a.category == FLOAT and b.category == FLOAT:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize > b.itemsize else b
    if a.category == FLOAT:
        return a
    if b.category == FLOAT:
        return b
    # two integer types
    if a.is_signed == b.is_signed:
        return a if a.itemsize > b.itemsize else b
    unsigned, signed = (a, b) if not a.is_signed else (b, a)
    return signed if signed.itemsize > unsigned.itemsize else int16


_PROMOTE = {(a, b): _promote_slow(a, b) for a in ALL_DTYPES for b in ALL_DTYPES}


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both inputs can be converted to (torch.promote_types)."""
    return _PROMOTE[type1, type2]


def can_cast(from_: dtype, to: dtype) -> builtins.bool:
    """True unless the cast lowers the category (float to int, complex to float, ...)."""
    return from_.category <= to.category


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    """Combine a higher-priority group's dtype with a lower one's (TypeProperties.cpp)."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:
        return higher.to_complex() if higher.category == FLOAT else lower
    if higher.category == FLOAT:
        return higher
    if higher.category == BOOL or lower.category == FLOAT:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar counts as in promotion (floats count as the default)."""
    t = type(value)
    if t is builtins.bool or isinstance(value, np.bool_):
        return bool
    if t is builtins.int or isinstance(value, np.integer):
        return int64
    if t is builtins.float or isinstance(value, np.floating):
        return _default_dtype
    if t is builtins.complex or isinstance(value, np.complexfloating):
        return default_complex_dtype()
    raise TypeError(f"expected a Tensor or a Python number, but got {t.__name__}")


def result_type_of(operands) -> dtype:
    """Promoted dtype of tensors and Python scalars, with PyTorch's three priority groups."""
    dim = zero = wrapped = None
    for x in operands:
        d = getattr(x, "dtype", None)
        if d is None or not isinstance(d, dtype):
            s = scalar_dtype(x)
            wrapped = s if wrapped is None else promote_types(wrapped, s)
        elif x.dim() == 0:
            zero = d if zero is None else promote_types(zero, d)
        else:
            dim = d if dim is None else promote_types(dim, d)
    return _combine(_combine(dim, zero), wrapped)


def result_type(tensor1, tensor2) -> dtype:
    """torch.result_type: the dtype an arithmetic op on the two operands produces."""
    return result_type_of((tensor1, tensor2))


# ---- finfo / iinfo ------------------------------------------------------------------------

class finfo:
    """Machine limits of a floating dtype (torch.finfo)."""

    def __init__(self, type: dtype | None = None):
        type = _default_dtype if type is None else type
        if type.category not in (FLOAT, COMPLEX):
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        info = ml_dtypes.finfo(type.to_real().np)
        self.dtype = type.to_real().name
        self.bits = info.bits
        self.eps = builtins.float(info.eps)
        self.max = builtins.float(info.max)
        self.min = builtins.float(info.min)
        self.tiny = self.smallest_normal = builtins.float(info.tiny)
        self.resolution = 10.0 ** -info.precision

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype (torch.iinfo)."""

    def __init__(self, type: dtype):
        if type is bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if type.category != INT:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo "
                            "to handle 'torch.iinfo'")
        info = np.iinfo(type.np)
        self.dtype = type.name
        self.bits = info.bits
        self.max = builtins.int(info.max)
        self.min = builtins.int(info.min)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def is_floating_point(tensor) -> builtins.bool:
    return tensor.dtype.category == FLOAT


def is_complex(tensor) -> builtins.bool:
    return tensor.dtype.category == COMPLEX
