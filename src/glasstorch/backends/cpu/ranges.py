"""The arithmetic of the range factories (arange, range, linspace, logspace) on NumPy arrays:
PyTorch's accumulate types, truncations, fused multiply-add and halfway split, computed on the
host, and the write of the values into a tensor of any device."""
from __future__ import annotations

import math

import numpy as np

from ...core import dtype as dt
from ...core.tensor import Tensor


# PyTorch's names for dtypes in "value cannot be converted to type X without overflow".
CONVERT_NAME = {dt.uint8: "uint8_t", dt.int8: "int8_t", dt.int16: "int16_t", dt.int32: "int",
                 dt.int64: "int64_t", dt.float16: "c10::Half", dt.bfloat16: "c10::BFloat16",
                 dt.float32: "float", dt.float64: "double", dt.bool: "bool",
                 dt.complex64: "c10::complex<float>", dt.complex128: "c10::complex<double>",
                 dt.uint16: "uint16_t", dt.uint32: "uint32_t", dt.uint64: "uint64_t"}

# (lowest, max) of every real dtype, as Python numbers.
LIMITS = {d: (0, 1) if d is dt.bool else
          (dt.iinfo(d).min, dt.iinfo(d).max) if d.category == dt.INT else
          (dt.finfo(d).min, dt.finfo(d).max) for d in dt.ALL_DTYPES if d.category != dt.COMPLEX}
LIMITS.update({d: (0, dt.iinfo(d).max) for d in (dt.uint16, dt.uint32, dt.uint64)})


def converted(value, d: dt.dtype):
    """`value` as dtype `d` holds it, with PyTorch's overflow check (c10::checked_convert):
    floats must be in range (inf/nan only into floats), ints may wrap into unsigned types
    from down to -max, complex values need a zero imaginary part unless `d` is complex."""
    if isinstance(value, complex) and d.category != dt.COMPLEX:
        if value.imag != 0:
            _overflow(d)
        value = value.real
    if d.category == dt.COMPLEX:
        return complex(value)
    lo, hi = LIMITS[d]
    if d.category == dt.FLOAT:
        if math.isfinite(value) and not lo <= value <= hi:
            _overflow(d)
        if d.itemsize == 2:                 # c10 converts double to Half/BFloat16 via float
            value = np.float32(value)
        return float(np.asarray(value, d.np).astype(np.float64))
    if isinstance(value, float):
        if not lo <= value <= hi:          # also nan
            _overflow(d)
        return math.trunc(value)
    if lo == 0 and value < 0:              # unsigned: negatives wrap (two's complement)
        if -value > hi:
            _overflow(d)
        return value % (hi + 1)
    if not lo <= value <= hi:
        _overflow(d)
    return value


def _overflow(d):
    raise RuntimeError(f"value cannot be converted to type {CONVERT_NAME[d]} without overflow")


def write(t: Tensor, values) -> None:
    """Cast NumPy values into a CPU tensor through its strided view (only its elements).

    NumPy's overflow/invalid-cast RuntimeWarnings are silenced for glasstorch modules by the
    CPU backend's warning filter, so no np.errstate is needed on this hot path."""
    np.copyto(t._array(), values, casting="unsafe")


def _number(fn: str, name: str, position: int, value):
    """A Python number from a number or a 0-dim tensor."""
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Number, "
                            "not Tensor")
        return value.item()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (int, float, complex)):
        return value
    raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Number, not "
                    f"{type(value).__name__}")


def fma(a, b, c):
    """a * b + c rounded once to double: PyTorch's CPU kernels are built with fused
    multiply-add, which decides where integer results truncate. Emulated in x87 extended
    precision where NumPy has it (products of a double and an index below 2**11 are exact
    there); elsewhere a plain multiply-add."""
    if _EXTENDED:
        return (np.asarray(a, np.longdouble) * b + c).astype(np.float64)
    return a * b + c


_EXTENDED = np.finfo(np.longdouble).nmant >= 63


