"""Seeing the machinery: what the dispatcher did with a call, and the state it reads.

    with glasstorch.debug.dispatch_trace() as trace:
        x.add_(y)
    print(trace)                                   # each call's key set, kernels and times
    print(glasstorch.debug.dispatch_table("add"))  # which kernel serves each key, and why
    glasstorch.debug.local_keyset()                # this thread's included/excluded keys
    print(glasstorch.debug.explain(t))             # t's storage, strides, sharers, bytes
    glasstorch.debug.set_debug_level(2)            # GLASSTORCH_DEBUG=2: print calls, kernels
    with glasstorch.debug.doctor(): train()        # what is wrong with a training run
"""
from __future__ import annotations

from collections import namedtuple

from ..dispatch import keys as _keys
from ..dispatch.keys import DispatchKey, DispatchKeySet
from ..dispatch.trace import DispatchTrace, TraceEvent, dispatch_table, dispatch_trace
from .explain import Explanation, explain
from .graph import graph_dot, graph_text
from .levels import get_debug_level, set_debug_level

LocalKeySet = namedtuple("LocalKeySet", "included excluded")
LocalKeySet.__doc__ = "This thread's include and exclude key sets (PyTorch's TLS key sets)."


def dispatch_keys(tensor) -> DispatchKeySet:
    """The dispatch keys a tensor carries (torch._C._dispatch_keys): a CPU tensor has
    DispatchKeySet(CPU, ADInplaceOrView, AutocastCPU), and AutogradCPU too while it requires
    grad (PyTorch's tensors carry their Autograd key always)."""
    return DispatchKeySet(tensor._keyset)


def local_keyset() -> LocalKeySet:
    """The keys this thread adds to every call's key set, and the keys it removes
    (torch._C._dispatch_tls_local_include_set / _exclude_set)."""
    return LocalKeySet(DispatchKeySet(_keys.local_keys.included),
                       DispatchKeySet(_keys.local_keys.excluded))


def __getattr__(name):
    if name == "doctor":   # the doctor watches nn and optim (above debug): loaded on first use,
        import importlib   # by name, as `from . import doctor` would come back here first
        return importlib.import_module(f"{__name__}.doctor")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DispatchKey", "DispatchKeySet", "DispatchTrace", "Explanation", "LocalKeySet",
           "TraceEvent", "dispatch_keys", "dispatch_table", "dispatch_trace", "explain",
           "get_debug_level", "graph_dot", "graph_text", "local_keyset", "set_debug_level"]
