"""A Graph as plain picklable data, for pickling GraphModules.

Pickling the Node objects themselves would recurse along the linked list (deep for a long
graph) and pickle operator objects that only make sense in the running process. Instead a
node becomes a tuple: its op, name, target (an operator by its name), and arguments in which
each Node is replaced by a reference to its name.
"""
from __future__ import annotations

from .. import _ops
from .graph import Graph
from .node import map_arg


class _NodeRef:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __reduce__(self):
        return (_NodeRef, (self.name,))


class _OpRef:
    """An OpOverload by its name (`aten.mm.default`), looked up again when loaded."""

    __slots__ = ("qualified",)

    def __init__(self, qualified: str):
        self.qualified = qualified

    def __reduce__(self):
        return (_OpRef, (self.qualified,))

    def resolve(self):
        namespace, name, overload = self.qualified.split(".")
        return getattr(getattr(_ops.ops_namespace(namespace), name), overload)


def _ref(a):
    return _OpRef(str(a)) if isinstance(a, _ops.OpOverload) else a


def graph_state(graph: Graph) -> list:
    to_ref = lambda n: _NodeRef(n.name)   # noqa: E731
    return [(n.op, n.name, _ref(n.target), map_arg(n.args, to_ref),
             map_arg(n.kwargs, to_ref), n.type) for n in graph.nodes]


def graph_from_state(state: list) -> Graph:
    graph = Graph()
    by_name: dict = {}

    def load(a):
        if isinstance(a, _NodeRef):
            return by_name[a.name]
        if isinstance(a, _OpRef):
            return a.resolve()
        if isinstance(a, (tuple, list)):
            items = [load(e) for e in a]
            return type(a)._make(items) if hasattr(type(a), "_make") else type(a)(items)
        if isinstance(a, dict):
            return {k: load(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(load(a.start), load(a.stop), load(a.step))
        return a

    for op, name, target, args, kwargs, type_expr in state:
        by_name[name] = graph.create_node(op, load(target), tuple(load(list(args))),
                                          load(dict(kwargs)), name, type_expr)
    return graph
