"""Range factories: arange, range, linspace, logspace, eye.

Values are computed on the host with NumPy following PyTorch's arithmetic (its accumulate
types, truncations and halfway split), then written into a new tensor or through `out=`'s
strided view; on 'meta' only shapes are made. Without `out=` each is a factory operator
(`aten::arange.start_step`, `aten::linspace`, `aten::eye.m`, ...) that a dispatch mode sees.
Sizes and errors are PyTorch's:

- arange: all-integer arguments give int64, any float gives the default dtype; the size is
  ceil((end - start) / step) in double (exact integer arithmetic for int64); integer dtypes
  truncate start and step, float16/bfloat16 accumulate in float32, float32/float64 in double.
- linspace/logspace: start and end are first converted to the dtype (with PyTorch's overflow
  check), the first half counts up from start and the second half down from end. Float
  results are computed in double and rounded once, so they may differ from PyTorch's
  vectorised float32 kernel in the last bit; integer results are exact.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from ...core import dtype as dt
from ...core.device import as_device
from ...core.tensor import Tensor
from .factories import BACKEND_SELECT, OPTIONS, _finish, factory_op
from ..registry import export, warn_user

# PyTorch's names for dtypes in "value cannot be converted to type X without overflow".
_CONVERT_NAME = {dt.uint8: "uint8_t", dt.int8: "int8_t", dt.int16: "int16_t", dt.int32: "int",
                 dt.int64: "int64_t", dt.float16: "c10::Half", dt.bfloat16: "c10::BFloat16",
                 dt.float32: "float", dt.float64: "double", dt.bool: "bool",
                 dt.complex64: "c10::complex<float>", dt.complex128: "c10::complex<double>"}
_INT64_MAX = (1 << 63) - 1
# (lowest, max) of every real dtype, as Python numbers.
LIMITS = {d: (0, 1) if d is dt.bool else
          (dt.iinfo(d).min, dt.iinfo(d).max) if d.category == dt.INT else
          (dt.finfo(d).min, dt.finfo(d).max) for d in dt.ALL_DTYPES if d.category != dt.COMPLEX}


def check_out_dtype(dtype, out: Tensor) -> None:
    if dtype is not None and dtype is not out.dtype:
        raise RuntimeError(f"dtype {dtype.cname} does not match dtype of out parameter "
                           f"({out.dtype.cname})")


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
    raise RuntimeError(f"value cannot be converted to type {_CONVERT_NAME[d]} without overflow")


def write(t: Tensor, values) -> None:
    """Cast NumPy values into a CPU tensor through its strided view (only its elements).

    NumPy's overflow/invalid-cast RuntimeWarnings are silenced for glasstorch modules by the
    CPU backend's warning filter, so no np.errstate is needed on this hot path."""
    np.copyto(t._array(), values, casting="unsafe")


def store_values(t: Tensor, make_values, *, bump: bool) -> Tensor:
    """Write host values (from `make_values()`, skipped on 'meta') into t; `bump` for a
    user's out= tensor, whose version counter must see the write."""
    if t.device.type == "meta" or t.numel() == 0:
        return t
    values = make_values()
    if t.device.type == "cpu":
        write(t, values)
        if bump:
            t._bump_version()
    else:
        host = Tensor._empty(t._shape, t.dtype)
        write(host, values)
        t.copy_(host)
    return t


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


def _new_or_out(shape, d, device, out) -> tuple:
    """(tensor to write, is it the user's out=?); out is resized without a warning."""
    if out is None:
        return Tensor._empty(shape, d, as_device(device)), False
    if out._shape != shape:
        out.resize_(shape)
    return out, True


def _check_bounds(start, end, step) -> None:
    """PyTorch's argument checks, made in double."""
    if not (step > 0 or step < 0):
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {fmt(start)} -> {fmt(end)}")
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")


def fmt(x) -> str:
    """A number as C++ streams print it (PyTorch's messages): 2, 0.5, 1e+20, nan."""
    return str(x) if isinstance(x, int) else format(x, "g")


def _real_args(fn: str, names, values) -> tuple:
    """Numbers from (name, position) and values; complex values are refused."""
    values = tuple(_number(fn, name, pos, v) for (name, pos), v in zip(names, values))
    if any(isinstance(v, complex) for v in values):
        raise RuntimeError("value cannot be converted to type double without overflow")
    return values


def _step_dtype(fn: str, dtype, out, values) -> dt.dtype:
    """The result dtype: given, else out's, else int64 for all-integer arguments."""
    if dtype is None:
        dtype = out.dtype if out is not None else (
            dt.get_default_dtype() if any(isinstance(v, float) for v in values) else dt.int64)
    if dtype is dt.bool or dtype.category == dt.COMPLEX:
        raise NotImplementedError(f'"{fn}" not implemented for \'{dtype.cname}\'')
    if out is not None:
        check_out_dtype(dtype, out)
    return dtype


