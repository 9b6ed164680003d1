"""GradScaler: dynamic loss scaling for mixed-precision training (torch.amp.GradScaler).

Small float16 gradients underflow to zero. Multiplying the loss by a large scale before
backward keeps them representable; the gradients are divided by the same scale before the
optimizer uses them. When a scaled gradient overflows (inf/nan) the optimizer step is skipped
and the scale shrinks; after `growth_interval` clean steps in a row it grows again.
"""
from __future__ import annotations

import warnings
from collections import abc, defaultdict
from enum import Enum

from ..autograd import no_grad
from ..backends import cuda_available
from ..core.dtype import float16, float32, int32
from ..core.tensor import Tensor
from ..ops.registry import functions as F

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    """Where an optimizer is in the current iteration: reset to READY by update()."""
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _PerDevice:
    """Copies of one tensor on the devices that ask for it (made once per device)."""

    def __init__(self, master: Tensor):
        self.master = master
        self.copies: dict = {}

    def get(self, device) -> Tensor:
        t = self.copies.get(device)
        if t is None:
            t = self.copies[device] = self.master.to(device=device, copy=True)
        return t


class GradScaler:
    """Scales losses and unscales gradients for float16 training, as torch.amp.GradScaler.

    Typical loop::

        scaler = GradScaler("cpu")
        for input, target in data:
            optimizer.zero_grad()
            loss = loss_fn(model(input), target)
            scaler.scale(loss).backward()
            scaler.step(optimizer)       # skipped when a gradient is inf/nan
            scaler.update()              # backs the scale off, or grows it
            if not scaler.step_skipped:
                scheduler.step()

    `step(optimizer)` unscales the gradients (unless `unscale_` already did), and calls
    `optimizer.step()` only when none of them is inf or nan. `update()` then multiplies the
    scale by `backoff_factor` if any step of the iteration found inf/nan (resetting the growth
    tracker), and by `growth_factor` after `growth_interval` clean iterations in a row.

    Beyond PyTorch:

    * `step_skipped` tells whether the most recent `step()` skipped the optimizer's step
      (None before any `step()`); PyTorch only lets you guess by comparing scales.
    * A step skipped by the scaler is recorded on the optimizer (`_step_skipped_by_scaler`),
      so an LR scheduler stepped afterwards does not warn "Detected call of
      `lr_scheduler.step()` before `optimizer.step()`" as PyTorch misleadingly does. It still
      warns when the scheduler is stepped before any step was attempted.

    For device "cuda" without a CUDA backend the scaler warns and disables itself; a disabled
    scaler passes outputs through, and `step` just calls `optimizer.step()`.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        self._step_skipped = None
        if device == "cuda" and enabled and not cuda_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None              # float32 0-dim, made by the first scale()
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None     # int32 0-dim: clean iterations in a row
            self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    # -- the scale tensors ---------------------------------------------------------------------

    def _lazy_init(self, device) -> None:
        self._scale = F["full"]((), self._init_scale, dtype=float32, device=device)
        self._growth_tracker = F["full"]((), self._init_growth_tracker, dtype=int32,
                                           device=device)

    def _check_initialised(self, funcname: str) -> None:
        if self._scale is None:
            raise AssertionError(
                f"Attempted {funcname} but _scale is None.  This may indicate your script did "
                f"not use scaler.scale(loss or outputs) earlier in the iteration.")

    def scale(self, outputs):
        """outputs * scale: a tensor, or (nested) lists/tuples/iterables of tensors."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init(outputs.device)
            return outputs * self._scale.to(device=outputs.device)
        per_device = []

        def apply(val):
            if isinstance(val, Tensor):
                if not per_device:
                    if self._scale is None:
                        self._lazy_init(val.device)
                    per_device.append(_PerDevice(self._scale))
                return val * per_device[0].get(val.device)
            if isinstance(val, abc.Iterable):
                scaled = map(apply, val)
                return type(val)(scaled) if isinstance(val, (list, tuple)) else scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    # -- unscaling and stepping ----------------------------------------------------------------

    def _unscale_grads_(self, optimizer, inv_scale: Tensor, allow_fp16: bool) -> dict:
        """Multiplies every grad by inv_scale; returns {device: found_inf (1. if any inf/nan)}."""
        inv_per_device = _PerDevice(inv_scale)
        found_inf = _PerDevice(F["full"]((), 0.0, dtype=float32, device=inv_scale.device))
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    grad = param.grad
                    if grad is None:
                        continue
                    if not allow_fp16 and grad.dtype == float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    flag = found_inf.get(grad.device)
                    if not bool(F["isfinite"](grad).all()):
                        flag.fill_(1.0)
                    grad.mul_(inv_per_device.get(grad.device))
        return found_inf.copies

    def unscale_(self, optimizer) -> None:
        """Divides the optimizer's gradients by the scale (once per iteration), noting inf/nan.

        Call it before `step` to inspect or clip the true gradients; `step` won't unscale twice.
        """
        if not self._enabled:
            return
        self._check_initialised("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscales (if needed), then `optimizer.step(*args, **kwargs)` unless a grad is inf/nan.

        Returns optimizer.step's result, or None when the step was skipped.
        """
        if not self._enabled:
            self._step_skipped = False
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_initialised("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None
        skipped = bool(sum(v.item() for v in state["found_inf_per_device"].values()))
        if skipped:
            optimizer._step_skipped_by_scaler = True    # read by lr_scheduler's order warning
        else:
            result = optimizer.step(*args, **kwargs)
        self._step_skipped = skipped
        state["stage"] = OptState.STEPPED
        return result

    @property
    def step_skipped(self):
        """Whether the last step() skipped the optimizer step (inf/nan grads); None before any."""
        return self._step_skipped

    def update(self, new_scale=None) -> None:
        """Backs the scale off after an inf/nan, grows it after growth_interval clean steps.

        `new_scale` (a float, or a 1-element tensor on the scaler's device without grad) sets the
        scale instead. Either way the per-optimizer states start a new iteration.
        """
        if not self._enabled:
            return
        self._check_initialised("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if (not isinstance(new_scale, Tensor) or new_scale.device.type != self._device
                        or new_scale.numel() != 1 or new_scale.requires_grad):
                    raise AssertionError(reason)
                self._scale.copy_(new_scale)
        else:
            found = [f.to(device=self._scale.device)
                     for state in self._per_optimizer_states.values()
                     for f in state["found_inf_per_device"].values()]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            self._update_scale(any(bool(f.item()) for f in found))
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def _update_scale(self, found_inf: bool) -> None:
        """torch._amp_update_scale_: the scale never grows to inf."""
        if found_inf:
            self._scale.mul_(self._backoff_factor)
            self._growth_tracker.fill_(0)
            return
        clean = self._growth_tracker.item() + 1
        if clean == self._growth_interval:
            grown = self._scale * self._growth_factor
            if bool(F["isfinite"](grown)):
                self._scale.copy_(grown)
            clean = 0
        self._growth_tracker.fill_(clean)

    # -- getters, setters, state ---------------------------------------------------------------

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return self._growth_tracker.item()

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """scale, growth_factor, backoff_factor, growth_interval, _growth_tracker ({} disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        """Pickles between iterations only; the tensors are remade from plain numbers."""
        state = self.__dict__.copy()
        if self._enabled:
            if self._per_optimizer_states:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
