"""`torch.fx.graph_module`: GraphModule, an nn.Module whose `forward` is compiled from a
Graph.

Each GraphModule gets a class of its own (named `class_name`), because `recompile()` installs
the generated `forward` on the class, as a method should be. The module holds copies of just
the submodules, parameters and buffers the graph's get_attr and call_module nodes name, at
the same dotted paths (intermediate modules are plain `nn.Module`s).
"""
from __future__ import annotations

import copy
import itertools
import linecache

from ..core.tensor import Tensor
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from .graph import Graph, PythonCode

_PRINT_READABLE_REMINDER = ("# To see more debug info, please use "
                            "`graph_module.print_readable()`")
_source_keys = itertools.count()


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    """Install `from_module.<target>` at the same path in `to_module`."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return                  # the whole submodule is already installed
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter):
        persistent = field not in getattr(from_module, "_non_persistent_buffers_set", ())
        to_module.register_buffer(field, orig, persistent=persistent)
    else:
        setattr(to_module, field, orig)


def _assign_attr(value, to_module: Module, target: str) -> None:
    """Install `value` at `target` in `to_module`, making plain Modules on the way."""
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        to_module.register_buffer(field, value)
    else:
        setattr(to_module, field, value)


class GraphModule(Module):
    """An nn.Module made from a `root` (a Module or a {qualified name: value} dict) and a
    Graph; `code` is its generated `forward`."""

    def __new__(cls, *args, **kwargs):
        # One class per instance, so recompile() can set `forward` on it.
        base = next(t for t in cls.__mro__ if t.__dict__.get("_is_instance_class") is None)

        class GraphModuleImpl(base):
            _is_instance_class = True

        return super().__new__(GraphModuleImpl)

    def __init__(self, root, graph: Graph, class_name: str = "GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        self.__class__.__qualname__ = class_name
        if isinstance(root, Module):
            self.training = getattr(root, "training", True)
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           "that target was not provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.meta: dict = {}
        self.graph = graph

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        previous = self.__dict__.get("_graph")
        self.__dict__["_graph"] = g
        try:
            self._graph_replaced()
        except Exception:
            if previous is None:
                del self.__dict__["_graph"]
            else:
                self.__dict__["_graph"] = previous
            raise
        g.owning_module = self

    def _graph_replaced(self) -> None:
        """Make the code of the graph just set (`_LazyGraphModule` defers it to first use)."""
        self.recompile()

    def add_submodule(self, target: str, m: Module) -> bool:
        """Install `m` at the dotted path `target`, making plain Modules on the way; False
        if something on the way is not a Module."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                mod.add_module(item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at `target`; False if there is none there."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            mod = getattr(mod, item, None)
            if not isinstance(mod, Module):
                return False
        if not isinstance(getattr(mod, field, None), Module):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove the submodules no call_module or get_attr node needs."""
        used: set = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                used.update(".".join(atoms[:i]) for i in range(1, len(atoms) + 1))
                if node.op == "call_module":
                    module = self.get_submodule(node.target)
                    used.update(f"{node.target}.{name}" for name, _ in module.named_modules()
                                if name)
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    @property
    def code(self) -> str:
        """The source of the generated `forward`."""
        if "_code" not in self.__dict__:
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self) -> PythonCode:
        """Regenerate `forward` from `self.graph`; call it after editing the graph."""
        python_code = self._graph.python_code(root_module="self")
        src = python_code.src
        key = f"<eval_with_key>.{next(_source_keys)}"
        namespace = dict(python_code.globals)
        exec(compile(src, key, "exec"), namespace)
        linecache.cache[key] = (len(src), None, src.splitlines(True), key)  # for tracebacks
        self.__dict__["_code"] = src
        type(self).forward = namespace["forward"]
        return python_code

    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False) -> str:
        """The module as a class definition: its generated forward (and those of
        GraphModule submodules), printed and returned."""
        text = self._readable(type(self).__name__)
        if print_output:
            print(text)
        return text

    def _readable(self, class_name: str) -> str:
        body = self._graph.python_code("self", verbose=True).src.strip().splitlines()
        signature = next(i for i, line in enumerate(body) if line.startswith("def forward"))
        body.insert(signature + 1, "    # No stacktrace found for following nodes")
        lines = [f"class {class_name}(torch.nn.Module):"] + ["    " + line for line in body]
        for name, sub in self.named_children():
            if isinstance(sub, GraphModule):
                lines += [""] + ["    " + line for line in sub._readable(name).splitlines()]
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return "\n".join([super().__str__(), self.code, _PRINT_READABLE_REMINDER])

    def __copy__(self) -> "GraphModule":
        result = GraphModule(self, self.graph, type(self).__name__)
        result.meta = dict(self.meta)
        return result

    def __deepcopy__(self, memo) -> "GraphModule":
        holder = Module()
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        holder.__dict__.update(copy.deepcopy(state, memo))
        result = GraphModule(holder, copy.deepcopy(self._graph, memo), type(self).__name__)
        memo[id(self)] = result
        for k, v in holder.__dict__.items():
            if k not in result.__dict__:
                result.__dict__[k] = v
        result.meta = holder.__dict__.get("meta", {})
        return result

    def __reduce__(self):
        from ._serialize import graph_state
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        return (_rebuild_graph_module, (state, graph_state(self._graph), type(self).__name__))


def _rebuild_graph_module(state: dict, graph_state: list, class_name: str) -> GraphModule:
    """Unpickling: the module's attributes first, then the graph, then recompile."""
    from ._serialize import graph_from_state
    holder = Module()
    holder.__dict__.update(state)
    result = GraphModule(holder, graph_from_state(graph_state), class_name)
    for k, v in state.items():
        result.__dict__.setdefault(k, v)
    return result
