"""Muon: momentum SGD for matrices whose update is orthogonalized. The (Nesterov) momentum
of a 2-D gradient is replaced by the nearest semi-orthogonal matrix, approximated by a few
quintic Newton-Schulz iterations run in bfloat16, so every direction of the update moves by
about the same amount; the step is scaled by the matrix's aspect ratio."""
from __future__ import annotations

import math

from ..core import dtype as dt
from .optimizer import (F, Optimizer, _check_lr, _closure_loss, _to_scalar, _use_grad,
                        _zeros_like)

__all__ = ["Muon"]

_ADJUSTMENTS = (None, "original", "match_rms_adamw")


def _orthogonalize(grad, coefficients, steps: int, eps: float):
    """Newton-Schulz iterations X <- aX + (bG + cG^2)X with G = XX^T, from X = grad/|grad|
    (transposed when tall, so G is the smaller Gram matrix)."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.dim() != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    x = grad.to(dt.bfloat16)
    tall = grad.size(0) > grad.size(1)
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(steps):
        gram = x @ x.T
        x = F["addmm"](x, F["addmm"](gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.T if tall else x


def _adjusted_lr(lr: float, adjust_lr_fn, shape) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn in (None, "original"):
        return lr * math.sqrt(max(1, rows / cols))
    return lr * 0.2 * math.sqrt(max(rows, cols))        # "match_rms_adamw"


class Muon(Optimizer):
    """torch.optim.Muon (2-D parameters only)."""

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients=(3.4445, -4.775, 2.0315), eps: float = 1e-7,
                 ns_steps: int = 5, adjust_lr_fn=None) -> None:
        _check_lr(lr)
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn not in _ADJUSTMENTS:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                        nesterov=nesterov, ns_coefficients=ns_coefficients, eps=eps,
                        ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    @_use_grad
    def step(self, closure=None):
        """One update per parameter with a gradient."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, momentum = _to_scalar(group["lr"]), group["momentum"]
            for p in self._params_with_grad(group):
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                if p.grad.is_sparse:
                    raise RuntimeError("Muon does not support sparse gradients")
                state = self.state[p]
                if len(state) == 0:
                    state["momentum_buffer"] = _zeros_like(p.grad)
                buffer = state["momentum_buffer"]
                buffer.lerp_(p.grad, 1 - momentum)
                update = p.grad.lerp(buffer, momentum) if group["nesterov"] else buffer
                update = _orthogonalize(update, group["ns_coefficients"], group["ns_steps"],
                                        group["eps"])
                p.mul_(1 - lr * group["weight_decay"])
                p.add_(update.to(p.dtype), alpha=-_adjusted_lr(lr, group["adjust_lr_fn"],
                                                                p.shape))
        return loss
