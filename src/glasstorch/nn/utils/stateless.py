"""nn.utils.stateless: call a module with parameters and buffers it does not own.

`functional_call` swaps the given tensors into the module's `_parameters` / `_buffers`
entries for the duration of one call and puts the originals back afterwards, even when the
call raises: the module is left exactly as it was.
"""
from __future__ import annotations

import warnings
from contextlib import contextmanager

__all__ = ["functional_call"]


def _owner(module, name: str):
    """(submodule, attribute) that a dotted name like 'layer.0.weight' refers to."""
    *path, attr = name.split(".")
    for part in path:
        module = getattr(module, part)
    return module, attr


def _tied_names(module) -> dict:
    """{name: [other names of the same tensor]} for parameters and buffers shared between
    places in the module (a tied embedding and output layer)."""
    by_id: dict = {}
    for named in (module.named_parameters(remove_duplicate=False),
                  module.named_buffers(remove_duplicate=False)):
        for name, t in named:
            by_id.setdefault(id(t), []).append(name)
    return {name: names for names in by_id.values() if len(names) > 1 for name in names}


def _check_strict(module, given: dict) -> None:
    expected = {name for name, _ in module.named_parameters(remove_duplicate=False)}
    expected |= {name for name, _ in module.named_buffers(remove_duplicate=False)}
    missing = sorted(expected - set(given))
    unexpected = sorted(set(given) - expected)
    messages = []
    if unexpected:
        messages.append("Unexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + ".")
    if missing:
        messages.append("Missing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
    if messages:
        raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                           + "\n\t".join(messages))


@contextmanager
def _reparametrize_module(module, tensors: dict, *, tie_weights: bool = True,
                          strict: bool = False):
    """Within the block, `module`'s named parameters and buffers are the given tensors."""
    tensors = dict(tensors)
    if tie_weights:
        tied = _tied_names(module)
        for name in list(tensors):
            for other in tied.get(name, ()):
                if other in tensors and tensors[other] is not tensors[name]:
                    raise ValueError(f"functional_call got multiple values for keys "
                                     f"['{name}', '{other}'], which are tied. Consider using "
                                     "tie_weights=False")
                tensors.setdefault(other, tensors[name])
    if strict:
        _check_strict(module, tensors)
    saved = []
    try:
        for name, value in tensors.items():
            owner, attr = _owner(module, name)
            d = owner.__dict__
            table = (d["_parameters"] if attr in d["_parameters"] else
                     d["_buffers"] if attr in d["_buffers"] else None)
            if table is None:       # a new attribute: set it plainly, delete it afterwards
                saved.append((owner, attr, None, None))
                object.__setattr__(owner, attr, value)
            else:
                saved.append((owner, attr, table, table[attr]))
                table[attr] = value
        yield
    finally:
        for owner, attr, table, old in reversed(saved):
            if table is None:
                object.__delattr__(owner, attr)
            else:
                table[attr] = old


def _merge(parameter_and_buffer_dicts) -> dict:
    if isinstance(parameter_and_buffer_dicts, dict):
        return parameter_and_buffer_dicts
    merged: dict = {}
    for d in parameter_and_buffer_dicts:
        merged.update(d)
    seen = [k for k in merged if sum(k in d for d in parameter_and_buffer_dicts) > 1]
    if seen:
        raise ValueError(f"{seen} appeared in multiple dictionaries; behavior of functional "
                         "call is ambiguous")
    return merged


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """`module(*args, **kwargs)` with its parameters and buffers replaced by the tensors in
    `parameters_and_buffers` (names as in `named_parameters()`); the module is unchanged
    afterwards. Names not given keep the module's own tensors unless `strict`. Deprecated in
    favour of `torch.func.functional_call`, as in PyTorch."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                     tie_weights: bool = True, strict: bool = False):
    """functional_call without the deprecation warning (torch.func's)."""
    tensors = _merge(parameters_and_buffers)
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, tensors, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)
