"""Gradients for operators defined with torch.library: `register_autograd(op, backward,
setup_context=...)` (or `custom_op(...).register_autograd`).

The formula becomes the operator's own kernel at the Autograd keys: when an input requires
grad, the call runs as a custom autograd Function — forward is the operator below autograd,
`setup_context(ctx, inputs, output)` saves what backward needs, and `backward(ctx, *grads)`
returns one gradient per input (None for the ones that have none) — so autograd, modes and
the compiler see an ordinary operator with an ordinary graph node. The node is named as
PyTorch names it: `GeneratedBackwardFor_<ns>_<name>_<overload>Backward`.
"""
from __future__ import annotations

import functools

from ..core.tensor import Tensor
from ..dispatch import dispatcher
from ..dispatch.keys import DispatchKey
from . import grad_mode
from .function import Function

_AUTOGRAD_KEYS = (DispatchKey.AutogradCPU, DispatchKey.AutogradCUDA, DispatchKey.AutogradMeta)


class _FormulaFunction(Function):
    """forward(ctx, op, ks, *args): the op below autograd; backward: its formula."""

    @staticmethod
    def forward(ctx, op, ks, *args):
        output = op.redispatch(ks, *args)
        formula = op.info["autograd_formula"]
        ctx._custom_op, ctx._n_inputs = op, len(args)
        if formula.setup_context is not None:
            formula.setup_context(ctx, args, output)
        return output

    @staticmethod
    def backward(ctx, *grads):
        grads_in = ctx._custom_op.info["autograd_formula"].backward(ctx, *grads)
        if not isinstance(grads_in, (tuple, list)):
            grads_in = (grads_in,)
        if len(grads_in) != ctx._n_inputs:
            raise RuntimeError(f"function {type(ctx).__name__} returned an incorrect number of "
                               f"gradients (expected {ctx._n_inputs}, got {len(grads_in)})")
        return (None, None) + tuple(grads_in)


def _requires_grad(args) -> bool:
    for a in args:
        if isinstance(a, Tensor):
            if a.requires_grad:
                return True
        elif isinstance(a, (list, tuple)) and any(
                isinstance(t, Tensor) and t.requires_grad for t in a):
            return True
    return False


def _kernel(function, op, ks, *args):
    if op.info.get("autograd_formula") is None:         # its Library was destroyed
        return dispatcher.fallback_for(DispatchKey.AutogradCPU)(op, ks, *args)
    if not (grad_mode.is_grad_enabled() and _requires_grad(args)):
        return op.redispatch(ks, *args)
    return function.apply(op, ks, *args)


def install(op) -> None:
    """Give `op` the Autograd kernel that runs its registered formula (once per op)."""
    if op.info.get("autograd_formula_installed"):
        return
    schema = op.schema
    name = (f"GeneratedBackwardFor_{schema.namespace}_{schema.name}_"
            f"{schema.overload_name or 'default'}")
    function = type(name, (_FormulaFunction,), {})
    kernel = functools.partial(_kernel, function)
    for key in _AUTOGRAD_KEYS:
        op.register(key, kernel)
    op.info["autograd_formula_installed"] = True
