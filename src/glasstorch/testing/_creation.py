"""make_tensor: a random tensor of a dtype, shape and range, drawn as PyTorch draws it (so a
seeded test builds the same inputs under glasstorch and PyTorch)."""
from __future__ import annotations

import math
import warnings

from ..core import dtype as dt
from ..ops.creation.factories import empty
from ..ops.random.samplers import randint
from ..ops.registry import functions as _functions

__all__ = ["make_tensor"]


def _low_high(low, high, *, lowest, highest, default_low, default_high, d):
    """The user's [low, high) checked, defaulted and clamped to what dtype d holds."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and d.category >= dt.FLOAT:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}),"
                         f" but {d} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if d.category < dt.FLOAT:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False, memory_format=None):
    """A tensor of `shape` with values uniform in [low, high) (defaults by dtype: bool [0, 2),
    unsigned [0, 10), signed [-9, 10), floating and complex [-9, 9))."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    integral = dtype.category < dt.FLOAT
    if requires_grad and integral:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is dt.bool:
        low, high = _low_high(low, high, lowest=0, highest=2, default_low=0, default_high=2,
                              d=dtype)
        result = randint(low, high, shape, device=device, dtype=dtype)
    elif integral:
        info = dt.iinfo(dtype)
        low, high = _low_high(low, high, lowest=info.min,
                              highest=info.max + (1 if dtype is not dt.int64 else 0),
                              default_low=-9, default_high=10, d=dtype)
        result = randint(low, high, shape, device=device, dtype=dtype)
    elif dtype.category >= dt.FLOAT:
        info = dt.finfo(dtype)
        low, high = _low_high(low, high, lowest=info.min, highest=info.max, default_low=-9,
                              default_high=9, d=dtype)
        result = empty(shape, device=device, dtype=dtype)
        target = _functions["view_as_real"](result) if dtype.category == dt.COMPLEX else result
        real_max = dt.finfo(target.dtype).max
        if high - low >= real_max:
            target.uniform_(low / 2, high / 2).mul_(2)
        else:
            target.uniform_(low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        f"torch.testing.make_tensor().")
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if integral else dt.finfo(dtype).tiny
    if dtype.category >= dt.FLOAT:
        result.requires_grad = requires_grad
    return result
