"""Rprop: per-coordinate step sizes grown or shrunk by the sign agreement of successive
gradients; only the gradient's sign moves the parameter."""
from __future__ import annotations

from .optimizer import (LIKE_PARAM, SCALAR, F, Optimizer, _as_real, _check_lr, _closure_loss,
                        _scalar_state, _to_scalar, _use_grad, _zeros_like)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """torch.optim.Rprop."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    _state_spec = (("step", SCALAR), ("prev", LIKE_PARAM), ("step_size", LIKE_PARAM))

    # param-group options older state dicts may lack (filled in by __setstate__)
    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    @_use_grad
    def step(self, closure=None):
        """One update per parameter with a gradient."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state()
                    state["prev"] = _zeros_like(p)
                    lr = _to_scalar(group["lr"])
                    state["step_size"] = F["full_like"](
                        p.grad, complex(lr, lr) if p.is_complex() else lr)
                grad = -p.grad if group["maximize"] else p.grad
                state["step"] += 1
                param, grad, prev, step_size = _as_real(p, grad, state["prev"],
                                                        state["step_size"])
                sign = grad.mul(prev).sign()
                sign.masked_fill_(sign.gt(0), etaplus)
                sign.masked_fill_(sign.lt(0), etaminus)
                sign.masked_fill_(sign.eq(0), 1)
                step_size.mul_(sign).clamp_(step_size_min, step_size_max)
                # After a sign change the step is skipped and the gradient forgotten.
                grad = grad.clone().masked_fill_(sign.eq(etaminus), 0)
                param.addcmul_(grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss
