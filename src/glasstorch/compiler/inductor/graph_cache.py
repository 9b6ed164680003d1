"""The compiled-graph cache: a graph compiled again is not lowered again.

PyTorch's FX graph cache idea, in memory. A graph's compile (decomposition, lowering,
scheduling, code generation, loading the kernels' library) depends only on its nodes, the
layout of its inputs and the compiler's settings; a second compile of an equal graph (the
same model after `torch._dynamo.reset()`, a second model of the same shape, a backward
traced again) reuses the first's `Artefacts`. That is safe because the artefacts hold no
state of a call: the host code makes its buffers on every call, and its compile-time
constants (an `arange` the graph only reads) are never written.

The key is exact, never a hash: each node's op and target, its arguments with nodes named
by position and numbers by type and `repr` (so `1`, `1.0`, `True` and `-0.0` differ), the
inputs' shapes, strides and dtypes, and the environment variables the code generator reads
(`GLASSTORCH_*`, `CC`; a fresh `GLASSTORCH_CACHE_DIR` is a cold compile). A graph holding an
argument the key cannot describe exactly (an object that is not a number, string, dtype,
device, layout or memory format, or an op) is not cached. Only CPU graphs are cached;
`GLASSTORCH_FX_GRAPH_CACHE=0` turns the cache off, `clear()` empties it.
"""
from __future__ import annotations

import os
from collections import OrderedDict

from ..._ops import OpOverload
from ...core import dtype as dt
from ...core.device import device
from ...core.tensor import Tensor, layout, memory_format
from ...fx.node import Node

SIZE = 64
"""At most this many graphs are kept, the least recently used dropped first."""

_entries: OrderedDict = OrderedDict()
hits = 0            # how many compiles were served from the cache (tests count them)


class _NotKeyable(Exception):
    pass


def clear() -> None:
    _entries.clear()


def lookup(gm, inputs):
    """(key, artefacts): the cached artefacts for this graph and inputs, or None; key is
    None when the graph cannot be cached."""
    global hits
    key = _key(gm, inputs)
    if key is None:
        return None, None
    artefacts = _entries.get(key)
    if artefacts is not None:
        _entries.move_to_end(key)
        hits += 1
    return key, artefacts


def store(key, artefacts) -> None:
    if key is None:
        return
    _entries[key] = artefacts
    while len(_entries) > SIZE:
        _entries.popitem(last=False)


def _key(gm, inputs):
    if os.environ.get("GLASSTORCH_FX_GRAPH_CACHE", "1") == "0" or \
            os.environ.get("GLASSTORCH_COMPILE_DEBUG", "0") not in ("", "0"):
        return None
    layouts = []
    for x in inputs:
        if not isinstance(x, Tensor) or x._storage.device.type != "cpu":
            return None
        layouts.append((x._shape, x._stride, x.dtype))
    index: dict = {}
    arg = _arguments(index)
    nodes = []
    try:
        for i, node in enumerate(gm.graph.nodes):
            index[node] = i
            nodes.append((node.op, _target(node.target), arg(node._args), arg(node._kwargs)))
    except _NotKeyable:
        return None
    environment = tuple(sorted((k, v) for k, v in os.environ.items()
                               if k.startswith("GLASSTORCH_") or k == "CC"))
    return tuple(nodes), tuple(layouts), environment


def _target(target):
    if type(target) is OpOverload or isinstance(target, (OpOverload, str)):
        return target
    if callable(target) and getattr(target, "__module__", None) == "_operator":
        return target                                   # operator.getitem
    raise _NotKeyable


_ATOMS = frozenset({type(None), bool, int, float, str, dt.dtype, device, layout, memory_format})


def _arguments(index: dict):
    """The exact spelling of a node's arguments: a node is its position (a number is a
    (type, repr) pair), containers keep their type."""
    def arg(value):
        kind = type(value)
        if kind is Node:
            return index[value]
        if kind in _ATOMS:
            return kind, repr(value)
        if kind is tuple or kind is list or isinstance(value, (list, tuple)):
            return (kind, *[arg(v) for v in value])
        if isinstance(value, dict):
            return (kind, *[(k, arg(v)) for k, v in value.items()])
        raise _NotKeyable
    return arg
