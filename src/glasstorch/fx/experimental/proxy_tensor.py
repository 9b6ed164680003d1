"""`torch.fx.experimental.proxy_tensor`: `make_fx`, tracing through the dispatcher.

`make_fx(f)(*args)` runs `f` on the real arguments under a `TorchDispatchMode` that records
every operator call reaching the Python dispatch key as a call_function node whose target is
the `OpOverload` (`torch.ops.aten.mm.default`). The Python key sits below autograd, so what
is recorded is what the backends would run: composite ops already decomposed, and, when `f`
calls `backward()` or `autograd.grad`, the backward pass's ops as well.

The mode remembers which node produced each tensor it has seen (by identity, holding the
tensor for the duration of the trace so identities are not reused). A tensor it has not seen
(a factory result, a parameter or constant captured from outside) becomes a get_attr of a
`_tensor_constant<n>` (`_param_constant<n>` for a Parameter) stored on the result.
`decomposition_table` maps OpOverloads to Python functions run in place of the op (with the
mode still on, so their own ops are recorded).

Fake tracing (`tracing_mode="fake"`) plugs in at two points: the inputs are converted with
`fake_mode.from_tensor`, and `f` runs with the fake mode below this one on the stack, so the
ops this mode passes on compute metadata only.
"""
from __future__ import annotations

import inspect
import operator
from typing import Callable

from ..._ops import overload_of
from ..._subclasses.fake_tensor import FakeTensorMode
from ...dispatch import dispatcher
from ...core.tensor import Tensor
from ...nn.modules.module import Module
from ...nn.parameter import Parameter
from ...utils._python_dispatch import TorchDispatchMode
from ..graph import Graph, _target_name
from ..graph_module import GraphModule
from ..node import map_aggregate
from ..passes.shape_prop import _extract_tensor_metadata
from ..proxy import TracerBase


def _view_key(t: Tensor) -> tuple:
    """What makes two tensor objects the same value: the same memory seen the same way.
    glasstorch's autograd makes some aliases without an operator call (the tensors it saves
    for backward, `grad.detach()`), so identity alone would miss them."""
    return id(t._storage), t._offset, tuple(t._shape), tuple(t._stride), t.dtype


class PythonKeyTracer(TracerBase):
    """Holds the graph and root module make_fx builds, and the tensor -> node map."""

    def __init__(self):
        super().__init__()
        self.graph = Graph()
        self.root = Module()
        self.module_stack = {}
        self._nodes_of: dict = {}     # id(tensor) -> (tensor, node)
        self._nodes_of_view: dict = {}   # _view_key(tensor) -> node that last wrote it
        self._constants = {"_tensor_constant": 0, "_param_constant": 0}

    def track(self, tensor: Tensor, node) -> None:
        self._nodes_of[id(tensor)] = (tensor, node)
        self._nodes_of_view[_view_key(tensor)] = node
        node.meta["val"] = tensor
        node.meta["tensor_meta"] = _extract_tensor_metadata(tensor)

    def create_arg(self, a):
        """A tensor becomes the node that produced it (or an alias of it), else a constant
        stored on the root."""
        if not isinstance(a, Tensor):
            return super().create_arg(a)
        entry = self._nodes_of.get(id(a))
        if entry is not None:
            return entry[1]
        node = self._nodes_of_view.get(_view_key(a))
        if node is not None:
            return node
        prefix = "_param_constant" if isinstance(a, Parameter) else "_tensor_constant"
        name = f"{prefix}{self._constants[prefix]}"
        self._constants[prefix] += 1
        setattr(self.root, name, a)
        node = self.graph.get_attr(name)
        node.meta["val"] = a
        self._nodes_of[id(a)] = (a, node)
        self._nodes_of_view[_view_key(a)] = node
        return node


_LIFT_FRESH = overload_of(dispatcher.find("aten::lift_fresh"))
_LIFT_FRESH_COPY = overload_of(dispatcher.find("aten::lift_fresh_copy"))


