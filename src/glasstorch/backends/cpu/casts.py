"""The conversions NumPy (with ml_dtypes) makes differently from PyTorch, done PyTorch's way.

- To float8_e4m3fn, PyTorch saturates: anything beyond the largest finite value, infinity
  included, becomes +-448; NaN becomes the NaN pattern 0x7F with the input's sign.
- To float8_e5m2, NaN becomes 0x7F with the input's sign (ml_dtypes keeps other mantissa
  bits).
- To float8_e8m0fnu (a bare exponent), the sign is ignored and the float32 exponent is
  rounded to nearest even on its guard, round and sticky bits; zero stays the smallest
  value, NaN and infinity become NaN (0xFF).
- Every float8 format converts from float32: other sources are made float32 first, as
  PyTorch's casts go through `float`.
- complex32 has no NumPy type: its arrays are pairs of float16 (`dt.COMPLEX32_NP`) and go
  through complex128 on the way in and complex64 on the way out.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ...core import dtype as dt

C32 = dt.COMPLEX32_NP
_E4M3FN = np.dtype(ml_dtypes.float8_e4m3fn)
_E5M2 = np.dtype(ml_dtypes.float8_e5m2)
_E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)
FLOAT8 = frozenset(d.np for d in dt.FLOAT8_DTYPES)
SPECIAL = FLOAT8 | {C32}     # NumPy dtypes whose conversions go through `cast_into`


def _nan_pattern(r: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Set every NaN of the float8 result `r` of `x` to 0x7F with x's sign."""
    nan = np.isnan(x)
    if nan.any():
        bits = r.view(np.uint8)
        bits[nan] = np.where(np.signbit(x[nan]), 0xFF, 0x7F).astype(np.uint8)
    return r


def _to_e4m3fn(x: np.ndarray) -> np.ndarray:
    return _nan_pattern(np.clip(x, -448.0, 448.0).astype(_E4M3FN), x)


def _to_e5m2(x: np.ndarray) -> np.ndarray:
    return _nan_pattern(x.astype(_E5M2), x)


def _to_e8m0(x: np.ndarray) -> np.ndarray:
    bits = x.view(np.uint32)
    exponent = (bits >> 23) & 0xFF
    guard = (bits & 0x400000) != 0
    round_or_sticky = (bits & 0x3FFFFF) != 0
    up = guard & (round_or_sticky | (exponent > 0))   # the implied bit is the lsb
    out = np.where(exponent == 0xFF, 0xFF, exponent + up).astype(np.uint8)
    return out.view(_E8M0)


_FROM_FLOAT32 = {_E4M3FN: _to_e4m3fn, _E5M2: _to_e5m2, _E8M0: _to_e8m0}


_RAW = ("bits", "subbyte", "quantized")      # families whose bytes PyTorch never converts


def check_conversion(to: dt.dtype, from_: dt.dtype) -> None:
    """Refuse a conversion PyTorch's copy has no loop for: to or from the shell dtypes (bits8,
    int4, qint8, ...) and float4_e2m1fn_x2; copies within one dtype are byte copies."""
    if to is from_:
        return
    for d in (from_, to):
        if d.family in _RAW:
            raise NotImplementedError(f'"copy_" not implemented for \'{d.cname}\'')
        if d is dt.float4_e2m1fn_x2:
            raise NotImplementedError(f'"copy_kernel" not implemented for \'{d.cname}\'')


def cast_into(dst: np.ndarray, src) -> None:
    """dst[...] = src, converted as PyTorch converts (see the module docstring)."""
    src = dt.readable_array(np.asarray(src))
    d = dst.dtype
    if d == C32:
        values = np.asarray(src.astype(np.complex128) if src.dtype.kind != "c" else src)
        np.copyto(dst["real"], values.real, casting="unsafe")
        np.copyto(dst["imag"], values.imag, casting="unsafe")
        return
    if d in FLOAT8:
        x = np.ascontiguousarray(src.real if src.dtype.kind == "c" else src, np.float32)
        convert = _FROM_FLOAT32.get(d)
        src = convert(x) if convert is not None else x.astype(d)
    np.copyto(dst, src, casting="unsafe")
