"""SparseAdam: Adam for sparse gradients (an nn.Embedding with sparse=True). Only the
moments of the rows the gradient touches are updated, and only those rows of the parameter
move, so a step costs O(rows touched) rather than O(table)."""
from __future__ import annotations

import math

from .optimizer import (Optimizer, _check_betas, _check_lr, _check_nonneg, _closure_loss,
                        _scalar_state, _to_scalar, _use_grad, _zeros_like)

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """torch.optim.SparseAdam: dense parameters, sparse (COO) gradients."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        _check_lr(lr)
        _check_nonneg(eps, "epsilon value")
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse = [[i, j] for i, group in enumerate(self.param_groups)
                  for j, p in enumerate(group["params"]) if p.is_sparse]
        if sparse:
            raise ValueError(f"Sparse params at indices {sparse}: SparseAdam requires dense "
                             "parameter tensors")

    _group_defaults = (("maximize", False),)

    @_use_grad
    def step(self, closure=None):
        """One update per parameter with a gradient, at the gradient's indices only."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            for p in self._params_with_grad(group):
                if not p.grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_state()
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                state["step"] += 1
                grad = p.grad.coalesce()
                index = tuple(grad._indices())           # one index tensor per sparse dim
                values = -grad._values() if group["maximize"] else grad._values()
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                avg = exp_avg[index].lerp_(values, 1 - beta1)
                avg_sq = exp_avg_sq[index].lerp_(values * values, 1 - beta2)
                exp_avg[index] = avg
                exp_avg_sq[index] = avg_sq
                step = state["step"].item()
                size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
                p[index] = p[index] - avg / (avg_sq.sqrt() + group["eps"]) * size
        return loss
