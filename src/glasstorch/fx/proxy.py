"""`torch.fx.proxy`: Proxy, the stand-in value symbolic tracing runs a program on.

Every operation on a Proxy (an operator, a method call, an attribute read, a glasstorch
function reaching `__torch_function__`) records a Node in the tracer's graph and returns a
new Proxy for its result. What a Proxy cannot answer without a real value (its truth, its
length, iterating it) raises, because the recorded program could not branch on it.
"""
from __future__ import annotations

import dis
import inspect
import operator
from typing import Any, Callable

from .._ops import OpOverload
from ..core.device import device
from ..core.dtype import dtype
from ..core.tensor import Tensor, layout, memory_format
from .graph import Graph, magic_methods, reflectable_magic_methods
from .node import Node, map_aggregate


class TraceError(ValueError):
    pass


class TracerBase:
    """What a Proxy needs from its tracer: a graph, node and proxy factories, and the
    answers to the questions a Proxy cannot answer itself."""

    graph: Graph
    module_stack: dict

    def create_node(self, kind: str, target, args: tuple, kwargs: dict,
                    name: str | None = None, type_expr=None) -> Node:
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        stack = getattr(self, "module_stack", None)
        if stack:
            node.meta["nn_module_stack"] = dict(stack)
        return node

    def proxy(self, node: Node) -> "Proxy":
        return Proxy(node, self)

    def create_proxy(self, kind: str, target, args: tuple, kwargs: dict,
                     name: str | None = None, type_expr=None,
                     proxy_factory_fn: Callable | None = None) -> "Proxy":
        """Record `target(*args, **kwargs)` as a node (arguments go through `create_arg`)
        and return a Proxy for its result."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a) -> Any:
        """Turn a value into something a Node argument can hold: Proxies become their
        Nodes; containers are rebuilt; constants stay."""
        if isinstance(a, Proxy):
            return a.node
        if hasattr(a, "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple):
            args = tuple(self.create_arg(e) for e in a)
            return type(a)._make(args) if hasattr(type(a), "_make") else args
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if isinstance(self.create_arg(k), Node):
                    raise RuntimeError(f"Keys for dictionaries used as an argument cannot "
                                       f"contain a Node. Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if a is None or a is ... or isinstance(a, (str, int, float, bool, complex)):
            return a
        if isinstance(a, Node):
            return a
        if isinstance(a, (dtype, device, memory_format, layout, OpOverload)):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: "Proxy") -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to "
                         "control flow")

    def iter(self, obj: "Proxy"):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function argument. "
                         "See the torch.fx docs on pytorch.org for a more detailed explanation "
                         "of what types of control flow can be traced, and check out the Proxy "
                         "docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj: "Proxy"):
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """The tracer of Proxies made by hand over an existing graph: nodes go onto it."""

    def __init__(self, graph: Graph):
        super().__init__()
        self.graph = graph
        self.module_stack = {}


def _find_tracer(values) -> TracerBase | None:
    tracers: list = []

    def look(x):
        if isinstance(x, Proxy) and x.tracer not in tracers:
            tracers.append(x.tracer)
        return x

    map_aggregate(values, look)
    if len(tracers) > 1:
        raise RuntimeError(f"Found multiple different tracers {tracers} while trying to "
                           "trace operations")
    return tracers[0] if tracers else None


class Proxy:
    """A value being traced: it stands for the result of `node`. Use it as you would a
    tensor; operations on it become Nodes."""

    def __init__(self, node: Node, tracer: TracerBase | None = None):
        self.tracer = GraphAppendingTracer(node.graph) if tracer is None else tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> "Attribute":
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, d):
        self.__dict__ = d

    def __call__(self, *args, **kwargs) -> "Proxy":
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        # `a, b = proxy` unpacks a known number of values: read it from the caller's
        # bytecode, as PyTorch does; any other iteration has no known length.
        frame = inspect.currentframe().f_back
        instructions = list(dis.get_instructions(frame.f_code))
        for i, inst in enumerate(instructions):
            if inst.offset == frame.f_lasti:
                for candidate in instructions[i:i + 2]:
                    if candidate.opname == "UNPACK_SEQUENCE":
                        return (self[k] for k in range(candidate.argval))
                break
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you "
                           "want this call to be recorded, please call torch.fx.wrap('len') "
                           "at module scope")

    def keys(self):
        return self.tracer.keys(self)

    def __abs__(self) -> "Proxy":
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    @classmethod
    def __torch_function__(cls, orig_method, types, args=(), kwargs=None):
        """A glasstorch function or Tensor method called with a Proxy among its arguments
        becomes a call_function (or call_method) node."""
        kwargs = kwargs or {}
        tracer = _find_tracer((args, kwargs))
        if tracer is None:
            raise RuntimeError("__torch_function__ reached Proxy without a Proxy argument")
        if _is_tensor_method(orig_method):
            return tracer.create_proxy("call_method", orig_method.__name__, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs)


def _is_tensor_method(fn) -> bool:
    name = getattr(fn, "__name__", None)
    return name is not None and getattr(Tensor, name, None) is fn


class Attribute(Proxy):
    """`proxy.name`: made lazily, so `proxy.relu()` records one call_method node and a
    bare attribute read records a `getattr` call_function only when used."""

    def __init__(self, root: Proxy, attr: str):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self) -> Node:
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _define_operators() -> None:
    for name in magic_methods:
        target = getattr(operator, name)

        def impl(self, *rest, target=target):
            return self.tracer.create_proxy("call_function", target, (self,) + rest, {})

        impl.__name__ = f"__{name.rstrip('_')}__"
        setattr(Proxy, impl.__name__, impl)
    for name in ("eq", "ne", "lt", "gt", "le", "ge", "pos", "neg", "invert"):
        target = getattr(operator, name)

        def impl(self, *rest, target=target):
            return self.tracer.create_proxy("call_function", target, (self,) + rest, {})

        setattr(Proxy, f"__{name}__", impl)
    for name in reflectable_magic_methods:
        target = getattr(operator, name)

        def rimpl(self, rhs, target=target):
            return self.tracer.create_proxy("call_function", target, (rhs, self), {})

        setattr(Proxy, f"__r{name.rstrip('_')}__", rimpl)


_define_operators()
Proxy.__hash__ = object.__hash__       # __eq__ records a node; identity stays the hash
