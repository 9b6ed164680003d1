"""Stochastic Weight Averaging and exponential moving averages of a model's weights.

`AveragedModel(model)` keeps a copy whose parameters are an average of the model's over the
`update_parameters` calls: the running mean by default (SWA), or an EMA with
`multi_avg_fn=get_ema_multi_avg_fn(decay)`. `SWALR` anneals each group's learning rate to
its `swa_lr`; `update_bn` recomputes BatchNorm statistics for the averaged weights.
"""
from __future__ import annotations

import copy
import itertools
import math

from ..autograd.grad_mode import no_grad
from ..core import dtype as dt
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from ..ops.creation.factories import tensor
from .lr_scheduler import LRScheduler, _format_param, _warn_get_lr_called_within_step

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def get_ema_multi_avg_fn(decay: float = 0.999):
    """An in-place update of lists of averaged tensors: ema += (1 - decay) * (current - ema)."""
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _num_averaged):
        for ema, current in zip(ema_param_list, current_param_list):
            ema.lerp_(current, 1 - decay)
    return ema_update


def get_swa_multi_avg_fn():
    """An in-place update of lists of averaged tensors to the running mean."""
    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        for averaged, current in zip(averaged_param_list, current_param_list):
            averaged.add_((current - averaged) / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay: float = 0.999):
    """ema, current, n -> decay * ema + (1 - decay) * current."""
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """averaged, current, n -> the running mean after n + 1 values."""
    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose weights average the model's over update_parameters() calls
    (buffers too with use_buffers; otherwise they are copied)."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=dt.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _tensors(self, model):
        if self.use_buffers:
            return itertools.chain(model.parameters(), model.buffers())
        return model.parameters()

    def update_parameters(self, model) -> None:
        """Fold model's current weights into the average (the first call copies them)."""
        ours = [p.detach() for p in self._tensors(self.module)]
        theirs = [p.detach().to(mine.device) for p, mine in zip(self._tensors(model), ours)]
        first = int(self.n_averaged.item()) == 0
        if first:
            for mine, current in zip(ours, theirs):
                mine.copy_(current)
        else:
            count = self.n_averaged.to(ours[0].device) if ours else self.n_averaged
            if self.avg_fn is None:
                update = self.multi_avg_fn or get_swa_multi_avg_fn()
                floating = [(m, c) for m, c in zip(ours, theirs) if m.is_floating_point()]
                update([m for m, _ in floating], [c for _, c in floating], count)
            else:
                for mine, current in zip(ours, theirs):
                    mine.copy_(self.avg_fn(mine, current, count))
        if not self.use_buffers:
            for mine, current in zip(self.module.buffers(), model.buffers()):
                mine.detach().copy_(current.detach().to(mine.device))
        self.n_averaged += 1


@no_grad()
def update_bn(loader, model, device=None) -> None:
    """Recompute the BatchNorm running statistics of `model` with one pass over `loader`
    (cumulative averages: momentum None during the pass)."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to swa_lr over anneal_epochs (cosine or linear),
    then hold it there."""

    def __init__(self, optimizer, swa_lr, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        for rate, group in zip(_format_param("swa_lr", optimizer, swa_lr),
                               optimizer.param_groups):
            group["swa_lr"] = rate
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else \
            self._linear_anneal
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        """The learning rate the previous step annealed from (undoing its mix)."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list:
        _warn_get_lr_called_within_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        span = max(1, self.anneal_epochs)
        prev_alpha = self.anneal_func(max(0.0, min(1.0, (step - 1) / span)))
        alpha = self.anneal_func(max(0.0, min(1.0, step / span)))
        groups = self.optimizer.param_groups
        previous = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, previous)]
