"""Adagrad: per-coordinate step sizes from the running sum of squared gradients."""
from __future__ import annotations

from .optimizer import (LIKE_PARAM, SCALAR, F, Optimizer, _as_real, _check_lr, _check_nonneg,
                        _closure_loss, _scalar_state, _to_scalar, _use_grad, _preserve)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """torch.optim.Adagrad; its state (step, sum) exists from construction on, as torch."""

    def __init__(self, params, lr=1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach=None, *,
                 maximize: bool = False, differentiable: bool = False, fused=None) -> None:
        _check_lr(lr)
        _check_nonneg(lr_decay, "lr_decay value")
        _check_nonneg(weight_decay, "weight_decay value")
        _check_nonneg(initial_accumulator_value, "initial_accumulator_value value")
        _check_nonneg(eps, "epsilon value")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _scalar_state()
                init = initial_accumulator_value
                if p.is_complex():
                    init = complex(init, init)
                state["sum"] = F["full_like"](p, init, memory_format=_preserve)

    _state_spec = (("step", SCALAR), ("sum", LIKE_PARAM))

    # param-group options older state dicts may lack (filled in by __setstate__)
    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("fused", None))

    @_use_grad
    def step(self, closure=None):
        """One update per parameter with a gradient."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            wd, eps, lr_decay = group["weight_decay"], group["eps"], group["lr_decay"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                state["step"] += 1
                step = state["step"].item()
                grad = -p.grad if group["maximize"] else p.grad
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                clr = lr / (1 + (step - 1) * lr_decay)
                param, grad, state_sum = _as_real(p, grad, state["sum"])
                state_sum.addcmul_(grad, grad, value=1)
                std = state_sum.sqrt().add_(eps)
                param.addcdiv_(grad, std, value=-clr)
        return loss
