"""Operator declarations, and `glasstorch.ops.<namespace>.<name>` access to operators.

`glasstorch.ops.aten.add` is the packet of add's overloads; `.Tensor` (or `.default`) is
its OpOverload (glasstorch/_ops.py), callable like the op itself and dispatching through
every key.
"""
from __future__ import annotations

import importlib
import importlib.util

from .._ops import ops_namespace


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")   # a declaration module
    namespace = globals()[name] = ops_namespace(name)   # later lookups skip this function
    return namespace
