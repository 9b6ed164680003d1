"""Memory planning: the peak bytes of one training step, found by running it on 'meta'.

`estimate(model, inputs, ...)` copies the model onto the meta device (no data anywhere),
makes meta inputs of the given shapes and runs forward, loss, backward and the optimizer
step there. The same operators, autograd engine and optimizer code run as on the CPU, so
the storages they create and drop are the same; while estimating, meta storages report
their sizes to a byte counter (core/storage.py's `meta_counter`) and factories called
without a device (`torch.arange(t)` inside a forward) make meta tensors. The few CPU
tensors a step really makes (an optimizer's 0-dim `step` counters) come from a private
counting allocator, so the CPU statistics the caller sees never move.
"""
from __future__ import annotations

import copy

from .cpu_allocator import CPUAllocator

__all__ = ["MemoryEstimate", "estimate"]


class _Counter:
    """Live and peak bytes over the step, with what the live bytes were made of at the peak.

    `classify()` returns (gradients, optimizer_state) live bytes; it runs at each new peak.
    """

    def __init__(self):
        self.live = 0
        self.peak = 0
        self.classify = None
        self.fixed = 0          # parameters, buffers and inputs: live all along
        self.at_peak = (0, 0)
        self.other_peak = 0     # the largest live total of activations and temporaries

    def allocate(self, nbytes):
        self.live += nbytes
        if self.classify is None:
            return
        grads, state = self.classify()
        other = self.live - self.fixed - grads - state
        if other > self.other_peak:
            self.other_peak = other
        if self.live > self.peak:
            self.peak = self.live
            self.at_peak = (grads, state)

    def free(self, nbytes, *_):
        self.live -= nbytes


class _CountingCPUAllocator(CPUAllocator):
    """The CPU allocator, with its own statistics, reporting to a _Counter as well."""

    def __init__(self, counter):
        super().__init__()
        self.counter = counter

    def allocate(self, nbytes, *args):
        buf = super().allocate(nbytes, *args)
        self.counter.allocate(nbytes)
        return buf

    def free(self, nbytes, *args):
        super().free(nbytes, *args)
        self.counter.free(nbytes)


def _storage_bytes(tensors) -> int:
    """Bytes of the distinct storages under `tensors` (shared storages count once)."""
    from ..core.tensor import Tensor   # late: core.storage imports this package
    seen = {}
    for t in tensors:
        if isinstance(t, Tensor):
            s = t.untyped_storage()
            seen[id(s)] = s.nbytes()
    return sum(seen.values())