def fma(a, b, c):
    """a * b + c rounded once to double: PyTorch's CPU kernels are built with fused
    multiply-add, which decides where integer results truncate. Emulated in x87 extended
    precision where NumPy has it (products of a double and an index below 2**11 are exact
    there); elsewhere a plain multiply-add."""
    if _EXTENDED:
        return (np.asarray(a, np.longdouble) * b + c).astype(np.float64)
    return a * b + c


_EXTENDED = np.finfo(np.longdouble).nmant >= 63


def _accumulated(start, step, n: int, d: dt.dtype) -> np.ndarray:
    """start + step * i for i < n in PyTorch's accumulate type for `d`."""
    if d.category == dt.INT:
        return np.arange(n, dtype=np.int64) * np.int64(step) + np.int64(start)
    i = np.arange(n, dtype=np.float64)
    if d is dt.float16 or d is dt.bfloat16:     # float accumulation (exact products in double)
        return (float(np.float32(step)) * i + float(np.float32(start))).astype(np.float32)
    return fma(step, i, start)


def _accumulate_args(d: dt.dtype, start, end, step) -> tuple:
    """start, end, step converted to the accumulate type (int64, float32 or double)."""
    if d.category == dt.INT:
        return tuple(converted(v, dt.int64) for v in (start, end, step))
    if d is dt.float16 or d is dt.bfloat16:
        return tuple(float(np.float32(v)) for v in (start, end, step))
    return tuple(float(v) for v in (start, end, step))


def _arange(start, end, step, out, dtype, device) -> Tensor:
    """arange's values in a new tensor on `device`, or in `out` (end None: start is the end)."""
    if end is None:
        start, end = 0, start
        names = (("start", 1), ("end", 1), ("step", 3))
    else:
        names = (("start", 1), ("end", 2), ("step", 3))
    start, end, step = _real_args("arange", names, (start, end, step))
    d = _step_dtype("arange", dtype, out, (start, end, step))
    _check_bounds(float(start), float(end), float(step))
    xstart, xend, xstep = _accumulate_args(d, start, end, step)
    if d is dt.int64:
        if xstep == 0:
            raise ValueError("step must be nonzero")
        num = xend - xstart + xstep - (1 if xstep > 0 else -1)
        size = float(abs(num) // abs(xstep))        # the quotient is never negative here
    else:
        ratio = (float(end) - float(start)) / float(step)
        size = math.ceil(ratio) if math.isfinite(ratio) else ratio
    if not 0 <= size <= 2.0 ** 63:
        raise RuntimeError("invalid size, possible overflow?")
    n = int(size)
    if out is not None and out.numel() not in (0, n):
        warn_user(f"The number of elements in the out tensor of shape {list(out._shape)} is "
                  f"{out.numel()} which does not match the computed number of elements {n}. "
                  "Note that this may occur as a result of rounding error. The out tensor will"
                  f" be resized to a tensor of shape ({n},).")
    t, bump = _new_or_out((n,), d, device, out)
    return store_values(t, lambda: _accumulated(xstart, xstep, n, d), bump=bump)


arange_op = factory_op(f"arange(Scalar end, *, {OPTIONS}) -> Tensor",
                       lambda end, dtype=None, layout=None, device=None, pin_memory=None:
                       _arange(end, None, 1, None, dtype, device))
arange_start_op = factory_op(
    f"arange.start(Scalar start, Scalar end, *, {OPTIONS}) -> Tensor",
    lambda start, end, dtype=None, layout=None, device=None, pin_memory=None:
    _arange(start, end, 1, None, dtype, device))
arange_start_step_op = factory_op(
    f"arange.start_step(Scalar start, Scalar end, Scalar step=1, *, {OPTIONS}) -> Tensor",
    lambda start, end, step=1, dtype=None, layout=None, device=None, pin_memory=None:
    _arange(start, end, step, None, dtype, device))


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False, pin_memory=False):
    """Values from start (inclusive) to end (exclusive) in steps of `step`.

    >>> import glasstorch as torch
    >>> torch.arange(5)
    tensor([0, 1, 2, 3, 4])
    >>> torch.arange(1, 2.5, 0.5)
    tensor([1.0000, 1.5000, 2.0000])
    """
    if out is not None:
        return _finish(_arange(start, end, step, out, dtype, device), requires_grad)
    device = as_device(device)
    if end is None:
        t = arange_op.dispatch(BACKEND_SELECT, start, dtype, layout, device, pin_memory)
    elif step.__class__ is int and step == 1:
        t = arange_start_op.dispatch(BACKEND_SELECT, start, end, dtype, layout, device,
                                     pin_memory)
    else:
        t = arange_start_step_op.dispatch(BACKEND_SELECT, start, end, step, dtype, layout,
                                          device, pin_memory)
    return _finish(t, requires_grad)


def _range(start, end, step, out, dtype, device) -> Tensor:
    """torch.range's values (end included) in a new tensor on `device`, or in `out`."""
    start, end, step = _real_args("range", (("start", 1), ("end", 2), ("step", 3)),
                                  (start, end, step))
    if dtype is None:
        dtype = out.dtype if out is not None else dt.get_default_dtype()
    d = _step_dtype("range", dtype, out, ())
    xstart, xend, xstep = _accumulate_args(d, start, end, step)
    if xstep == 0:
        raise RuntimeError("step must be nonzero")
    _check_bounds(float(xstart), float(xend), float(xstep))
    if d.category == dt.INT:
        size = abs(xend - xstart) // abs(xstep) + 1            # C++ integer division
    elif d is dt.float16 or d is dt.bfloat16:
        size = float((np.float32(xend) - np.float32(xstart)) / np.float32(xstep) + 1)
    else:
        size = (xend - xstart) / xstep + 1
    if not size <= 2.0 ** 63:
        raise RuntimeError("invalid size, possible overflow?")
    size = math.trunc(size)
    t, bump = _new_or_out((size,), d, device, out)
    return store_values(t, lambda: _accumulated(xstart, xstep, size, d), bump=bump)


range_op = factory_op(
    f"range.step(Scalar start, Scalar end, Scalar step=1, *, {OPTIONS}) -> Tensor",
    lambda start, end, step=1, dtype=None, layout=None, device=None, pin_memory=None:
    _range(start, end, step, None, dtype, device))


def range(start, end, step=1, *, out=None, dtype=None, layout=None,  # noqa: A001
          device=None, requires_grad=False, pin_memory=False):
    """Deprecated: values from start to end *inclusive*; use arange (end exclusive).

    (This module's `range` is torch.range; the builtin is `builtins.range` here.)
    The dtype is the default float dtype unless given, even for integer arguments.
    """
    warn_user("torch.range is deprecated and will be removed in a future release because its "
              "behavior is inconsistent with Python's range builtin. Instead, use torch.arange,"
              " which produces values in [start, end).")
    if out is not None:
        return _finish(_range(start, end, step, out, dtype, device), requires_grad)
    t = range_op.dispatch(BACKEND_SELECT, start, end, step, dtype, layout, as_device(device),
                          pin_memory)
    return _finish(t, requires_grad)


def _endpoint(fn: str, name: str, position: int, value):
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"{fn} only supports 0-dimensional start and end tensors, but got "
                           f"{name} with {value.dim()} dimension(s).")
    return _number(fn, name, position, value)


