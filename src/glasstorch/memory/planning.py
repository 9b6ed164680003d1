"""Memory planning: the peak bytes of one training step, found by running it on 'meta'.

`estimate(model, inputs, ...)` copies the model onto the meta device (no data anywhere),
makes meta inputs of the given shapes and runs forward, loss, backward and the optimizer
step there. The same operators, autograd engine and optimizer code run as on the CPU, so
the storages they create and drop are the same. A dispatch mode of the calling thread does
the planning: it shows every operator call's outputs to a byte counter, which counts each
storage once and counts it free when it dies; a function mode sends factories called
without a device (`torch.arange(t)` inside a forward) to 'meta'. Nothing global changes. The few CPU
tensors a step really makes (an optimizer's 0-dim `step` counters, whose values the update
reads) are counted too, and are freed before `estimate` returns.
"""
from __future__ import annotations

import copy
import functools
import weakref

from .errors import format_size

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


class _StorageTracker:
    """Reports each storage it is shown to a _Counter once (and again when resized), and
    its freeing when the storage dies."""

    def __init__(self, counter):
        self.counter = counter
        self.sizes: dict = {}       # id(storage) -> the bytes counted for it

    def track(self, value) -> None:
        from ..core.tensor import Tensor   # late: core.storage imports this package
        if isinstance(value, (list, tuple)):
            for item in value:
                self.track(item)
        elif isinstance(value, dict):
            for item in value.values():
                self.track(item)
        elif isinstance(value, Tensor):
            storage = value._storage
            key, nbytes = id(storage), storage.nbytes()
            counted = self.sizes.get(key)
            if counted is None:
                self.sizes[key] = nbytes
                weakref.finalize(storage, self._free, key)
                self.counter.allocate(nbytes)
            elif counted != nbytes:             # resize_ grew or shrank it in place
                self.sizes[key] = nbytes
                self.counter.free(counted)
                self.counter.allocate(nbytes)

    def _free(self, key) -> None:
        self.counter.free(self.sizes.pop(key))


@functools.cache
def _byte_counting_mode():
    """The class of the dispatch mode that shows every operator call's outputs (and its
    inputs, which resize_ and set_ change) to a _StorageTracker (made on first use:
    dispatch sits above this package)."""
    from ..dispatch.modes import TorchDispatchMode

    class ByteCountingMode(TorchDispatchMode):
        def __init__(self, tracker: _StorageTracker):
            super().__init__()
            self.tracker = tracker

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.tracker.track((out, args, kwargs))
            return out
    return ByteCountingMode


# The public factories that take a device (PyTorch's device constructors, as far as
# glasstorch has them): `_meta_factories` gives them device='meta' when none is passed.
_FACTORIES = ("arange", "as_tensor", "asarray", "bartlett_window", "blackman_window",
              "empty", "empty_strided", "eye", "full", "hamming_window", "hann_window",
              "kaiser_window", "linspace", "logspace", "ones", "rand", "randint", "randn",
              "randperm", "range", "scalar_tensor", "tensor", "tril_indices", "triu_indices",
              "zeros")


@functools.cache
def _meta_factories():
    """The class of the function mode under which factories called without a device make
    meta tensors (`with torch.device('meta'):` in PyTorch), for this thread only."""
    import glasstorch
    from ..overrides import TorchFunctionMode
    factories = frozenset(getattr(glasstorch, n) for n in _FACTORIES if hasattr(glasstorch, n))

    class MetaFactories(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in factories and kwargs.get("device") is None:
                kwargs = {**kwargs, "device": "meta"}
            return func(*args, **kwargs)
    return MetaFactories


def _storage_bytes(tensors) -> int:
    """Bytes of the distinct storages under `tensors` (shared storages count once)."""
    from ..core.tensor import Tensor   # late: core.storage imports this package
    seen = {}
    for t in tensors:
        if isinstance(t, Tensor):
            s = t.untyped_storage()
            seen[id(s)] = s.nbytes()
    return sum(seen.values())


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
        lines += [f"{name:<30}{format_size(most):>12}{format_size(now):>12}"
                  for name, most, now in rows]
        lines += [rule, f"{'peak':<30}{'':>12}{format_size(self.peak):>12}", "=" * 54]
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
    backward. The model is neither moved nor changed; other threads are not affected.
    """
    inputs = [inputs] if _is_single(inputs) else list(inputs)
    counter = _Counter()
    with _byte_counting_mode()(_StorageTracker(counter)):
        return _run(model, inputs, target, loss_fn, optimizer, optimizer_kwargs or {},
                    step, counter)


def _run(model, inputs, target, loss_fn, optimizer, optimizer_kwargs, step, counter):
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
    with _meta_factories()():
        out = meta(*args)
        if loss_fn is None:
            loss = out.sum()
        else:
            loss = loss_fn(out) if target is None else loss_fn(out, target)
        del out
        loss.backward()
    if opt is not None and step:
        opt.step()                          # optimizers keep `step` on the CPU
    gradients = _storage_bytes(p.grad for p in params)
    state = _storage_bytes(state_tensors())
    if opt is not None:
        opt.state.clear()                   # the CPU `step` counters go now
    grads_at, state_at = counter.at_peak
    at_peak = {"parameters": parameters, "buffers": buffers, "inputs": fed,
               "gradients": grads_at, "optimizer_state": state_at}
    at_peak["activations"] = counter.peak - sum(at_peak.values())
    return MemoryEstimate(parameters, buffers, fed, gradients, state, counter.other_peak,
                          counter.peak, at_peak)
