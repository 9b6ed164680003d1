"""Activation checkpointing: trade compute for memory by recomputing a region in backward.

`checkpoint(fn, *args)` runs `fn` without recording a graph, so none of the tensors its
operations would save for backward stay alive; only the inputs are kept. When the gradient
reaches the checkpointed region, its backward restores the RNG state seen by the forward
(so dropout draws the same mask), reruns `fn` with grad enabled on detached inputs, and
backpropagates through that fresh graph: parameters used inside get their .grad, the
inputs' gradients flow on to the rest of the graph.

Selective checkpointing (`context_fn=partial(create_selective_checkpoint_contexts, policy)`)
keeps the outputs of the ops the policy says to save: a dispatch mode caches them during the
forward, and another hands them back instead of recomputing them during the rerun.
"""
from __future__ import annotations

import contextlib
import enum
import functools
import warnings
from collections import defaultdict

from .._ops import OpOverload, OpOverloadPacket
from ..autograd import Function, backward as _autograd_backward, enable_grad
from ..autograd.grad_mode import is_grad_enabled
from ..core.tensor import Tensor
from ..dispatch.modes import TorchDispatchMode
from ..ops import aten
from ..random import fork_rng, get_rng_state, set_rng_state
from ._pytree import tree_map

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "get_device_states",
           "set_device_states", "noop_context_fn", "set_checkpoint_early_stop",
           "DefaultDeviceType", "set_checkpoint_debug_enabled", "CheckpointPolicy",
           "SelectiveCheckpointContext", "create_selective_checkpoint_contexts",
           "SAC_IGNORED_OPS", "GraphExecGroup"]


class CheckpointError(RuntimeError):
    """The recomputation did not reproduce the forward (other shapes, dtypes or ops)."""


_checkpoint_debug_enabled = None
_checkpoint_early_stop = True


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Within the block, `enabled` (True/False) overrides every checkpoint's `debug`
    argument; None defers to it."""
    global _checkpoint_debug_enabled
    previous, _checkpoint_debug_enabled = _checkpoint_debug_enabled, enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = previous


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Whether checkpoints run in the block may stop recomputing once every needed tensor
    exists. glasstorch always reruns the whole region, so results are the same either way."""
    global _checkpoint_early_stop
    previous, _checkpoint_early_stop = _checkpoint_early_stop, bool(enable)
    try:
        yield
    finally:
        _checkpoint_early_stop = previous


def detach_variable(inputs: tuple) -> tuple:
    """The tensors of `inputs` detached, each keeping its requires_grad; others as given."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    return tuple(x.detach().requires_grad_(x.requires_grad) if isinstance(x, Tensor) else x
                 for x in inputs)


def check_backward_validity(inputs) -> None:
    if not any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


class DefaultDeviceType:
    """The device type whose RNG states a checkpoint saves when its inputs are all on the
    CPU: the current accelerator's, or "cpu" when there is none."""

    _default_device_type = None

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        if not DefaultDeviceType._default_device_type:
            from .. import accelerator
            current = accelerator.current_accelerator(True)
            DefaultDeviceType._default_device_type = current.type if current else "cpu"
        return DefaultDeviceType._default_device_type


def _device_module(device_type: str):
    from .. import cuda
    return cuda if device_type == "cuda" else None


def get_device_states(*args) -> tuple:
    """([device index...], [RNG state...]) of the accelerator devices the tensors in `args`
    live on, so a recomputation can replay their random numbers."""
    devices = []
    for arg in args:
        for t in (arg if isinstance(arg, (list, tuple)) else (arg,)):
            if isinstance(t, Tensor) and t.device.type not in ("cpu", "meta") \
                    and t.device.index not in devices:
                devices.append(t.device.index or 0)
    device_type = DefaultDeviceType.get_device_type()
    module = _device_module(device_type)
    states = [module.get_rng_state(f"{device_type}:{i}") for i in devices] if devices else []
    return devices, states


def set_device_states(devices, states, *, device_type=None) -> None:
    """Put back the RNG states `get_device_states` returned."""
    device_type = device_type or DefaultDeviceType.get_device_type()
    if device_type == "meta" or not devices:
        return
    module = _device_module(device_type)
    for device, state in zip(devices, states):
        module.set_rng_state(state, f"{device_type}:{device}")


class GraphExecGroup:
    """A block in which several backward calls over separate parts of a graph each
    recompute a checkpointed region at most once. glasstorch recomputes a region only when
    its own backward runs, which is already once per backward; groups do not nest."""

    _current = None

    def __enter__(self):
        if GraphExecGroup._current is not None:
            raise RuntimeError("GraphExecGroup contexts cannot be nested. Already inside "
                               f"group {GraphExecGroup._current}")
        GraphExecGroup._current = self
        return self

    def __exit__(self, *exc) -> None:
        GraphExecGroup._current = None

    @classmethod
    def _get_current_group(cls):
        return cls._current


