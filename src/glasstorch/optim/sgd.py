"""SGD: stochastic gradient descent with optional momentum, Nesterov and weight decay."""
from __future__ import annotations

import numpy as np

from ..backends.cpu import native
from ..backends.cpu.native import pointers, threads
from ..core.tensor import Tensor
from .optimizer import (OPTIONAL_LIKE_PARAM, Optimizer, _bump, _check_lr, _closure_loss, _fused,
                        _plain_arrays, _to_scalar, _use_grad)

__all__ = ["SGD"]


class SGD(Optimizer):
    """torch.optim.SGD; `momentum_buffer` is created from the first gradient."""

    _supports_differentiable = True

    def __init__(self, params, lr=1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay=0, nesterov: bool = False, *, maximize: bool = False,
                 foreach=None, differentiable: bool = False, fused=None) -> None:
        _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    _state_spec = (("momentum_buffer", OPTIONAL_LIKE_PARAM),)

    # param-group options older state dicts may lack (filled in by __setstate__)
    _group_defaults = (("nesterov", False), ("maximize", False), ("foreach", None),
                       ("differentiable", False), ("fused", False))

    @_use_grad
    def step(self, closure=None):
        """One update: p -= lr * (momentum-filtered, decayed) gradient."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, wd, momentum = group["lr"], group["weight_decay"], group["momentum"]
            # A tensor lr / weight_decay that requires grad stays in the graph
            # (differentiable=True); otherwise it is read as a number.
            lr_tensor = isinstance(lr, Tensor) and lr.requires_grad
            wd_tensor = isinstance(wd, Tensor) and wd.requires_grad
            lr, wd = (lr if lr_tensor else _to_scalar(lr)), (wd if wd_tensor else _to_scalar(wd))
            plain = not (lr_tensor or wd_tensor or group["differentiable"])
            for p in self._params_with_grad(group):
                buf = self.state[p].get("momentum_buffer") if momentum != 0 else None
                arrays = _plain_arrays(p, p.grad, *(() if buf is None else (buf,))) \
                    if plain and (momentum == 0 or buf is not None) else None
                if arrays is not None:
                    _fused("aten::_fused_sgd_", _sgd_arrays, group, p, buf, arrays, lr, wd,
                           momentum)
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                if wd_tensor:
                    grad = grad.addcmul(p.clone(), wd)
                elif wd != 0:
                    grad = grad.add(p, alpha=wd)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = grad.detach().clone()
                    else:
                        buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
                    state["momentum_buffer"] = buf
                    grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
                if lr_tensor:
                    p.addcmul_(grad, lr, value=-1)
                else:
                    p.add_(grad, alpha=-lr)
        return loss


def _sgd_arrays(group, p, buf, arrays, lr, wd, momentum) -> None:
    """One SGD update on the NumPy arrays of p, its gradient and momentum buffer, in place,
    in torch's single-tensor order (decay, buffer mul_ + add_, nesterov, add_)."""
    _bump(p)
    if buf is not None:
        _bump(buf, 2)
    if not arrays:                                  # no data (meta, fake): only the counts
        return
    if _native_sgd(group, arrays, lr, wd, momentum):
        return
    param, grad = arrays[:2]
    if group["maximize"]:
        grad = np.negative(grad)
    if wd != 0:
        grad = grad + wd * param
    if buf is not None:
        b = arrays[2]
        b *= momentum
        alpha = 1 - group["dampening"]
        b += grad if alpha == 1 else grad * alpha
        grad = grad + momentum * b if group["nesterov"] else b
    param += grad * -lr


# native/optim.c's flags: which of _sgd_arrays' branches run
_MAXIMIZE, _DECAY, _MOMENTUM, _DAMPENED, _NESTEROV = 1, 2, 4, 8, 16
# below this many elements the C call's fixed cost (ctypes, a few microseconds) is more than
# the two to six NumPy passes it saves (measured: plain SGD x1.25 at 10000 elements, x0.81 at
# 100000; with momentum x1.05, x0.66)
_NATIVE_FROM = 16384


def _native_sgd(group, arrays, lr, wd, momentum) -> bool:
    """The update as native/optim.c's one pass over the arrays (the NumPy steps above, per
    element, so the same bits), when they are dense float32 or float64 CPU arrays of at
    least _NATIVE_FROM elements; False (nothing done) otherwise."""
    n = arrays[0].size
    if n < _NATIVE_FROM or not native.dense(*arrays):
        return False
    fn = native.function("optim", "sgd_" + native.suffix(arrays[0]), "npppddddii")
    if fn is None:
        return False
    has_buf = len(arrays) > 2
    alpha = 1 - group["dampening"]
    flags = ((_MAXIMIZE if group["maximize"] else 0) | (_DECAY if wd != 0 else 0)
             | (_MOMENTUM | (_DAMPENED if alpha != 1 else 0)
                | (_NESTEROV if group["nesterov"] else 0) if has_buf else 0))
    # no momentum buffer: the gradient stands in (the C never touches it)
    fn(n, *pointers(arrays[0], arrays[1], arrays[2] if has_buf else arrays[1]), float(wd),
       float(momentum), float(alpha), float(-lr), flags, threads(n))
    return True