class ProxyTorchDispatchMode(TorchDispatchMode):
    """The recording mode: runs each op, then appends its node."""

    def __init__(self, tracer: PythonKeyTracer, decomposition_table: dict | None = None):
        super().__init__()
        self.tracer = tracer
        self.decomposition_table = decomposition_table or {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is _LIFT_FRESH:     # a constant made in the function: recorded as a copy
            func = _LIFT_FRESH_COPY
        decomposition = self.decomposition_table.get(func)
        if decomposition is not None:
            with self:
                return decomposition(*args, **kwargs)
        out = func(*args, **kwargs)
        tracer = self.tracer
        args, kwargs = _lists_as_lists(func._schema, args, kwargs)
        node = tracer.create_node("call_function", func, tracer.create_arg(tuple(args)),
                                  tracer.create_arg(dict(kwargs)),
                                  name=_target_name(func.overloadpacket._name))
        if isinstance(out, Tensor):
            tracer.track(out, node)
        elif isinstance(out, (tuple, list)):
            node.meta["val"] = out
            for i, item in enumerate(out):
                if isinstance(item, Tensor):
                    tracer.track(item, tracer.graph.call_function(operator.getitem, (node, i)))
        return out


def _holds_tensor(tree) -> bool:
    found = []
    map_aggregate(tree, lambda v: found.append(v) if isinstance(v, Tensor) else None)
    return bool(found)


def _lists_as_lists(schema, args: tuple, kwargs: dict) -> tuple:
    """List arguments (`int[]`, `Tensor[]`) as lists, as PyTorch records them (the
    dispatcher hands glasstorch's over as tuples)."""
    def fix(argument, value):
        return list(value) if "[" in argument.type and isinstance(value, tuple) else value
    by_name = {a.name: a for a in schema.arguments}
    return (tuple(fix(a, v) for a, v in zip(schema.arguments, args)),
            {k: fix(by_name[k], v) for k, v in kwargs.items()})


def _placeholder_names(f: Callable, count: int) -> list:
    """PyTorch's names: `<parameter>_1`, or `arg<i>_1` for what `*args` collects."""
    try:
        parameters = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    names = []
    for p in parameters:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(f"{p.name}_1")
    names = names[:count]
    return names + [f"arg{i}_1" for i in range(len(names), count)]


def make_fx(f: Callable, decomposition_table: dict | None = None,
            tracing_mode: str = "real", _allow_non_fake_inputs: bool = False, *,
            pre_dispatch: bool = False, record_module_stack: bool = False,
            _allow_fake_constant: bool = False, _error_on_data_dependent_ops: bool = True,
            record_stack_traces: bool = False) -> Callable:
    """Return a function that, called with example arguments, traces `f` on them into a
    GraphModule of ATen operator calls."""
    if tracing_mode not in ("real", "fake", "symbolic"):
        raise AssertionError(f"Unexpected tracing type: {tracing_mode}")
    for option, value in (("pre_dispatch", pre_dispatch),
                          ("record_module_stack", record_module_stack),
                          ("record_stack_traces", record_stack_traces)):
        if value:
            raise NotImplementedError(f"make_fx({option}=True) is not supported in glasstorch")

    def wrapped(*args):
        for a in args:
            if isinstance(a, (list, tuple, dict)) and _holds_tensor(a):
                raise NotImplementedError(
                    "make_fx: an argument that is a list, tuple or dict of tensors is not "
                    "supported in glasstorch yet (PyTorch flattens it with pytree); pass "
                    "the tensors as separate arguments")
        fake_mode = _fake_mode_for(tracing_mode, _allow_non_fake_inputs)
        if fake_mode is not None:
            args = tuple(fake_mode.from_tensor(a) if isinstance(a, Tensor) else a
                         for a in args)
        tracer = PythonKeyTracer()
        graph = tracer.graph
        for name, value in zip(_placeholder_names(f, len(args)), args):
            node = graph.placeholder(name)
            if isinstance(value, Tensor):
                tracer.track(value, node)
        mode = ProxyTorchDispatchMode(tracer, decomposition_table)
        if fake_mode is not None:
            with fake_mode, mode:
                result = f(*args)
        else:
            with mode:
                result = f(*args)
        graph.output(map_aggregate(result, tracer.create_arg))
        name = type(f).__name__ if isinstance(f, Module) else getattr(f, "__name__", "f")
        return GraphModule(tracer.root, graph, name)

    return wrapped


def _fake_mode_for(tracing_mode: str, allow_non_fake_inputs: bool):
    """The FakeTensorMode a fake or symbolic trace runs under (None for real tracing)."""
    if tracing_mode == "real":
        return None
    if tracing_mode == "symbolic":
        raise NotImplementedError("make_fx(tracing_mode='symbolic'): glasstorch has no "
                                  "symbolic shapes yet; use 'real'")
    return FakeTensorMode(allow_non_fake_inputs=allow_non_fake_inputs)
