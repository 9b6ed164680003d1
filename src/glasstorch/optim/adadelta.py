"""Adadelta: step sizes from running averages of squared gradients and squared updates."""
from __future__ import annotations

from .optimizer import (LIKE_PARAM, SCALAR, Optimizer, _as_real, _check_lr, _check_nonneg,
                        _closure_loss, _scalar_state, _to_scalar, _use_grad, _zeros_like)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """torch.optim.Adadelta."""

    def __init__(self, params, lr=1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach=None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonneg(eps, "epsilon value")
        _check_nonneg(weight_decay, "weight_decay value")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    _state_spec = (("step", SCALAR), ("square_avg", LIKE_PARAM), ("acc_delta", LIKE_PARAM))

    # param-group options older state dicts may lack (filled in by __setstate__)
    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    @_use_grad
    def step(self, closure=None):
        """One update per parameter with a gradient."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            rho, eps, wd = group["rho"], group["eps"], group["weight_decay"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state()
                    state["square_avg"] = _zeros_like(p)
                    state["acc_delta"] = _zeros_like(p)
                state["step"] += 1
                grad = -p.grad if group["maximize"] else p.grad
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                param, grad, square_avg, acc_delta = _as_real(p, grad, state["square_avg"],
                                                              state["acc_delta"])
                square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                param.add_(delta, alpha=-lr)
        return loss