# ---- selective checkpointing ------------------------------------------------------------
class CheckpointPolicy(enum.Enum):
    """Per op: save its output in forward (MUST/PREFER_SAVE) or recompute it in backward
    (MUST/PREFER_RECOMPUTE); the CPU_OFFLOAD kinds save it as well."""
    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


_SAVING = (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE,
           CheckpointPolicy.MUST_CPU_OFFLOAD, CheckpointPolicy.PREFER_CPU_OFFLOAD)


class SelectiveCheckpointContext:
    """What a policy function is told about the call: whether it is the recomputation,
    and the op's output (in the forward)."""

    def __init__(self, *, is_recompute, op_output=None) -> None:
        self.is_recompute = is_recompute
        self.op_output = op_output


# Ops the recomputation may call a different number of times than the forward.
SAC_IGNORED_OPS = {aten.detach.default}

_MISMATCH = ("This can happen if the operations in the checkpointed region are "
             "nondeterministic or depend on global state that changed between forward and "
             "backward.")
_RECOMPUTE, _CONSUMED = object(), object()


class _Cached:
    """A saved output and its version, so a later in-place change to it is caught."""

    def __init__(self, value):
        self.value = value.detach() if isinstance(value, Tensor) else value
        self.version = value._version if isinstance(value, Tensor) else None

    def get(self, allow_mutation: bool):
        if self.version is not None and not allow_mutation \
                and self.value._version != self.version:
            raise RuntimeError("Tensor cached during selective activation checkpoint has "
                               "been mutated")
        return self.value


class _CachingMode(TorchDispatchMode):
    """Forward: run every op, and keep the outputs of those the policy saves."""

    def __init__(self, policy_fn, storage):
        super().__init__()
        self.policy_fn, self.storage = policy_fn, storage
        self.calls = defaultdict(int)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func in SAC_IGNORED_OPS:
            return out
        index = self.calls[func]
        self.calls[func] += 1
        policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False, op_output=out),
                                func, *args, **kwargs)
        if isinstance(policy, bool):
            policy = CheckpointPolicy.MUST_SAVE if policy else \
                CheckpointPolicy.PREFER_RECOMPUTE
        self.storage[func][index] = tree_map(_Cached, out) if policy in _SAVING else _RECOMPUTE
        return out


class _CachedMode(TorchDispatchMode):
    """Recomputation: hand back each saved output once, run the other ops again (and the
    ops the forward did not call at all)."""

    def __init__(self, storage, allow_cache_entry_mutation=False):
        super().__init__()
        self.storage, self.allow_mutation = storage, allow_cache_entry_mutation
        self.calls = defaultdict(int)

    def __enter__(self):
        self.calls.clear()
        return super().__enter__()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in SAC_IGNORED_OPS:
            return func(*args, **kwargs)
        index = self.calls[func]
        self.calls[func] += 1
        entries = self.storage.get(func)
        if entries is None:
            # An op the forward never called: under grad, glasstorch records an in-place
            # op as clone + functional op + copy_, which the no-grad forward does not run.
            return func(*args, **kwargs)
        entry = entries.get(index)
        if entry is None:
            raise RuntimeError(f"{func} invocation index {index} encountered during "
                               f"backward but not found in storage. {_MISMATCH}")
        if entry is _CONSUMED:
            raise RuntimeError("Trying to backward an extra time. You are only allowed to "
                               "backward once on any region computed under selective "
                               "activation checkpoint.")
        if entry is _RECOMPUTE:
            return func(*args, **kwargs)
        entries[index] = _CONSUMED
        return tree_map(lambda cached: cached.get(self.allow_mutation), entry)


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The (forward, recomputation) context pair for checkpoint's `context_fn`.
    `policy_fn_or_list` is policy_fn(ctx, op, *args, **kwargs) -> CheckpointPolicy (or a
    bool, True meaning MUST_SAVE), or a list of OpOverloads to save."""
    if isinstance(policy_fn_or_list, list):
        ops = policy_fn_or_list
        for op in ops:
            if not isinstance(op, OpOverload):
                hint = ("Please update the OpOverloadPacket to a specific OpOverload. For "
                        "example, if you have `torch.ops.aten.mm`, change it to "
                        "`torch.ops.aten.mm.default`.") \
                    if isinstance(op, OpOverloadPacket) else ""
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: "
                                 f"{op} of type {type(op)}. {hint}")

        def policy_fn(ctx, op, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if op in ops \
                else CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage = defaultdict(dict)
    return _CachingMode(policy_fn, storage), _CachedMode(storage, allow_cache_entry_mutation)


class _OpTrace(TorchDispatchMode):
    """Records the ops a run calls, for debug=True's report of where two runs differ."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))

