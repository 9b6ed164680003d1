"""dtypes, type promotion and the NumPy mapping (PyTorch's c10/core/ScalarType.h).

A dtype is a small immutable object; the module-level singletons (`float32`, ...) are the
only instances. Promotion follows PyTorch exactly: categories bool < integer < floating <
complex, and `result_type` combines three priority groups (dimensioned tensors, 0-dim
tensors, Python scalars) where a lower group only matters if its category is higher.

Besides the twelve full dtypes there are PyTorch's partial ones, each with a `family` that
says how little they do: "unsigned" (uint16/32/64 and uint1..7: storage, copies, a few ops;
promotion only with floats), "float8" (the float8 formats and float4_e2m1fn_x2: conversions
and data movement; no promotion), "complex32" (ComplexHalf, kept as two float16 halves),
"bits" (bits8, ...: raw bytes), "subbyte" (int1..7), "quantized" (qint8, ...: named only).
"""
from __future__ import annotations

import builtins
import math

import ml_dtypes
import numpy as np

BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type, printed and named as PyTorch's (`torch.float32`)."""

    __slots__ = ("name", "itemsize", "category", "_signed", "np", "cname", "_index", "family")

    def __init__(self, name, np_dtype, category, is_signed, cname, index, family=None):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.category = category
        self._signed = is_signed     # a bool, or the message of PyTorch's refusal to say
        self.cname = cname  # the C++ ScalarType name used in PyTorch's error messages
        self._index = index
        self.family = family         # None for the full dtypes; see the module docstring

    @property
    def is_signed(self):
        if self._signed.__class__ is str:
            raise RuntimeError(self._signed)
        return self._signed

    @property
    def is_floating_point(self):
        return self.category == FLOAT

    @property
    def is_complex(self):
        return self.category == COMPLEX

    def to_real(self):
        return _COMPLEX_TO_REAL.get(self, self)

    def to_complex(self):
        if self.category == COMPLEX:
            return self
        try:
            return _REAL_TO_COMPLEX[self]
        except KeyError:
            raise RuntimeError(f"Unknown Complex ScalarType for {self.cname}") from None

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

# ---- the partial dtypes (see the module docstring) ---------------------------------------

# complex32 as NumPy sees it: two float16 halves; kernels compute on it as complex64.
COMPLEX32_NP = np.dtype([("real", np.float16), ("imag", np.float16)])

uint16 = dtype("uint16", np.uint16, INT, False, "UInt16", 12, "unsigned")
uint32 = dtype("uint32", np.uint32, INT, False, "UInt32", 13, "unsigned")
uint64 = dtype("uint64", np.uint64, INT, False, "UInt64", 14, "unsigned")
complex32 = dtype("complex32", COMPLEX32_NP, COMPLEX, True, "ComplexHalf", 15, "complex32")
float8_e4m3fn = dtype("float8_e4m3fn", ml_dtypes.float8_e4m3fn, FLOAT, True, "Float8_e4m3fn",
                      16, "float8")
float8_e5m2 = dtype("float8_e5m2", ml_dtypes.float8_e5m2, FLOAT, True, "Float8_e5m2", 17,
                    "float8")
float8_e4m3fnuz = dtype("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, FLOAT, True,
                        "Float8_e4m3fnuz", 18, "float8")
float8_e5m2fnuz = dtype("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, FLOAT, True,
                        "Float8_e5m2fnuz", 19, "float8")
float8_e8m0fnu = dtype("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, FLOAT, False,
                       "Float8_e8m0fnu", 20, "float8")
# two float4 values per byte: PyTorch converts nothing to or from it, so its bytes stay bytes
float4_e2m1fn_x2 = dtype("float4_e2m1fn_x2", np.uint8, FLOAT, True, "Float4_e2m1fn_x2", 21,
                         "float8")

_BITS_UNDEFINED = "Bits types are undefined"
bits1x8 = dtype("bits1x8", np.uint8, INT, _BITS_UNDEFINED, "Bits1x8", 22, "bits")
bits2x4 = dtype("bits2x4", np.uint8, INT, _BITS_UNDEFINED, "Bits2x4", 23, "bits")
bits4x2 = dtype("bits4x2", np.uint8, INT, _BITS_UNDEFINED, "Bits4x2", 24, "bits")
bits8 = dtype("bits8", np.uint8, INT, _BITS_UNDEFINED, "Bits8", 25, "bits")
bits16 = dtype("bits16", np.uint16, INT, _BITS_UNDEFINED, "Bits16", 26, "bits")

