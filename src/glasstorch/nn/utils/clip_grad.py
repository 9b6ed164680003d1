"""Gradient clipping: the total norm of many gradients, and scaling them under a bound.

The total norm is the norm of the per-tensor norms, as if every gradient were one vector;
clip_grad_norm_ returns it measured before clipping, as torch does. With foreach=None or
True (PyTorch's choice on the CPU too) the per-tensor norms and the scaling are one foreach
call each (`_foreach_norm`, `_foreach_mul_`) instead of one op per gradient; foreach=False
keeps the per-tensor ops. Both give the same values.
"""
from __future__ import annotations

import types
import warnings

from ...autograd.grad_mode import no_grad
from ...core.tensor import Tensor
from ...ops.pointwise.foreach import _foreach_mul_, _foreach_norm

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _as_list(tensors) -> list:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The norm_type-norm of the tensors viewed as one vector ('inf' for the max)."""
    from ...linalg import vector_norm
    from ...ops.creation.factories import tensor as make_tensor
    from ...ops.shape.joining import stack
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return make_tensor(0.0)
    with no_grad():
        device = tensors[0].device
        if foreach is False:
            norms = [vector_norm(t, norm_type) for t in tensors]
        else:
            norms = _foreach_norm(tensors, norm_type)
        norms = [n if n.device == device else n.to(device) for n in norms]
        total = vector_norm(stack(norms), norm_type)
        if error_if_nonfinite and bool(total.isnan() | total.isinf()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                               "`parameters` is non-finite, so it cannot be clipped. To "
                               "disable this error and scale the gradients by the non-finite "
                               "norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor,
                          foreach=None) -> None:
    """Scale every grad by min(max_norm / (total_norm + 1e-6), 1), in place."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        if foreach is False:
            for g in grads:
                g.mul_(coef.to(g.device))
            return
        for device in dict.fromkeys(g.device for g in grads):
            _foreach_mul_([g for g in grads if g.device == device], coef.to(device))


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Clip the gradients' total norm to max_norm in place; returns the total norm."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will "
                          "occur.", stacklevel=2)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Deprecated spelling of clip_grad_norm_."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient into [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
