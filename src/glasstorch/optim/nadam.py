"""NAdam: Adam with Nesterov momentum and a decaying momentum schedule (mu_t)."""
from __future__ import annotations

from .optimizer import (LIKE_PARAM, SCALAR, Optimizer, _as_real, _check_betas, _check_lr,
                        _check_nonneg, _closure_loss, _scalar_state, _to_scalar, _use_grad,
                        _zeros_like)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """torch.optim.NAdam. `mu_product` is a 0-dim float32 tensor, so it rounds as torch's."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        _check_nonneg(eps, "epsilon value")
        _check_betas(betas)
        _check_nonneg(weight_decay, "weight_decay value")
        _check_nonneg(momentum_decay, "momentum_decay value")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    _state_spec = (("step", SCALAR), ("mu_product", SCALAR), ("exp_avg", LIKE_PARAM),
                   ("exp_avg_sq", LIKE_PARAM))

    # param-group options older state dicts may lack (filled in by __setstate__)
    _group_defaults = (("maximize", False), ("foreach", None), ("capturable", False),
                       ("differentiable", False), ("decoupled_weight_decay", False))

    @_use_grad
    def step(self, closure=None):
        """One update per parameter with a gradient."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            eps, wd, psi = group["eps"], group["weight_decay"], group["momentum_decay"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state()
                    state["mu_product"] = _scalar_state(1.0)
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                param, grad, exp_avg, exp_avg_sq = _as_real(p, grad, state["exp_avg"],
                                                            state["exp_avg_sq"])
                state["step"] += 1
                step = state["step"].item()
                bias_correction2 = 1 - beta2 ** step
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        param.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(param, alpha=wd)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * psi)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * psi)))
                state["mu_product"] *= mu
                mu_product = state["mu_product"].item()
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
                param.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
                param.addcdiv_(exp_avg, denom,
                           value=-lr * mu_next / (1.0 - mu_product * mu_next))
        return loss
