"""functional_call and stack_module_state: modules as functions of their parameters.

Together with vmap they run an ensemble of same-shaped models as one batched model:
`stack_module_state` stacks each parameter and buffer of the models along a new first
dimension, and `vmap(functional_call)` maps over it.
"""
from __future__ import annotations

from ..nn.utils.stateless import _functional_call as _stateless_call
from ..ops.shape.joining import stack

__all__ = ["functional_call", "stack_module_state"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """`module(*args, **kwargs)` with the parameters and buffers named in
    `parameter_and_buffer_dicts` (one dict, or several with distinct keys) in place of its
    own; the module itself is left unchanged."""
    return _stateless_call(module, parameter_and_buffer_dicts, args, kwargs,
                           tie_weights=tie_weights, strict=strict)


def stack_module_state(models) -> tuple:
    """({name: stacked parameter}, {name: stacked buffer}) of same-shaped `models`. The
    stacked parameters are new leaves that require grad (when the models' do)."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/"
                           "eval mode.")
    first = type(models[0])
    if not all(type(m) is first for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named_of):
        names = [name for name, _ in named_of(models[0])]
        out = {}
        for name in names:
            tensors = [dict(named_of(m))[name] for m in models]
            t = stack([x.detach() for x in tensors])
            out[name] = t.requires_grad_(tensors[0].requires_grad) if (
                t.is_floating_point() or t.is_complex()) else t
        return out
    return (stacked(lambda m: m.named_parameters()), stacked(lambda m: m.named_buffers()))