_USE_REENTRANT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
    "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
    "exception. use_reentrant=False is recommended, but if you need to preserve the current "
    "default behavior, you can pass use_reentrant=True. Refer to docs for more details on "
    "the differences between the two variants.")


def noop_context_fn():
    """The default context_fn: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


class CheckpointFunction(Function):
    """forward: run without a graph and remember inputs and RNG state; backward: rerun
    with a graph and backpropagate through it."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, check_metadata, *args,
                context_fn=noop_context_fn, debug=False):
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.rng_state = get_rng_state()
            ctx.devices, ctx.device_states = get_device_states(*args)
        ctx.tensor_slots = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.args = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_slots))
        forward_context, ctx.recompute_context = context_fn()
        ctx.trace = _OpTrace() if debug else None
        with forward_context, ctx.trace or contextlib.nullcontext():
            outputs = run_function(*args)
        ctx.output_meta = _metadata(outputs) if check_metadata else None
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        args = list(ctx.args)
        for slot, t in zip(ctx.tensor_slots, ctx.saved_tensors):
            args[slot] = t.detach().requires_grad_(t.requires_grad)
        devices = ctx.devices if ctx.preserve_rng_state else []
        trace = _OpTrace() if ctx.trace is not None else None
        with fork_rng(devices=devices, enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                set_rng_state(ctx.rng_state)
                set_device_states(ctx.devices, ctx.device_states)
            with enable_grad(), ctx.recompute_context, trace or contextlib.nullcontext():
                outputs = ctx.run_function(*args)
        if ctx.output_meta is not None and _metadata(outputs) != ctx.output_meta:
            ops = (f"\nOperators run in the forward: {ctx.trace.ops}\nOperators run in the "
                   f"recomputation: {trace.ops}") if trace is not None else ""
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values have different metadata than "
                f"during the forward pass: forward gave {ctx.output_meta}, the recomputation "
                f"{_metadata(outputs)} (shape, dtype, device per output). Make the "
                "checkpointed function deterministic, or pass determinism_check='none'."
                + ops)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if pairs:
            _autograd_backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, None) + tuple(
            a.grad if isinstance(a, Tensor) and a.requires_grad else None for a in args)


def _metadata(outputs) -> list:
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    return [(tuple(o.shape), o.dtype, o.device) if isinstance(o, Tensor) else None
            for o in outputs]


_SEQUENTIAL_WARNING = (
    "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
    "passed explicitly. In version 2.9 we will raise an exception if use_reentrant is not "
    "passed. use_reentrant=False is recommended, but if you need to preserve the current "
    "default behavior, you can pass use_reentrant=True. Refer to docs for more details on "
    "the differences between the two variants.")


def _resolve_use_reentrant(use_reentrant, message=_USE_REENTRANT_WARNING):
    """None warns as torch 2.13 does and keeps its default, the reentrant variant."""
    if use_reentrant is None:
        warnings.warn(message, stacklevel=3)
        return True
    return bool(use_reentrant)


def _grad_anchor():
    """The dummy leaf the non-reentrant variant adds when no input requires grad, so that
    parameters used inside the region still receive gradients."""
    from ..ops.creation.factories import empty
    return empty(0, requires_grad=True)


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, early_stop=True, **kwargs):
    """Run `function(*args, **kwargs)` without keeping its intermediate tensors; they are
    recomputed in backward. `preserve_rng_state=True` (a keyword) replays the same random
    numbers in the recomputation."""
    preserve = kwargs.pop("preserve_rng_state", True)
    reentrant = _resolve_use_reentrant(use_reentrant)
    if reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    run = functools.partial(function, **kwargs) if kwargs else function
    check = not reentrant and determinism_check == "default"
    if _checkpoint_debug_enabled is not None:
        debug = _checkpoint_debug_enabled
    extra = {} if reentrant else {"context_fn": context_fn, "debug": debug}
    needs_grad = any(isinstance(a, Tensor) and a.requires_grad for a in args)
    if is_grad_enabled() and not needs_grad:
        if reentrant:
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be "
                          "None", stacklevel=2)
        else:
            return CheckpointFunction.apply(_drop_last(run), preserve, check, *args,
                                            _grad_anchor(), **extra)
    return CheckpointFunction.apply(run, preserve, check, *args, **extra)


def _drop_last(run):
    return lambda *args: run(*args[:-1])


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Split a sequence of modules/functions into `segments` chunks and checkpoint every
    chunk but the last, passing one output to the next chunk's input."""
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    reentrant = _resolve_use_reentrant(use_reentrant, _SEQUENTIAL_WARNING)
    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())
    functions = list(functions)

    def run_segment(start, end):
        def forward(x):
            for fn in functions[start:end + 1]:
                x = fn(x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run_segment(start, end), input, use_reentrant=reentrant,
                           preserve_rng_state=preserve)
    return run_segment(end + 1, len(functions) - 1)(input)
