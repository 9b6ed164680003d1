"""assert_close: compare tensors, numbers, and sequences/mappings of them, with PyTorch's
default tolerances per dtype and PyTorch's failure messages.

A pair of tensors must agree in shape, device and dtype (layout and strides on request),
then `isclose(actual, expected, rtol, atol, equal_nan)` must hold everywhere. The message
counts the mismatches and gives the greatest absolute and relative differences among them,
with their index; one-element comparisons (numbers, 0-dim tensors) read as "Scalars".
"""
from __future__ import annotations

import cmath
import math
import numbers
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from ..core import dtype as dt
from ..core.tensor import Tensor
from ..ops.creation.factories import as_tensor

__all__ = ["assert_close", "assert_allclose"]

# (rtol, atol) by dtype; any other dtype compares exactly.
_TOLERANCES = {dt.float16: (1e-3, 1e-5), dt.bfloat16: (1.6e-2, 1e-5),
               dt.float32: (1.3e-6, 1e-5), dt.float64: (1e-7, 1e-7),
               dt.complex64: (1.3e-6, 1e-5), dt.complex128: (1e-7, 1e-7)}


class _Mismatch(AssertionError):
    """A failed comparison, with the path of the item it happened at."""


def _tolerances(*dtypes, rtol, atol):
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {'rtol' if rtol is None else 'atol'}.")
    if rtol is not None:
        return rtol, atol
    pairs = [_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _attribute_mismatch(name, actual, expected):
    raise _Mismatch(f"The values for attribute '{name}' do not match: {actual} != {expected}.")


def _tolerance_note(tol, exact: bool) -> str:
    return "" if exact else f" (up to {tol} allowed)"


def _scalar_message(actual, expected, rtol, atol, identifier="Scalars") -> str:
    exact = rtol == 0 and atol == 0
    abs_diff = abs(actual - expected)
    rel_diff = abs_diff / abs(expected) if expected != 0 else (
        math.inf if abs_diff != 0 else math.nan)
    return (f"{identifier} are not {'equal' if exact else 'close'}!\n\n"
            f"Expected {expected} but got {actual}.\n"
            f"Absolute difference: {abs_diff}{_tolerance_note(atol, exact)}\n"
            f"Relative difference: {rel_diff}{_tolerance_note(rtol, exact)}")


def _close(actual: np.ndarray, expected: np.ndarray, rtol, atol, equal_nan) -> np.ndarray:
    """isclose elementwise: |a - e| <= atol + rtol * |e|, equal infinities, NaN by choice."""
    with np.errstate(invalid="ignore", over="ignore"):
        matches = actual == expected
        if rtol or atol:
            finite = np.isfinite(actual) & np.isfinite(expected)
            a, e = actual.astype(np.complex128 if np.iscomplexobj(actual) else np.float64), \
                expected.astype(np.complex128 if np.iscomplexobj(expected) else np.float64)
            matches |= finite & (np.abs(a - e) <= atol + rtol * np.abs(e))
    if equal_nan:
        matches |= np.isnan(actual) & np.isnan(expected)
    return matches


def _tensor_message(actual: np.ndarray, expected: np.ndarray, matches: np.ndarray, rtol,
                    atol) -> str:
    exact = rtol == 0 and atol == 0
    n, bad = matches.size, int((~matches).sum())
    a, e = actual.reshape(-1), expected.reshape(-1)
    if a.dtype.kind in "biu":
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[matches.reshape(-1)] = 0
        rel_diff = abs_diff / np.abs(e)
        rel_diff[matches.reshape(-1)] = 0

    def greatest(diff):
        nan = np.flatnonzero(np.isnan(diff))
        flat = int(nan[0]) if nan.size else int(np.argmax(diff))
        index = tuple(int(i) for i in np.unravel_index(flat, actual.shape))
        return diff[flat].item(), index

    max_abs, abs_at = greatest(abs_diff)
    max_rel, rel_at = greatest(rel_diff)
    return (f"Tensor-likes are not {'equal' if exact else 'close'}!\n\n"
            f"Mismatched elements: {bad} / {n} ({bad / n:.1%})\n"
            f"Greatest absolute difference: {max_abs} at index {abs_at}"
            f"{_tolerance_note(atol, exact)}\n"
            f"Greatest relative difference: {max_rel} at index {rel_at}"
            f"{_tolerance_note(rtol, exact)}")


def _host(t: Tensor) -> np.ndarray:
    a = t.detach().cpu().resolve_conj().resolve_neg()    # the values, through the bits
    if a._sparse is not None:        # sparse layouts compare as their dense values
        a = a.to_dense()
    if a.dtype is dt.bfloat16:
        a = a.float()
    return np.asarray(a.numpy())


def _compare_tensors(actual, expected, *, rtol, atol, equal_nan, check_device, check_dtype,
                     check_layout, check_stride):
    if actual.shape != expected.shape:
        _attribute_mismatch("shape", actual.shape, expected.shape)
    if check_device and actual.device != expected.device:
        _attribute_mismatch("device", actual.device, expected.device)
    if check_layout and actual.layout != expected.layout:
        _attribute_mismatch("layout", actual.layout, expected.layout)
    if check_dtype and actual.dtype != expected.dtype:
        _attribute_mismatch("dtype", actual.dtype, expected.dtype)
    if check_stride and actual.stride() != expected.stride():
        _attribute_mismatch("stride()", actual.stride(), expected.stride())
    rtol, atol = _tolerances(actual.dtype, expected.dtype, rtol=rtol, atol=atol)
    if actual.dtype != expected.dtype:
        common = dt.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    a, e = _host(actual), _host(expected)
    matches = _close(a, e, rtol, atol, equal_nan)
    if matches.all():
        return
    if a.size == 1 and a.ndim == 0:
        raise _Mismatch(_scalar_message(a.item(), e.item(), rtol, atol))
    raise _Mismatch(_tensor_message(a, e, matches, rtol, atol))


def _compare_numbers(actual, expected, *, rtol, atol, equal_nan, check_dtype, **_):
    if check_dtype and type(actual) is not type(expected):
        _attribute_mismatch("type", type(actual), type(expected))
    if isinstance(actual, bool) or isinstance(expected, bool):
        if actual != expected:
            raise _Mismatch(f"Booleans mismatch: {actual} is not {expected}")
        return
    kinds = [dt.complex128 if isinstance(v, complex) else
             dt.float64 if isinstance(v, float) else dt.int64 for v in (actual, expected)]
    rtol, atol = _tolerances(*kinds, rtol=rtol, atol=atol)
    if actual == expected or (equal_nan and cmath.isnan(actual) and cmath.isnan(expected)):
        return
    finite = cmath.isfinite(actual) and cmath.isfinite(expected)
    if finite and abs(actual - expected) <= atol + rtol * abs(expected):
        return
    raise _Mismatch(_scalar_message(actual, expected, rtol, atol))


def _is_number(x) -> bool:
    return isinstance(x, numbers.Number) and not isinstance(x, Tensor)


def _compare(actual, expected, path, allow_subclasses, options):
    if isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray):
        actual, expected = as_tensor(actual), as_tensor(expected)
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        if not allow_subclasses and type(actual) is not type(expected):
            _attribute_mismatch("type", type(actual), type(expected))
        return _compare_tensors(actual, expected, **options)
    if _is_number(actual) and _is_number(expected):
        return _compare_numbers(actual, expected, **options)
    text = (str, bytes)
    if isinstance(actual, Sequence) and isinstance(expected, Sequence) and \
            not isinstance(actual, text) and not isinstance(expected, text):
        if len(actual) != len(expected):
            raise _Mismatch(f"The length of the sequences mismatch: {len(actual)} != "
                            f"{len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare_item(a, e, path + (i,), allow_subclasses, options)
        return
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            missing = sorted(set(expected) - set(actual), key=repr)
            extra = sorted(set(actual) - set(expected), key=repr)
            raise _Mismatch(f"The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {missing}\n"
                            f"Extra keys in the actual mapping: {extra}")
        for key in expected:
            _compare_item(actual[key], expected[key], path + (key,), allow_subclasses, options)
        return
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and "
                    f"{type(expected)}.")


