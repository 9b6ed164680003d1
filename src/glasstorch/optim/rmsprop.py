"""RMSprop: divide the gradient by a running root-mean-square of recent gradients."""
from __future__ import annotations

from .optimizer import (LIKE_PARAM, SCALAR, Optimizer, _as_real, _check_lr, _check_nonneg,
                        _closure_loss, _scalar_state, _to_scalar, _use_grad, _zeros_like)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """torch.optim.RMSprop (centered variant subtracts the squared mean gradient)."""

    def __init__(self, params, lr=1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        _check_nonneg(eps, "epsilon value")
        _check_nonneg(momentum, "momentum value")
        _check_nonneg(weight_decay, "weight_decay value")
        _check_nonneg(alpha, "alpha value")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    _state_spec = (("step", SCALAR), ("square_avg", LIKE_PARAM),
                   ("momentum_buffer", LIKE_PARAM, "momentum"),
                   ("grad_avg", LIKE_PARAM, "centered"))

    # param-group options older state dicts may lack (filled in by __setstate__)
    _group_defaults = (("momentum", 0), ("centered", False), ("foreach", None),
                       ("maximize", False), ("differentiable", False), ("capturable", False))

    @_use_grad
    def step(self, closure=None):
        """One update per parameter with a gradient."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            alpha, eps, wd = group["alpha"], group["eps"], group["weight_decay"]
            momentum = group["momentum"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state()
                    state["square_avg"] = _zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = _zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = _zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                state["step"] += 1
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                param, grad, square_avg, grad_avg, buf = _as_real(
                    p, grad, state["square_avg"], state.get("grad_avg"),
                    state.get("momentum_buffer"))
                square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
                if group["centered"]:
                    grad_avg.lerp_(grad, 1 - alpha)
                    avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
                else:
                    avg = square_avg.sqrt()
                avg = avg.add_(eps)
                if momentum > 0:
                    buf.mul_(momentum).addcdiv_(grad, avg)
                    param.add_(buf, alpha=-lr)
                else:
                    param.addcdiv_(grad, avg, value=-lr)
        return loss