def _steps(fn: str, steps) -> int:
    if isinstance(steps, (float, complex, Tensor)) or isinstance(steps, builtins.bool):
        raise TypeError(f"{fn}(): argument 'steps' (position 3) must be int, not "
                        f"{type(steps).__name__}")
    steps = operator.index(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return steps


def _spaced_dtype(fn: str, dtype, out, start, end) -> dt.dtype:
    """Given, else out's, else the default (complex if an end is complex) dtype."""
    if dtype is None:
        if out is not None:
            dtype = out.dtype
        elif isinstance(start, complex) or isinstance(end, complex):
            dtype = dt.default_complex_dtype()
        else:
            dtype = dt.get_default_dtype()
    elif dtype.category != dt.COMPLEX and (isinstance(start, complex) or
                                           isinstance(end, complex)):
        raise RuntimeError(f"torch.{fn}(): inferred dtype "
                           f"{_CONVERT_NAME[dt.default_complex_dtype()]} can't be safely cast "
                           f"to passed dtype {dtype.cname}")
    if dtype is dt.bool:
        raise NotImplementedError(f'"{fn}" not implemented for \'Bool\'')
    if out is not None:
        check_out_dtype(dtype, out)
    return dtype


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


def _linspace_values(start, end, steps: int, d: dt.dtype) -> np.ndarray:
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


def _linspace(start, end, steps, out, dtype, device) -> Tensor:
    start, end = _endpoint("linspace", "start", 1, start), _endpoint("linspace", "end", 2, end)
    steps = _steps("linspace", steps)
    d = _spaced_dtype("linspace", dtype, out, start, end)
    if steps:
        start = converted(start, d)
        end = converted(end, d) if steps > 1 else end
    t, bump = _new_or_out((steps,), d, device, out)
    return store_values(t, lambda: _linspace_values(start, end, steps, d), bump=bump)


linspace_op = factory_op(
    f"linspace(Scalar start, Scalar end, int steps, *, {OPTIONS}) -> Tensor",
    lambda start, end, steps, dtype=None, layout=None, device=None, pin_memory=None:
    _linspace(start, end, steps, None, dtype, device))


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    """`steps` evenly spaced values from start to end, both included.

    >>> import glasstorch as torch
    >>> torch.linspace(0, 1, 5)
    tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
    """
    if out is not None:
        return _finish(_linspace(start, end, steps, out, dtype, device), requires_grad)
    t = linspace_op.dispatch(BACKEND_SELECT, start, end, steps, dtype, layout,
                             as_device(device), pin_memory)
    return _finish(t, requires_grad)


def _logspace_values(start, end, steps: int, base, d: dt.dtype) -> np.ndarray:
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


def _single_power(start, base, d: dt.dtype):
    """steps == 1: base ** start, filled with the dtype's overflow check."""
    if d.category == dt.COMPLEX or isinstance(start, complex):
        return converted(complex(base) ** complex(start), d)
    return converted(float(np.power(float(base), float(start))), d)


def _logspace(start, end, steps, base, out, dtype, device) -> Tensor:
    start, end = _endpoint("logspace", "start", 1, start), _endpoint("logspace", "end", 2, end)
    steps = _steps("logspace", steps)
    base = _number("logspace", "base", 4, base)
    d = _spaced_dtype("logspace", dtype, out, start, end)
    if steps == 1:
        single = _single_power(start, base, d)
    elif steps > 1:
        start, end = converted(start, d), converted(end, d)
    t, bump = _new_or_out((steps,), d, device, out)
    return store_values(t, lambda: np.asarray(single) if steps == 1 else
                        _logspace_values(start, end, steps, base, d), bump=bump)


logspace_op = factory_op(
    f"logspace(Scalar start, Scalar end, int steps, float base=10.0, *, {OPTIONS}) -> Tensor",
    lambda start, end, steps, base=10.0, dtype=None, layout=None, device=None,
    pin_memory=None: _logspace(start, end, steps, base, None, dtype, device))


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    """`steps` values from base**start to base**end, evenly spaced on a log scale.

    >>> import glasstorch as torch
    >>> torch.logspace(0, 2, 3)
    tensor([  1.,  10., 100.])
    """
    if out is not None:
        return _finish(_logspace(start, end, steps, base, out, dtype, device), requires_grad)
    t = logspace_op.dispatch(BACKEND_SELECT, start, end, steps, base, dtype, layout,
                             as_device(device), pin_memory)
    return _finish(t, requires_grad)


def _dimension(name: str, position: int, value) -> int:
    if isinstance(value, (float, complex)) or isinstance(value, Tensor) and value.dim():
        raise TypeError(f"eye(): argument '{name}' (position {position}) must be int, not "
                        f"{type(value).__name__}")
    value = operator.index(value)
    if value < 0:
        raise RuntimeError(f"{name} must be greater or equal to 0, got {value}")
    return value


def _eye(n, m, out, dtype, device) -> Tensor:
    n = _dimension("n", 1, n)
    m = n if m is None else _dimension("m", 2, m)
    if dtype is None:
        dtype = out.dtype if out is not None else dt.get_default_dtype()
    elif out is not None:
        check_out_dtype(dtype, out)
    t, bump = _new_or_out((n, m), dtype, device, out)
    return store_values(t, lambda: np.eye(n, m), bump=bump)


eye_op = factory_op(f"eye(SymInt n, *, {OPTIONS}) -> Tensor",
                    lambda n, dtype=None, layout=None, device=None, pin_memory=None:
                    _eye(n, None, None, dtype, device))
eye_m_op = factory_op(f"eye.m(SymInt n, SymInt m, *, {OPTIONS}) -> Tensor",
                      lambda n, m, dtype=None, layout=None, device=None, pin_memory=None:
                      _eye(n, m, None, dtype, device))


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
        pin_memory=False):
    """An n x m matrix (m defaults to n) with ones on the diagonal and zeros elsewhere.

    >>> import glasstorch as torch
    >>> torch.eye(2, 3, dtype=torch.int64)
    tensor([[1, 0, 0],
            [0, 1, 0]])
    """
    if out is not None:
        return _finish(_eye(n, m, out, dtype, device), requires_grad)
    if m is None:
        t = eye_op.dispatch(BACKEND_SELECT, n, dtype, layout, as_device(device), pin_memory)
    else:
        t = eye_m_op.dispatch(BACKEND_SELECT, n, m, dtype, layout, as_device(device),
                              pin_memory)
    return _finish(t, requires_grad)


for _f in (arange, linspace, logspace, eye):
    export(_f.__name__, _f)
export("range", range)
