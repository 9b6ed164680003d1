"""Adamax: Adam with the infinity norm (a running max) in place of the second moment."""
from __future__ import annotations

from .optimizer import (LIKE_PARAM, SCALAR, F, Optimizer, _as_real, _check_betas, _check_lr,
                        _check_nonneg, _closure_loss, _scalar_state, _to_scalar, _use_grad,
                        _zeros_like)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """torch.optim.Adamax."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_lr(lr)
        _check_nonneg(eps, "epsilon value")
        _check_betas(betas)
        _check_nonneg(weight_decay, "weight_decay value")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    _state_spec = (("step", SCALAR), ("exp_avg", LIKE_PARAM), ("exp_inf", LIKE_PARAM))

    # param-group options older state dicts may lack (filled in by __setstate__)
    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    @_use_grad
    def step(self, closure=None):
        """One update per parameter with a gradient."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            eps, wd = group["eps"], group["weight_decay"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state()
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_inf"] = _zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                state["step"] += 1
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                param, grad, exp_avg, exp_inf = _as_real(p, grad, state["exp_avg"],
                                                         state["exp_inf"])
                exp_avg.lerp_(grad, 1 - beta1)
                F["maximum"](exp_inf.mul_(beta2), grad.abs().add_(eps), out=exp_inf)
                clr = lr / (1 - beta1 ** state["step"].item())
                param.addcdiv_(exp_avg, exp_inf, value=-clr)
        return loss
