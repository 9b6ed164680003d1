"""ASGD: SGD with a decaying step size eta and a running (Polyak) average `ax` of the
iterates, averaging from step t0 on."""
from __future__ import annotations

from .optimizer import (LIKE_PARAM, SCALAR, F, Optimizer, _as_real, _check_lr, _check_nonneg,
                        _closure_loss, _get_scalar_dtype, _scalar_state, _to_scalar, _use_grad,
                        _zeros_like)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """torch.optim.ASGD. eta and mu are 0-dim float32 tensors, so they round as torch's."""

    def __init__(self, params, lr=1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach=None,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check_lr(lr)
        _check_nonneg(weight_decay, "weight_decay value")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    _state_spec = (("step", SCALAR), ("eta", SCALAR), ("mu", SCALAR), ("ax", LIKE_PARAM))

    # param-group options older state dicts may lack (filled in by __setstate__)
    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    @_use_grad
    def step(self, closure=None):
        """One update per parameter with a gradient."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            wd = group["weight_decay"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state()
                    state["eta"] = F["tensor"](lr, dtype=_get_scalar_dtype())
                    state["mu"] = _scalar_state(1.0)
                    state["ax"] = _zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                param, grad, ax = _as_real(p, grad, state["ax"])
                state["step"] += 1
                if wd != 0:
                    grad = grad.add(param, alpha=wd)
                eta = state["eta"].item()
                param.mul_(1 - lambd * eta)
                param.add_(grad, alpha=-eta)
                mu = state["mu"]
                if mu.item() != 1:
                    ax.add_(param.sub(ax).mul_(mu))
                else:
                    ax.copy_(param)
                step = state["step"].item()
                # Via default-dtype tensors, as torch: a float64 eta (after
                # load_state_dict) still receives float32-rounded values.
                state["eta"].copy_(F["tensor"](lr / ((1 + lambd * lr * step) ** alpha)))
                mu.copy_(F["tensor"](1 / max(1, step - t0)))
        return loss