def accumulated(start, step, n: int, d: dt.dtype) -> np.ndarray:
    """start + step * i for i < n in PyTorch's accumulate type for `d`."""
    if d.category == dt.INT:
        return np.arange(n, dtype=np.int64) * np.int64(step) + np.int64(start)
    i = np.arange(n, dtype=np.float64)
    if d is dt.float16 or d is dt.bfloat16:     # float accumulation (exact products in double)
        return (float(np.float32(step)) * i + float(np.float32(start))).astype(np.float32)
    return fma(step, i, start)


def accumulate_args(d: dt.dtype, start, end, step) -> tuple:
    """start, end, step converted to the accumulate type (int64, float32 or double)."""
    if d.category == dt.INT:
        return tuple(converted(v, dt.int64) for v in (start, end, step))
    if d is dt.float16 or d is dt.bfloat16:
        return tuple(float(np.float32(v)) for v in (start, end, step))
    return tuple(float(v) for v in (start, end, step))


def _halfway(first, last, steps: int, step, fused=True) -> np.ndarray:
    """first + step * i for the first half, last - step * (steps - 1 - i) for the rest
    (so each end is exact), in double; `fused` as PyTorch's per-ISA kernels (linspace), not
    as its generic ones (logspace)."""
    i = np.arange(steps, dtype=np.float64)
    half = steps // 2
    if fused:
        return np.concatenate((fma(step, i[:half], first),
                               fma(-step, steps - 1 - i[half:], last)))
    return np.concatenate((first + step * i[:half], last - step * (steps - 1 - i[half:])))


def linspace_values(start, end, steps: int, d: dt.dtype) -> np.ndarray:
    """PyTorch's arithmetic: integers in double then truncated, float32 in float32,
    float16/bfloat16 rounding after every operation, float64 and complex in double."""
    if steps == 1:
        return np.asarray(start)
    if d is dt.float16 or d is dt.bfloat16:
        scalar = d.np.type
        step = (scalar(end) - scalar(start)) / scalar(steps - 1)
        i = np.arange(steps, dtype=np.float64)
        half = steps // 2
        up = scalar(start) + step * i[:half].astype(d.np)
        down = scalar(end) - step * (steps - 1 - i[half:]).astype(d.np)
        return np.concatenate((up, down))
    if d is dt.float32:
        step = (np.float32(end) - np.float32(start)) / np.float32(steps - 1)
        return _halfway(float(start), float(end), steps, float(step)).astype(np.float32)
    if d.category == dt.COMPLEX:
        step = (end - start) / (steps - 1)
        i = np.arange(steps)
        return np.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))
    values = _halfway(start, end, steps, (float(end) - float(start)) / (steps - 1))
    return np.trunc(values) if d.category == dt.INT else values


def logspace_values(start, end, steps: int, base, d: dt.dtype) -> np.ndarray:
    """base ** exponents, the exponents spaced as linspace spaces its values."""
    if d.category == dt.COMPLEX:
        step = (end - start) / (steps - 1)
        i = np.arange(steps)
        return np.power(complex(base), np.where(i < steps // 2, start + step * i,
                                                end - step * (steps - 1 - i)))
    if d.category == dt.INT:
        base = float(np.float32(base))             # PyTorch raises a float base for integers
        step = float(end - start) / (steps - 1)
    else:                                          # the difference is taken in the dtype
        step = float(np.subtract(np.asarray(end, d.np), np.asarray(start, d.np))) / (steps - 1)
    values = np.power(float(base), _halfway(start, end, steps, step, fused=False))
    if d.category == dt.INT:
        return np.trunc(values)
    return values.astype(np.float32) if d.itemsize == 2 else values   # Half(float(double))


def single_power(start, base, d: dt.dtype):
    """steps == 1: base ** start, filled with the dtype's overflow check."""
    if d.category == dt.COMPLEX or isinstance(start, complex):
        return converted(complex(base) ** complex(start), d)
    return converted(float(np.power(float(base), float(start))), d)
