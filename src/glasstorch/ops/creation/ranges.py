"""Range factories: arange, range, linspace, logspace, eye.

Values are computed on the host with NumPy following PyTorch's arithmetic (its accumulate
types, truncations and halfway split: backends/cpu/ranges.py), then written into a new tensor or through `out=`'s
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
from .factories import OPTIONS, _finish, backend_call, factory_op
from ..registry import export, warn_user
from ...backends.cpu.ranges import (CONVERT_NAME, _number, accumulate_args, accumulated,
    converted, linspace_values, logspace_values, single_power, write)

_INT64_MAX = (1 << 63) - 1


def check_out_dtype(dtype, out: Tensor) -> None:
    if dtype is not None and dtype is not out.dtype:
        raise RuntimeError(f"dtype {dtype.cname} does not match dtype of out parameter "
                           f"({out.dtype.cname})")


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
    if dtype is dt.bool or dtype.category == dt.COMPLEX or dtype.family is not None:
        raise NotImplementedError(f'"{fn}" not implemented for \'{dtype.cname}\'')
    if out is not None:
        check_out_dtype(dtype, out)
    return dtype


_SMALL_INT = 1 << 62


def _int64_range(start, end, step, dtype, device):
    """A new CPU int64 arange of Python ints (nanoGPT's `arange(0, t, dtype=long,
    device=device)` every step) without the general checks' conversions: None where the
    call is another kind (or its bounds could overflow, or its step is not positive)."""
    if end is None:
        start, end = 0, start
    if not (start.__class__ is int and end.__class__ is int and step.__class__ is int
            and (dtype is None or dtype is dt.int64) and 0 < step
            and -_SMALL_INT < start <= end < _SMALL_INT):
        return None
    device = as_device(device)
    if device.type != "cpu":
        return None
    t = Tensor._empty(((end - start + step - 1) // step,), dt.int64, device)
    np.copyto(t._array(), np.arange(start, end, step, dtype=np.int64))
    return t


def _arange(start, end, step, out, dtype, device) -> Tensor:
    """arange's values in a new tensor on `device`, or in `out` (end None: start is the end)."""
    if out is None and (t := _int64_range(start, end, step, dtype, device)) is not None:
        return t
    if end is None:
        start, end = 0, start
        names = (("start", 1), ("end", 1), ("step", 3))
    else:
        names = (("start", 1), ("end", 2), ("step", 3))
    start, end, step = _real_args("arange", names, (start, end, step))
    d = _step_dtype("arange_cpu", dtype, out, (start, end, step))
    _check_bounds(float(start), float(end), float(step))
    xstart, xend, xstep = accumulate_args(d, start, end, step)
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
    return store_values(t, lambda: accumulated(xstart, xstep, n, d), bump=bump)


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
    if end is None:
        op, args = arange_op, (start,)
    elif step.__class__ is int and step == 1:
        op, args = arange_start_op, (start, end)
    else:
        op, args = arange_start_step_op, (start, end, step)
    return _finish(backend_call(op, device, args + (dtype, layout), (pin_memory,)),
                   requires_grad)


def _range(start, end, step, out, dtype, device) -> Tensor:
    """torch.range's values (end included) in a new tensor on `device`, or in `out`."""
    start, end, step = _real_args("range", (("start", 1), ("end", 2), ("step", 3)),
                                  (start, end, step))
    if dtype is None:
        dtype = out.dtype if out is not None else dt.get_default_dtype()
    d = _step_dtype("range", dtype, out, ())
    xstart, xend, xstep = accumulate_args(d, start, end, step)
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
    return store_values(t, lambda: accumulated(xstart, xstep, size, d), bump=bump)


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
    t = backend_call(range_op, device, (start, end, step, dtype, layout), (pin_memory,))
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
                           f"{CONVERT_NAME[dt.default_complex_dtype()]} can't be safely cast "
                           f"to passed dtype {dtype.cname}")
    if dtype is dt.bool:
        raise NotImplementedError(f'"{fn}" not implemented for \'Bool\'')
    if out is not None:
        check_out_dtype(dtype, out)
    return dtype


def _linspace(start, end, steps, out, dtype, device) -> Tensor:
    start, end = _endpoint("linspace", "start", 1, start), _endpoint("linspace", "end", 2, end)
    steps = _steps("linspace", steps)
    d = _spaced_dtype("linspace", dtype, out, start, end)
    if steps:
        start = converted(start, d)
        end = converted(end, d) if steps > 1 else end
    t, bump = _new_or_out((steps,), d, device, out)
    return store_values(t, lambda: linspace_values(start, end, steps, d), bump=bump)


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
    t = backend_call(linspace_op, device, (start, end, steps, dtype, layout), (pin_memory,))
    return _finish(t, requires_grad)


def _logspace(start, end, steps, base, out, dtype, device) -> Tensor:
    start, end = _endpoint("logspace", "start", 1, start), _endpoint("logspace", "end", 2, end)
    steps = _steps("logspace", steps)
    base = _number("logspace", "base", 4, base)
    d = _spaced_dtype("logspace", dtype, out, start, end)
    if steps == 1:
        single = single_power(start, base, d)
    elif steps > 1:
        start, end = converted(start, d), converted(end, d)
    t, bump = _new_or_out((steps,), d, device, out)
    return store_values(t, lambda: np.asarray(single) if steps == 1 else
                        logspace_values(start, end, steps, base, d), bump=bump)


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
    t = backend_call(logspace_op, device, (start, end, steps, base, dtype, layout),
                     (pin_memory,))
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
        t = backend_call(eye_op, device, (n, dtype, layout), (pin_memory,))
    else:
        t = backend_call(eye_m_op, device, (n, m, dtype, layout), (pin_memory,))
    return _finish(t, requires_grad)


for _f in (arange, linspace, logspace, eye):
    export(_f.__name__, _f)
export("range", range)
