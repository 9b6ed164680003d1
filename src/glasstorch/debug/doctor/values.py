"""Reading a tensor's values for the checks, with NumPy, without copies on the CPU."""
from __future__ import annotations

import numpy as np

from glasstorch.core.tensor import Tensor


def as_array(t: Tensor):
    """The tensor's values as a NumPy array without a copy on the CPU (None on meta)."""
    kind = t.device.type
    if kind == "meta":
        return None
    return t.numpy(force=True)


def all_finite(t: Tensor) -> bool:
    """One reduction in the common case: a finite sum means finite elements."""
    a = as_array(t)
    if a is None or a.size == 0:
        return True
    with np.errstate(all="ignore"):
        total = a.sum() if a.dtype.itemsize >= 4 else a.sum(dtype=np.float32)
        if np.isfinite(total):
            return True
        return bool(np.isfinite(a).all())       # an overflowing sum of finite values


def value_range(t: Tensor) -> str:
    """'[min, max]' of the values, NaN ignored."""
    a = as_array(t)
    if a is None or a.size == 0:
        return f"{list(t.shape)} (no values)"
    a = a.astype(np.float64)
    with np.errstate(all="ignore"):
        return f"[{np.nanmin(a):.4g}, {np.nanmax(a):.4g}]"


def grad_norm(g: Tensor) -> float:
    """The 2-norm, accumulated in float64."""
    a = as_array(g)
    if a is None:
        return 0.0
    with np.errstate(all="ignore"):
        return float(np.sqrt(np.square(a, dtype=np.float64).sum()))


def float_tensors(value):
    """The floating-point tensors of an op's output (a tensor, or a tuple or list)."""
    if isinstance(value, Tensor):
        if value.dtype.is_floating_point:
            yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            if isinstance(v, Tensor) and v.dtype.is_floating_point:
                yield v