# int1..int7 and uint1..uint7: one byte each, named for the sub-byte formats built on them
int1, int2, int3, int4, int5, int6, int7 = (
    dtype(f"int{n}", np.int8, INT, True, f"Int{n}", 26 + n, "subbyte") for n in range(1, 8))
uint1, uint2, uint3, uint4, uint5, uint6, uint7 = (
    dtype(f"uint{n}", np.uint8, INT, False, f"UInt{n}", 33 + n, "unsigned")
    for n in range(1, 8))

_QUANTIZED_SIGN = "isSignedType not supported for quantized types"
qint8 = dtype("qint8", np.int8, INT, _QUANTIZED_SIGN, "QInt8", 41, "quantized")
quint8 = dtype("quint8", np.uint8, INT, _QUANTIZED_SIGN, "QUInt8", 42, "quantized")
qint32 = dtype("qint32", np.int32, INT, _QUANTIZED_SIGN, "QInt32", 43, "quantized")
quint4x2 = dtype("quint4x2", np.uint8, INT, _QUANTIZED_SIGN, "QUInt4x2", 44, "quantized")
quint2x4 = dtype("quint2x4", np.uint8, INT, _QUANTIZED_SIGN, "QUInt2x4", 45, "quantized")

FLOAT8_DTYPES = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)
PARTIAL_DTYPES = (uint16, uint32, uint64, complex32, *FLOAT8_DTYPES, float4_e2m1fn_x2,
                  bits1x8, bits2x4, bits4x2, bits8, bits16, int1, int2, int3, int4, int5, int6,
                  int7, uint1, uint2, uint3, uint4, uint5, uint6, uint7, qint8, quint8, qint32,
                  quint4x2, quint2x4)
EVERY_DTYPE = ALL_DTYPES + PARTIAL_DTYPES
_FLOAT8_NP = frozenset(d.np for d in FLOAT8_DTYPES)


def readable_array(a: np.ndarray) -> np.ndarray:
    """An array NumPy can compute with: complex32 as complex64, the float8 formats as
    float32; other arrays unchanged (printing, item(), tolist(), kernels' inputs)."""
    if a.dtype == COMPLEX32_NP:
        out = np.empty(a.shape, np.complex64)
        out.real = a["real"]
        out.imag = a["imag"]
        return out
    if a.dtype in _FLOAT8_NP:
        return a.astype(np.float32)
    return a


# PyTorch's aliases: torch.float is torch.float32, torch.long is torch.int64, ...
ALIASES = {
    "float": float32, "double": float64, "half": float16, "cfloat": complex64,
    "cdouble": complex128, "long": int64, "int": int32, "short": int16, "chalf": complex32,
}

_COMPLEX_TO_REAL = {complex32: float16, complex64: float32, complex128: float64}
_REAL_TO_COMPLEX = {float16: complex32, bfloat16: complex64, float32: complex64,
                    float64: complex128}
# the dtypes a NumPy array can come in as (torch.from_numpy): the full ones and uint16/32/64
_FROM_NUMPY = {d.np: d for d in ALL_DTYPES + (uint16, uint32, uint64)}


def from_numpy_dtype(np_dtype) -> dtype:
    """The glasstorch dtype for a NumPy dtype; TypeError for ones PyTorch cannot hold."""
    try:
        return _FROM_NUMPY[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype)}. The only supported "
            "types are: float64, float32, float16, complex64, complex128, int64, int32, "
            "int16, int8, uint64, uint32, uint16, uint8, and bool.") from None


# The scalar types whose CPU and CUDA tensors have a legacy Python type (torch.FloatTensor):
# PyTorch's Python layer writes those into error messages in place of the C++ name.
_LEGACY_TENSOR_NAMES = frozenset(("Byte", "Char", "Short", "Int", "Long", "Half", "Float",
                                  "Double"))
_DEVICE_KEY_NAMES = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta"}


def type_in_messages(d: dtype, device_type: str) -> str:
    """How PyTorch's messages name a tensor's type (`expand(torch.DoubleTensor{[2, 3]},
    ...)`): the C++ name, `CPUBoolType`, `MetaFloatType`, which the Python layer turns into
    the legacy type's name where one exists (CPU or CUDA, one of eight scalar types)."""
    key = _DEVICE_KEY_NAMES.get(device_type, device_type.upper())
    if d.cname in _LEGACY_TENSOR_NAMES and key in ("CPU", "CUDA"):
        return f"torch.{'cuda.' if key == 'CUDA' else ''}{d.cname}Tensor"
    return f"{key}{d.cname}Type"


