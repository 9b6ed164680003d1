"""Adafactor: Adam-like steps with a factored second moment. For a matrix gradient it keeps
one running mean of squares per row and one per column (their outer product, over the mean
row value, estimates every entry), so the optimizer state is O(n + m) instead of O(n m);
vectors keep a full running variance. The step is relative to the parameter's RMS and the
update is clipped to RMS at most `d`."""
from __future__ import annotations

from ..core import dtype as dt
from .optimizer import (Optimizer, _check_lr, _closure_loss, _scalar_state, _to_scalar,
                        _use_grad, _zeros_like)

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """torch.optim.Adafactor."""

    def __init__(self, params, lr=1e-2, beta2_decay: float = -0.8, eps=(None, 1e-3),
                 d: float = 1.0, weight_decay: float = 0.0, *, foreach=None,
                 maximize: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    _group_defaults = (("foreach", None), ("maximize", False))

    @staticmethod
    def _init_state(state, p) -> None:
        state["step"] = _scalar_state()
        if p.grad.dim() > 1:
            rows, cols = list(p.grad.shape), list(p.grad.shape)
            rows[-1], cols[-2] = 1, 1
            state["row_var"] = p.grad.new_zeros(rows)
            state["col_var"] = p.grad.new_zeros(cols)
        else:
            state["variance"] = _zeros_like(p.grad)

    @_use_grad
    def step(self, closure=None):
        """One update per parameter with a gradient."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            eps1, eps2 = group["eps"]
            for p in self._params_with_grad(group):
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                if p.grad.is_sparse:
                    raise RuntimeError("Adafactor does not support sparse gradients")
                state = self.state[p]
                if len(state) == 0:
                    self._init_state(state, p)
                self._update(p, state, lr, group, dt.finfo(p.dtype).eps
                             if eps1 is None else eps1, eps2)
        return loss

    @staticmethod
    def _update(p, state, lr, group, eps1, eps2) -> None:
        grad = -p.grad if group["maximize"] else p.grad
        state["step"] += 1
        step = state["step"].item()
        weight = step ** group["beta2_decay"]          # 1 - beta2 at this step
        rho = min(lr, 1 / step ** 0.5)
        alpha = max(eps2, p.norm(2).item() / p.numel() ** 0.5) * rho
        if group["weight_decay"] != 0:
            p.mul_(1 - lr * group["weight_decay"])
        if grad.dim() > 1:
            row_mean = grad.norm(2, dim=-1, keepdim=True).square_() / grad.size(-1)
            col_mean = grad.norm(2, dim=-2, keepdim=True).square_() / grad.size(-2)
            state["row_var"].lerp_(row_mean, weight)
            state["col_var"].lerp_(col_mean, weight)
            estimate = state["row_var"] @ state["col_var"]
            estimate.div_(state["row_var"].mean(dim=-2, keepdim=True).clamp_(min=eps1))
        else:
            state["variance"].lerp_(grad * grad, weight)
            estimate = state["variance"].clone()
        update = estimate.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
        denom = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * group["d"]))
        p.add_(update, alpha=-alpha / denom)