def _fmt(nbytes: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(nbytes) < 1024 or unit == "GiB":
            return f"{nbytes} B" if unit == "B" else f"{nbytes:.2f} {unit}"
        nbytes /= 1024


class MemoryEstimate:
    """Bytes of one training step, by kind.

    parameters, buffers, inputs: the model's and the batch's tensors (live all along).
    gradients: the .grad tensors after backward. optimizer_state: what the optimizer keeps
    after its first step. activations_peak: the most bytes live at once that are none of
    those (saved activations, outputs, temporaries of forward, backward and the step).
    peak: the most bytes live at once in all; `at_peak` splits it by the same kinds.
    """

    __slots__ = ("parameters", "buffers", "inputs", "gradients", "optimizer_state",
                 "activations_peak", "peak", "at_peak")

    def __init__(self, parameters, buffers, inputs, gradients, optimizer_state,
                 activations_peak, peak, at_peak):
        self.parameters = parameters
        self.buffers = buffers
        self.inputs = inputs
        self.gradients = gradients
        self.optimizer_state = optimizer_state
        self.activations_peak = activations_peak
        self.peak = peak
        self.at_peak = at_peak

    def __repr__(self):
        fields = ", ".join(f"{k}={getattr(self, k)}" for k in self.__slots__[:-1])
        return f"MemoryEstimate({fields})"

    def __str__(self):
        at = self.at_peak
        rows = [("parameters", self.parameters, at["parameters"]),
                ("buffers", self.buffers, at["buffers"]),
                ("inputs", self.inputs, at["inputs"]),
                ("gradients", self.gradients, at["gradients"]),
                ("optimizer state", self.optimizer_state, at["optimizer_state"]),
                ("activations and temporaries", self.activations_peak, at["activations"])]
        rule = "-" * 54
        lines = ["=" * 54, f"{'Memory estimate of one step':<30}{'most':>12}{'at peak':>12}",
                 rule]
        lines += [f"{name:<30}{_fmt(most):>12}{_fmt(now):>12}" for name, most, now in rows]
        lines += [rule, f"{'peak':<30}{'':>12}{_fmt(self.peak):>12}", "=" * 54]
        return "\n".join(lines)


def _meta_like(spec, what):
    """A fresh meta tensor shaped like `spec`: a Tensor (any device) or a shape."""
    from .. import empty, empty_strided
    from ..core.tensor import Tensor
    if isinstance(spec, Tensor):
        return empty_strided(spec.shape, spec.stride(), dtype=spec.dtype, device="meta",
                             requires_grad=spec.requires_grad)
    if isinstance(spec, (tuple, list)) and all(isinstance(n, int) for n in spec):
        return empty(tuple(spec), device="meta")
    raise TypeError(f"estimate(): {what} must be a Tensor or a shape (a tuple of ints), "
                    f"but got {type(spec).__name__}")


def _is_single(inputs) -> bool:
    from ..core.tensor import Tensor
    return isinstance(inputs, Tensor) or (
        isinstance(inputs, (tuple, list)) and all(isinstance(n, int) for n in inputs))


def _meta_model(model):
    """A deep copy of `model` whose parameters and buffers are new meta tensors."""
    from ..nn.parameter import Parameter
    memo = {}
    for p in model.parameters():
        memo[id(p)] = Parameter(_meta_like(p, "a parameter"), p.requires_grad)
    for b in model.buffers():
        memo[id(b)] = _meta_like(b, "a buffer")
    return copy.deepcopy(model, memo)


def estimate(model, inputs, *, target=None, loss_fn=None, optimizer=None,
             optimizer_kwargs=None, step=True) -> MemoryEstimate:
    """The peak memory of one step `loss_fn(model(*inputs), target).backward();
    optimizer.step()` (a fresh model: no gradients, no optimizer state yet), computed on the
    meta device without allocating any data.

    inputs: a Tensor or shape, or a sequence of them (only shapes, dtypes and strides are
    used; pass integer inputs as tensors, e.g. on 'meta'). target: likewise, given to
    loss_fn after the output. loss_fn: called as loss_fn(output, target), or loss_fn(output)
    without a target; by default the output's sum. optimizer: an optimizer class or a
    factory, called as optimizer(parameters, **optimizer_kwargs); step=False stops after
    backward. The model is neither moved nor changed. While it runs, factories called
    without a device make meta tensors in every thread, so estimate alongside other work
    only in a single-threaded program.
    """
    from ..core import device as device_mod, storage as storage_mod
    inputs = [inputs] if _is_single(inputs) else list(inputs)
    counter = _Counter()
    cpu = _CountingCPUAllocator(counter)
    saved = storage_mod.meta_counter, storage_mod.cpu_allocator, device_mod.default_device
    storage_mod.meta_counter, storage_mod.cpu_allocator = counter, cpu
    device_mod.default_device = device_mod.META
    try:
        return _run(model, inputs, target, loss_fn, optimizer, optimizer_kwargs or {},
                    step, counter, device_mod)
    finally:
        storage_mod.meta_counter, storage_mod.cpu_allocator, device_mod.default_device = saved


def _run(model, inputs, target, loss_fn, optimizer, optimizer_kwargs, step, counter,
         device_mod):
    from ..nn.modules.module import Module
    meta = _meta_model(model)
    params = list(meta.parameters())
    parameters = _storage_bytes(params)
    buffers = _storage_bytes(meta.buffers())
    args = [_meta_like(x, "an input") for x in inputs]
    if target is not None:
        target = _meta_like(target, "target")
    fed = _storage_bytes(args + ([target] if target is not None else []))
    opt = None if optimizer is None else optimizer(params, **optimizer_kwargs)
    if isinstance(loss_fn, Module):     # its weights (class weights...) go to meta too
        loss_fn = _meta_model(loss_fn)

    def state_tensors():
        return [] if opt is None else [v for s in opt.state.values() for v in s.values()]

    counter.fixed = parameters + buffers + fed
    counter.peak = counter.live
    counter.classify = lambda: (_storage_bytes(p.grad for p in params),
                                _storage_bytes(state_tensors()))
    out = meta(*args)
    if loss_fn is None:
        loss = out.sum()
    else:
        loss = loss_fn(out) if target is None else loss_fn(out, target)
    del out
    loss.backward()
    if opt is not None and step:
        device_mod.default_device = device_mod.CPU   # optimizers keep `step` on the CPU
        opt.step()
    gradients = _storage_bytes(p.grad for p in params)
    state = _storage_bytes(state_tensors())
    grads_at, state_at = counter.at_peak
    at_peak = {"parameters": parameters, "buffers": buffers, "inputs": fed,
               "gradients": grads_at, "optimizer_state": state_at}
    at_peak["activations"] = counter.peak - sum(at_peak.values())
    return MemoryEstimate(parameters, buffers, fed, gradients, state, counter.other_peak,
                          counter.peak, at_peak)