# ---- default dtype ------------------------------------------------------------------------

_default_dtype = float32


def get_default_dtype() -> dtype:
    return _default_dtype


def set_default_dtype(d: dtype) -> None:
    """Set the dtype Python floats and float factories produce (float32 by default)."""
    global _default_dtype
    if not isinstance(d, dtype) or d.category != FLOAT:
        raise TypeError("only floating-point types are supported as the default type")
    if d.family is not None:       # PyTorch looks for a legacy storage class, which these lack
        raise TypeError(f"couldn't find storage object {d.cname}Storage")
    _default_dtype = d


def default_complex_dtype() -> dtype:
    return complex128 if _default_dtype is float64 else complex64


# ---- promotion ----------------------------------------------------------------------------

def _promote_partial(a: dtype, b: dtype) -> dtype:
    """PyTorch's few promotions of a partial dtype with a different one, and its refusals
    (in its order: quantized, bits, float8, the unsigned ones, then everything else)."""
    pair = f"{a.cname} and {b.cname}"
    if a.family == "quantized" or b.family == "quantized":
        raise RuntimeError("promoteTypes with quantized numbers is not handled yet; figure out "
                           f"what the correct rules should be, offending types: {a.cname} "
                           f"{b.cname}")
    if a.family == "bits" or b.family == "bits":
        raise RuntimeError(f"Promotion from {pair} is unsupported.")
    f4 = float4_e2m1fn_x2
    if (a.family == "float8" and a is not f4) or (b.family == "float8" and b is not f4):
        raise RuntimeError(f"Promotion for Float8 Types is not supported, attempted to promote "
                           f"{pair}")
    if a.family == "unsigned" or b.family == "unsigned":
        other = b if a.family == "unsigned" else a
        if other is f4 or (other.family is None and other.category == FLOAT):
            return other
        raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {pair}")
    if a.family == "complex32" or b.family == "complex32":
        other = b if a.family == "complex32" else a
        if other.family is None:
            return promote_types(float16, other.to_real()).to_complex()
    raise RuntimeError(f"Promotion from {pair} is unsupported.")


def _promote_slow(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.family is not None or b.family is not None:
        return _promote_partial(a, b)
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
    try:
        return _PROMOTE[type1, type2]
    except KeyError:          # a partial dtype: its pairs are not tabled, most of them raise
        if not isinstance(type1, dtype) or not isinstance(type2, dtype):
            raise TypeError("promote_types(): arguments 'type1' and 'type2' must be "
                            "torch.dtype") from None
        return _promote_slow(type1, type2)


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
        if type is float4_e2m1fn_x2:      # two values per byte: PyTorch has no limits for it
            raise TypeError("bad argument type for built-in operation")
        info = ml_dtypes.finfo(type.to_real().np)
        self.dtype = type.to_real().name
        self.bits = info.bits
        # PyTorch's epsilon for float8_e5m2fnuz is 2**-3, not the format's 2**-2
        self.eps = 0.125 if type is float8_e5m2fnuz else builtins.float(info.eps)
        self.max = builtins.float(info.max)
        self.min = builtins.float(info.min)
        self.tiny = self.smallest_normal = builtins.float(info.tiny)
        # 10 ** -(the decimal digits the mantissa always holds): C++'s digits10
        self.resolution = 10.0 ** -math.floor(info.nmant * math.log10(2))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype (torch.iinfo)."""

    def __init__(self, type: dtype):
        if type is bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if type.category != INT or type.family not in (None, "unsigned") or \
                type.np.itemsize == 1 and type.family is not None:     # uint1..7
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo "
                            "to handle 'torch.iinfo'")
        info = np.iinfo(type.np)
        self.dtype = type.name
        self.bits = info.bits
        self.max = builtins.int(info.max)
        self.min = builtins.int(info.min)

    def __repr__(self):
        return (f"iinfo(min={builtins.float(self.min):g}, max={builtins.float(self.max):g}, "
                f"dtype={self.dtype})")


def is_floating_point(tensor) -> builtins.bool:
    return tensor.dtype.category == FLOAT


def is_complex(tensor) -> builtins.bool:
    return tensor.dtype.category == COMPLEX
