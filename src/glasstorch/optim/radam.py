"""RAdam: Adam whose adaptive term is switched on once its variance is tractable."""
from __future__ import annotations

from .optimizer import (LIKE_PARAM, SCALAR, Optimizer, _as_real, _check_betas, _check_lr,
                        _check_nonneg, _closure_loss, _scalar_state, _to_scalar, _use_grad,
                        _zeros_like)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """torch.optim.RAdam: plain momentum SGD until rho_t exceeds 5, then rectified Adam."""

    _supports_differentiable = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach=None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        _check_nonneg(eps, "epsilon value")
        _check_betas(betas)
        _check_nonneg(weight_decay, "weight_decay value")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    _state_spec = (("step", SCALAR), ("exp_avg", LIKE_PARAM), ("exp_avg_sq", LIKE_PARAM))

    # param-group options older state dicts may lack (filled in by __setstate__)
    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("decoupled_weight_decay", False), ("capturable", False))

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
                    state["exp_avg_sq"] = _zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                param, grad, exp_avg, exp_avg_sq = _as_real(p, grad, state["exp_avg"],
                                                            state["exp_avg_sq"])
                state["step"] += 1
                step = state["step"].item()
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        param.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(param, alpha=wd)
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                corrected = exp_avg / bias_correction1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    root = exp_avg_sq.sqrt()
                    # In place unless a graph is being built through the update.
                    root = root.add(eps) if group["differentiable"] else root.add_(eps)
                    adaptive = (bias_correction2 ** 0.5) / root
                    param.add_(corrected * lr * adaptive * rect, alpha=-1.0)
                else:
                    param.add_(corrected * lr, alpha=-1.0)
        return loss
