"""Activation checkpointing: trade compute for memory by recomputing a region in backward.

`checkpoint(fn, *args)` runs `fn` without recording a graph, so none of the tensors its
operations would save for backward stay alive; only the inputs are kept. When the gradient
reaches the checkpointed region, its backward restores the RNG state seen by the forward
(so dropout draws the same mask), reruns `fn` with grad enabled on detached inputs, and
backpropagates through that fresh graph: parameters used inside get their .grad, the
inputs' gradients flow on to the rest of the graph.
"""
from __future__ import annotations

import contextlib
import functools
import warnings

from ..autograd import Function, backward as _autograd_backward, enable_grad
from ..autograd.grad_mode import is_grad_enabled
from ..core.tensor import Tensor
from ..random import fork_rng, get_rng_state, set_rng_state

__all__ = ["checkpoint", "checkpoint_sequential", "noop_context_fn"]

_USE_REENTRANT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
    "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
    "exception. use_reentrant=False is recommended, but if you need to preserve the current "
    "default behavior, you can pass use_reentrant=True. Refer to docs for more details on "
    "the differences between the two variants.")


class CheckpointFunction(Function):
    """forward: run without a graph and remember inputs and RNG state; backward: rerun
    with a graph and backpropagate through it."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, check_metadata, *args):
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.rng_state = get_rng_state()
        ctx.tensor_slots = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.args = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_slots))
        outputs = run_function(*args)
        ctx.output_meta = _metadata(outputs) if check_metadata else None
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        args = list(ctx.args)
        for slot, t in zip(ctx.tensor_slots, ctx.saved_tensors):
            args[slot] = t.detach().requires_grad_(t.requires_grad)
        with fork_rng(devices=[], enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                set_rng_state(ctx.rng_state)
            with enable_grad():
                outputs = ctx.run_function(*args)
        if ctx.output_meta is not None and _metadata(outputs) != ctx.output_meta:
            raise RuntimeError(
                "torch.utils.checkpoint: Recomputed values have different metadata than "
                f"during the forward pass: forward gave {ctx.output_meta}, the recomputation "
                f"{_metadata(outputs)} (shape, dtype, device per output). Make the "
                "checkpointed function deterministic, or pass determinism_check='none'.")
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


def noop_context_fn():
    """The default context_fn: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


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
    elif context_fn is not noop_context_fn or debug:
        raise NotImplementedError("glasstorch's checkpoint does not support `context_fn` or "
                                  "`debug`")
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    run = functools.partial(function, **kwargs) if kwargs else function
    check = not reentrant and determinism_check == "default"
    needs_grad = any(isinstance(a, Tensor) and a.requires_grad for a in args)
    if is_grad_enabled() and not needs_grad:
        if reentrant:
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be "
                          "None", stacklevel=2)
        else:
            return CheckpointFunction.apply(_drop_last(run), preserve, check, *args,
                                            _grad_anchor())
    return CheckpointFunction.apply(run, preserve, check, *args)


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
