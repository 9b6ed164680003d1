"""Kernels of GradScaler's two ATen ops, `_amp_foreach_non_finite_check_and_unscale_` and
`_amp_update_scale_`: NumPy code that also runs on CuPy arrays (CUDA tensors)."""
from __future__ import annotations

from ...core import dtype as dt
from ..arrays import module_of
from .pointwise import not_implemented


def _check_scalar(name: str, t, dtypes: tuple, kind: str) -> None:
    if t.numel() != 1:
        raise RuntimeError(f"{name} must be a 1-element tensor.")
    if t.dtype not in dtypes:
        raise RuntimeError(f"{name} must be {kind} tensor.")


def check_unscale(grads, found_inf, inv_scale) -> None:
    """PyTorch's argument checks of _amp_foreach_non_finite_check_and_unscale_ (also the
    Meta kernel's whole work)."""
    _check_scalar("found_inf", found_inf, (dt.float32,), "a float")
    _check_scalar("inv_scale", inv_scale, (dt.float32,), "a float")
    for g in grads:
        if g.dtype.category != dt.FLOAT:
            raise not_implemented("_amp_foreach_non_finite_check_and_unscale_cpu", g.dtype)


def check_update(scale, growth_tracker, found_inf) -> None:
    """PyTorch's argument checks of _amp_update_scale_."""
    _check_scalar("current_scale", scale, (dt.float32,), "a float")
    _check_scalar("growth_tracker", growth_tracker, (dt.int32,), "an int")
    _check_scalar("found_inf", found_inf, (dt.float32,), "a float")


def non_finite_check_and_unscale(grads, found_inf, inv_scale) -> None:
    """Multiply every gradient by inv_scale in place; set found_inf to 1 when any gradient
    holds an inf or a NaN (checked before unscaling, as PyTorch's kernel does)."""
    check_unscale(grads, found_inf, inv_scale)
    scale = inv_scale._array().reshape(())
    for g in grads:
        a = g._array()
        if not a.size:
            continue
        if not module_of(a).isfinite(a).all():
            found_inf._array()[...] = 1.0
        # in float32 at least, rounded once (float16/bfloat16 gradients)
        module_of(a).multiply(a, scale, out=a, casting="unsafe")


def update_scale(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                 growth_interval):
    """After an inf or NaN, back the scale off and restart the count of clean steps; after
    `growth_interval` clean ones, grow it (unless that overflows) and restart the count."""
    check_update(scale, growth_tracker, found_inf)
    s, tracker = scale._array().reshape(-1), growth_tracker._array().reshape(-1)
    if float(found_inf._array().reshape(-1)[0]):
        s *= s.dtype.type(backoff_factor)
        tracker[0] = 0
        return scale
    clean = int(tracker[0]) + 1
    if clean == growth_interval:
        grown = s * s.dtype.type(growth_factor)
        if module_of(grown).isfinite(grown).all():
            s[...] = grown
        clean = 0
    tracker[0] = clean
    return scale