def _compare_item(actual, expected, path, allow_subclasses, options):
    """Compare a nested item, adding where it sits to a failure's message once."""
    try:
        _compare(actual, expected, path, allow_subclasses, options)
    except _Mismatch as failure:
        if getattr(failure, "path", None) is None:
            failure.path = path
        raise


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol=None, atol=None,
                 equal_nan: bool = False, check_device: bool = True, check_dtype: bool = True,
                 check_layout: bool = True, check_stride: bool = False, msg=None) -> None:
    """Raise AssertionError unless actual and expected are close (see the module)."""
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                   check_dtype=check_dtype, check_layout=check_layout,
                   check_stride=check_stride)
    try:
        _compare_item(actual, expected, (), allow_subclasses, options)
    except _Mismatch as failure:
        message = str(failure)
        path = getattr(failure, "path", ())
        if callable(msg):
            message = msg(message)
        elif msg is not None:
            message = msg
        elif path:
            message += "\n\nThe failure occurred for item " + "".join(f"[{p!r}]" for p in path)
        raise AssertionError(message) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg="") -> None:
    """Deprecated: assert_close with numbers and sequences turned into tensors like actual."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead.", FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = as_tensor(actual)
    if not isinstance(expected, Tensor):
        expected = as_tensor(expected, dtype=actual.dtype)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False, msg=msg or None)
