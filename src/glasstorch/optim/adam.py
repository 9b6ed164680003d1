"""Adam (and, with decoupled_weight_decay, AdamW): bias-corrected moment estimates."""
from __future__ import annotations

import numpy as np

from ..backends.cpu import native
from ..backends.cpu.native import pointers, threads
from ..core.storage import UntypedStorage
from ..core.tensor import Tensor
from .optimizer import (LIKE_PARAM, SCALAR, F, Optimizer, _check_betas, _check_lr,
                        _check_nonneg, _closure_loss, _as_real, _fused, _plain_arrays,
                        _scalar_state, _to_scalar, _use_grad, _zeros_like)

__all__ = ["Adam"]


class Adam(Optimizer):
    """torch.optim.Adam. foreach/fused/capturable select kernels in torch; here every
    setting runs the same per-parameter update."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused=None,
                 decoupled_weight_decay: bool = False) -> None:
        _check_lr(lr)
        _check_nonneg(eps, "epsilon value")
        _check_betas(betas)
        _check_nonneg(weight_decay, "weight_decay value")
        if not (all(isinstance(b, float) for b in betas[:2])
                or all(isinstance(b, Tensor) for b in betas[:2])):
            raise ValueError("betas must be either both floats or both Tensors")
        for i in (0, 1):
            if isinstance(betas[i], Tensor) and betas[i].numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
        betas = tuple(map(_to_scalar, betas))
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    _state_spec = (("step", SCALAR), ("exp_avg", LIKE_PARAM), ("exp_avg_sq", LIKE_PARAM),
                   ("max_exp_avg_sq", LIKE_PARAM, "amsgrad"))

    # param-group options older state dicts may lack (filled in by __setstate__)
    _group_defaults = (("amsgrad", False), ("maximize", False), ("foreach", None),
                       ("capturable", False), ("differentiable", False),
                       ("decoupled_weight_decay", False), ("fused", None))

    def _state(self, group: dict, p) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _scalar_state()
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = _zeros_like(p)
        return state

    @_use_grad
    def step(self, closure=None):
        """One update per parameter with a gradient (see torch.optim.Adam's algorithm)."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = (_to_scalar(b) for b in group["betas"])
            wd, eps = group["weight_decay"], group["eps"]
            plain = not group["differentiable"]
            fused = "aten::_fused_adamw_" if group["decoupled_weight_decay"] \
                else "aten::_fused_adam_"
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                state = self.state.get(p) or self._state(group, p)
                arrays = _plain_arrays(p, grad, state["exp_avg"], state["exp_avg_sq"],
                                       *(() if not group["amsgrad"] else
                                         (state["max_exp_avg_sq"],))) if plain else None
                if arrays is not None and state["step"]._vc is not None:
                    _fused(fused, _adam_arrays, group, state, p, arrays, lr, beta1, beta2, wd,
                           eps)
                    continue
                if group["maximize"]:
                    grad = -grad
                state["step"] += 1
                # inside torch.compile the counter's bytes are not computed yet: it stays
                # data (PyTorch's capturable form), so each step replays the same graph
                step = state["step"]
                captured = step._storage.__class__ is not UntypedStorage
                if not captured:
                    step = step.item()
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                param, grad, exp_avg, exp_avg_sq, vmax = _as_real(
                    p, grad, state["exp_avg"], state["exp_avg_sq"], state.get("max_exp_avg_sq"))
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                step_size = lr / (1 - beta1 ** step)
                bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
                if group["amsgrad"]:
                    F["maximum"](vmax, exp_avg_sq, out=vmax)
                    denom = (vmax.sqrt() / bias_correction2_sqrt).add_(eps)
                else:
                    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                if captured:
                    param.sub_(exp_avg / denom * step_size)
                else:
                    param.addcdiv_(exp_avg, denom, value=-step_size)
        return loss


def _adam_arrays(group, state, p, arrays, lr, beta1, beta2, wd, eps) -> None:
    """One Adam/AdamW update on the NumPy arrays of p, its gradient and moments, in place:
    torch's single-tensor algorithm in the same operation order (lerp, mul + addcmul,
    sqrt / bias correction + eps, addcdiv), each op as one out= pass (on a GPU, one fused
    kernel launch where _fused_adam can take the arrays)."""
    step_t = state["step"]
    counter = None
    if step_t._storage.device.type != "meta":      # a fake or meta counter holds no value
        counter = step_t._array()
        counter[...] += 1
    # the in-place writes the op-by-op update would count (_bump's, inline: per parameter)
    step_t._vc.version += 1
    p._vc.version += 2 if wd != 0 and group["decoupled_weight_decay"] else 1
    state["exp_avg"]._vc.version += 1
    state["exp_avg_sq"]._vc.version += 2
    if group["amsgrad"]:
        state["max_exp_avg_sq"]._vc.version += 1
    if not arrays:                                  # no data (meta, fake): only the counts
        return
    param, grad, exp_avg, exp_avg_sq = arrays[:4]
    step = float(counter)
    if param.__class__ is not np.ndarray and _fused_adam(group, p, arrays, lr, beta1, beta2,
                                                         wd, eps, step):
        return
    if _native_adam(group, arrays, lr, beta1, beta2, wd, eps, step):
        return
    if group["maximize"]:
        grad = np.negative(grad)
    if wd != 0:
        if group["decoupled_weight_decay"]:
            np.multiply(param, 1 - lr * wd, out=param)
        else:
            grad = grad + wd * param
    scratch = np.subtract(grad, exp_avg)            # exp_avg.lerp_(grad, 1 - beta1)
    weight = 1 - beta1
    if abs(weight) < 0.5:
        scratch *= weight
        exp_avg += scratch
    else:
        scratch *= 1 - weight
        np.subtract(grad, scratch, out=exp_avg)
    exp_avg_sq *= beta2                             # .mul_(beta2).addcmul_(g, g, 1 - beta2)
    np.multiply(grad, 1 - beta2, out=scratch)
    scratch *= grad
    exp_avg_sq += scratch
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    second = exp_avg_sq
    if group["amsgrad"]:
        second = arrays[4]
        np.maximum(second, exp_avg_sq, out=second)
    denom = np.sqrt(second)
    denom /= bias_correction2_sqrt
    denom += eps
    np.multiply(exp_avg, -step_size, out=scratch)   # param.addcdiv_(exp_avg, denom, -step_size)
    scratch /= denom
    param += scratch


# native/optim.c's flags: which of _adam_arrays' branches run
_MAXIMIZE, _DECAY, _DECOUPLED, _AMSGRAD, _LERP_BY_WEIGHT = 1, 2, 4, 8, 16
# below this many elements the C call's fixed cost (ctypes, a few microseconds) is more than
# the NumPy passes it saves (measured: even at 1000 elements, x0.72 at 10000)
_NATIVE_FROM = 1024


def _native_adam(group, arrays, lr, beta1, beta2, wd, eps, step) -> bool:
    """The update as native/optim.c's one pass over the arrays (the NumPy steps below, per
    element, so the same bits), when they are dense float32 or float64 CPU arrays of at
    least _NATIVE_FROM elements; False (nothing done) otherwise."""
    n = arrays[0].size
    if n < _NATIVE_FROM or not native.dense(*arrays):
        return False
    fn = native.function("optim", "adam_" + native.suffix(arrays[0]), "nppppp" + "d" * 7 + "ii")
    if fn is None:
        return False
    weight = 1 - beta1
    by_weight = abs(weight) < 0.5
    decoupled, amsgrad = group["decoupled_weight_decay"], group["amsgrad"]
    flags = ((_MAXIMIZE if group["maximize"] else 0) | (_DECAY if wd != 0 else 0)
             | (_DECOUPLED if decoupled else 0) | (_AMSGRAD if amsgrad else 0)
             | (_LERP_BY_WEIGHT if by_weight else 0))
    # no max_exp_avg_sq without amsgrad: exp_avg_sq stands in (the C never touches it)
    fn(n, *pointers(*arrays[:4], arrays[4] if amsgrad else arrays[3]),
       float(1 - lr * wd if decoupled else wd), float(weight if by_weight else 1 - weight),
       float(beta2), float(1 - beta2), float((1 - beta2 ** step) ** 0.5), float(eps),
       float(-(lr / (1 - beta1 ** step))), flags, threads(n))
    return True


def _fused_adam(group, p, arrays, lr, beta1, beta2, wd, eps, step) -> bool:
    """The update as one launch of glasstorch's CUDA C Adam kernel, which follows the NumPy
    path's operation order (so the same results), when the arrays are CuPy arrays on real
    CuPy and the written ones C-contiguous; False (nothing done) otherwise."""
    from ..backends.cuda import fused, runtime
    if not runtime.runs_cuda_c():
        return False
    param, grad, exp_avg, exp_avg_sq = arrays[:4]
    written = (param, exp_avg, exp_avg_sq) + tuple(arrays[4:])
    if not all(a.flags.c_contiguous for a in written):
        return False
    with runtime.DeviceGuard(p.device.index):
        if not grad.flags.c_contiguous:
            grad = runtime.cupy().ascontiguousarray(grad)
        fused.adam_step_(param, grad, exp_avg, exp_avg_sq,
                         arrays[4] if group["amsgrad"] else None, lr=lr, beta1=beta1,
                         beta2=beta2, eps=eps, weight_decay=wd,
                         decoupled=group["decoupled_weight_decay"],
                         maximize=group["maximize"], bias_correction1=1 - beta1 ** step,
                         bias_correction2_sqrt=(1 - beta2 ** step) ** 0.5)
    return True
