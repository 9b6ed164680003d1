"""functional_call: run a module with other tensors in place of its parameters and buffers.

Within the call the module's entries named in `parameters_and_buffers` (dotted names) are
swapped for the given tensors, so gradients flow to those tensors instead; the module is
restored afterwards, also when the call raises.
"""
from __future__ import annotations

import contextlib
import warnings

__all__ = ["functional_call"]


def _owner(module, name: str):
    *path, leaf = name.split(".")
    for part in path:
        module = getattr(module, part)
    return module, leaf


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers: dict, *, tie_weights=False,
                          strict=False):
    if strict:
        expected = {n for n, _ in module.named_parameters(remove_duplicate=False)} | {
            n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(expected - set(parameters_and_buffers))
        unexpected = sorted(set(parameters_and_buffers) - expected)
        if missing or unexpected:
            parts = []
            if unexpected:
                parts.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
            if missing:
                parts.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
            raise RuntimeError("Error(s) in reparametrizing for "
                               f"{module._get_name()}:\n\t" + "\n\t".join(parts))
    saved = []
    try:
        for name, value in parameters_and_buffers.items():
            owner, leaf = _owner(module, name)
            table = owner._parameters if leaf in owner._parameters else (
                owner._buffers if leaf in owner._buffers else None)
            if table is None:
                saved.append((owner, leaf, None, owner.__dict__.get(leaf)))
                object.__setattr__(owner, leaf, value)
            else:
                saved.append((owner, leaf, table, table[leaf]))
                table[leaf] = value
        yield
    finally:
        for owner, leaf, table, old in reversed(saved):
            if table is not None:
                table[leaf] = old
            elif old is None:
                owner.__dict__.pop(leaf, None)
            else:
                object.__setattr__(owner, leaf, old)


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """module(*args, **kwargs) computed with `parameters_and_buffers` (a dict, or a tuple of
    dicts) standing in for the module's own tensors of the same names."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    if isinstance(parameters_and_buffers, (list, tuple)):
        merged = {}
        for d in parameters_and_buffers:
            for key in d:
                if key in merged:
                    raise ValueError(f"{key} appeared in multiple dictionaries; behavior of "
                                     f"functional call is ambiguous")
            merged.update(d)
        parameters_and_buffers = merged
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights,
                               strict=strict):
        return module(*args, **(kwargs or {}))
