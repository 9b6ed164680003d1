"""`torch.fx.interpreter`: run a GraphModule's graph one node at a time.

`Interpreter.run` walks the nodes in order and keeps each result in `env` until its last
user has run. Each op kind has its own method (`placeholder`, `call_function`, ...), which
is what a subclass overrides to observe or change execution. `Transformer` is the same walk
with Proxies for values: the methods record into a new graph instead of computing, so the
result is a new GraphModule.
"""
from __future__ import annotations

import contextlib
import inspect
from typing import Any, Iterator

from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_aggregate, map_arg
from .proxy import Proxy, TracerBase


class Interpreter:
    """Runs `module.graph` (or `graph`) on concrete values."""

    def __init__(self, module, garbage_collect_values: bool = True,
                 graph: Graph | None = None):
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env: dict = {}
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        self.current_node: Node | None = None
        # The node after which each value can be dropped: its last user.
        self.user_to_last_uses: dict = {}
        if garbage_collect_values:
            seen: set = set()
            for node in reversed(self.graph.nodes):
                for n in node._input_nodes:
                    if n not in seen:
                        seen.add(n)
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env: dict | None = None,
            enable_io_processing: bool = True) -> Any:
        """Run the graph on `args`; returns what its output node returns."""
        self.env = initial_env if initial_env is not None else {}
        self.args_iter: Iterator = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue                  # given in initial_env
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    e.args = (f"{e.args[0] if e.args else ''}\n\nWhile executing "
                              f"{node.format_node()}",) + tuple(e.args[1:])
                raise
            for to_delete in self.user_to_last_uses.get(node, []):
                del self.env[to_delete]
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list: list) -> Any:
        """`run` that takes its inputs in a list and empties it, so the caller's list does
        not keep them alive while the graph runs."""
        args = list(args_list)
        args_list.clear()
        return self.run(*args)

    @contextlib.contextmanager
    def _set_current_node(self, node: Node):
        previous, self.current_node = self.current_node, node
        try:
            yield
        finally:
            self.current_node = previous

    def run_node(self, n: Node) -> Any:
        """Fetch `n`'s arguments from `env` and call the method for its op kind."""
        with self._set_current_node(n):
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            return getattr(self, n.op)(n.target, args, kwargs)

    # ---- one method per op kind ---------------------------------------------------------
    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Any:
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but "
                               "one was not passed in!") from None

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)

    def call_function(self, target, args: tuple, kwargs: dict) -> Any:
        return target(*args, **kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        self_obj, *args_tail = args
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args: tuple, kwargs: dict) -> Any:
        return args[0]

    # ---- helpers ------------------------------------------------------------------------
    def fetch_attr(self, target: str) -> Any:
        """`self.module.<target>`, walking the dotted path."""
        atoms = target.split(".")
        attr_itr = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(attr_itr, atom):
                raise RuntimeError("Node referenced nonexistent target "
                                   f"{'.'.join(atoms[:i + 1])}")
            attr_itr = getattr(attr_itr, atom)
        return attr_itr

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple:
        """`n`'s args and kwargs with each Node replaced by its value in `env`."""
        args = self.map_nodes_to_values(n.args, n)
        kwargs = self.map_nodes_to_values(n.kwargs, n)
        return tuple(args), dict(kwargs)

    def map_nodes_to_values(self, args, n: Node):
        def load_arg(n_arg: Node):
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run "
                                   "Graph.lint() to diagnose such issues")
            return self.env[n_arg]
        return map_arg(args, load_arg)


class _TransformerTracer(TracerBase):
    def __init__(self, graph: Graph):
        super().__init__()
        self.graph = graph
        self.module_stack = {}
        self.root = None

    def is_leaf_module(self, _, __) -> bool:
        return True

    def call_module(self, m, forward, args, kwargs):
        qualified = next(name for name, sub in self.root.named_modules() if sub is m)
        return self.create_proxy("call_module", qualified, args, kwargs)


class Transformer(Interpreter):
    """Interprets the graph on Proxies to record a new one: override the per-op methods
    to change what gets recorded; `transform()` returns the new GraphModule."""

    def __init__(self, module: GraphModule):
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target, args: tuple, kwargs: dict) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        if isinstance(result, Proxy) and n.op != "output":
            result.node.meta.update(n.meta)
        return result

    def transform(self) -> GraphModule:
        """Run the transformation; the new graph goes into a GraphModule over the same
        root module."""
        result = super().run(enable_io_processing=False)
        if result is not None:
            strip = lambda a: a.node if isinstance(a, Proxy) else a   # noqa: E731
            self.new_graph.output(map_aggregate(result, strip))
        return GraphModule(self.module, self.new_graph)
