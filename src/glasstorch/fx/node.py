"""`torch.fx.node`: one operation of a Graph, and the helpers that walk its arguments.

A Node's `args`/`kwargs` may nest Nodes inside tuples, lists, dicts and slices. The Node
keeps both directions of every edge up to date: `all_input_nodes` (the Nodes its arguments
mention) and, on each of those, `users`. So assigning `node.args` rewires the graph, and
`replace_all_uses_with` is a walk over `users`.
"""
from __future__ import annotations

import operator
import types
from typing import Callable

from .immutable_collections import immutable_dict, immutable_list

OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")

# Functions whose calls must not be removed by dead-code elimination even if unused.
_side_effectful_functions: set = {operator.setitem}


def has_side_effect(fn: Callable) -> Callable:
    """Mark `fn` as side-effectful: `eliminate_dead_code` keeps its calls."""
    _side_effectful_functions.add(fn)
    return fn


def map_aggregate(a, fn: Callable):
    """Apply `fn` to every leaf of `a`, rebuilding tuples (named tuples as themselves,
    `torch.return_types` as plain tuples, as in PyTorch), lists, dicts and slices around
    the results."""
    if isinstance(a, tuple):
        mapped = tuple(map_aggregate(e, fn) for e in a)
        return type(a)._make(mapped) if hasattr(type(a), "_make") else mapped
    if isinstance(a, list):
        return immutable_list(map_aggregate(e, fn) for e in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn: Callable):
    """Apply `fn` to every Node inside `a` (leaves that are not Nodes stay)."""
    if not callable(fn):
        raise AssertionError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _qualified_name(target) -> str:
    from .graph import _get_qualified_name
    return _get_qualified_name(target)


def _format_arg(arg) -> str:
    """How an argument reads in `Graph.__str__`: Nodes as `%name`, keys unquoted."""
    if isinstance(arg, Node):
        return "%" + arg.name
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for a in arg)
        return f"({items},)" if len(arg) == 1 else f"({items})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    return str(arg)


class Node:
    """One operation: `op` says what kind (placeholder, get_attr, call_function,
    call_method, call_module, output), `target` what it calls or names, `args`/`kwargs`
    its inputs. Made by `Graph.create_node` and its shorthands, not directly."""

    def __init__(self, graph, name: str, op: str, target, args: tuple, kwargs: dict,
                 return_type=None):
        if op not in OPS:
            raise ValueError(f"Unknown op '{op}': a Node's op is one of {', '.join(OPS)}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target)} but a Callable is expected")
        if op in ("get_attr", "call_method", "call_module") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict = {}
        self.users: dict = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta: dict = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._update_args_kwargs(args, kwargs)

    # ---- the linked list ----------------------------------------------------------------
    @property
    def next(self) -> "Node":
        return self._next

    @property
    def prev(self) -> "Node":
        return self._prev

    def prepend(self, x: "Node") -> None:
        """Move `x` to just before this node (both must be in the same graph)."""
        if x.graph is not self.graph:
            raise AssertionError("Attempting to move a Node into a different Graph")
        if self is x:
            raise AssertionError("Cannot prepend a node to itself")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: "Node") -> None:
        """Move `x` to just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        # The node keeps its own _next, so an iteration standing on it can move on.
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    # ---- arguments and the edges they make ----------------------------------------------
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, a) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list:
        """The Nodes this node's arguments mention, in order of first mention."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg) -> None:
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx: int, arg) -> None:
        """Insert `arg` at position `idx` of `args`."""
        if not 0 <= idx <= len(self.args):
            raise AssertionError("insert_args index must be between 0 and len(self.args)")
        self.args = self.args[:idx] + (arg,) + self.args[idx:]

    def update_kwarg(self, key: str, arg) -> None:
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args, new_kwargs) -> None:
        for old_use in self._input_nodes:
            old_use.users.pop(self)
        self._input_nodes = {}
        self._args = map_aggregate(tuple(new_args), self._register_input)
        self._kwargs = map_aggregate(dict(new_kwargs), self._register_input)
        for new_use in self._input_nodes:
            new_use.users.setdefault(self)

    def _register_input(self, a):
        if isinstance(a, Node):
            if a.graph is not self.graph:
                raise AssertionError(f"Argument '{a}' of Node '{self}' belongs to another "
                                     "Graph: copy it in with Graph.node_copy")
            self._input_nodes.setdefault(a)
        return a

    def replace_all_uses_with(self, replace_with: "Node",
                              delete_user_cb: Callable = lambda user: True, *,
                              propagate_meta: bool = False) -> list:
        """Make every user of this node use `replace_with` instead (those for which
        `delete_user_cb(user)` is true); returns the users changed."""
        if propagate_meta:
            if replace_with.meta:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, "
                                     "propagate_meta=True), but replace_with already has "
                                     ".meta keys")
            replace_with.meta.update(self.meta)
        changed = [user for user in list(self.users) if delete_user_cb(user)]
        for user in changed:
            user.replace_input_with(self, replace_with)
        return changed

    def replace_input_with(self, old_input: "Node", new_input: "Node") -> None:
        """Replace every mention of `old_input` in this node's arguments."""
        swap = lambda n: new_input if n is old_input else n   # noqa: E731
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    # ---- properties ---------------------------------------------------------------------
    @property
    def stack_trace(self):
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace) -> None:
        self.meta["stack_trace"] = trace

    def is_impure(self, impure_random: bool = True) -> bool:
        """Whether dead-code elimination must keep this node although nothing uses it."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            if self.target in _side_effectful_functions:
                return True
            schema = getattr(self.target, "_schema", None)       # an OpOverload
            if schema is not None and any(a.is_mutated for a in schema.arguments):
                return True
            tags = getattr(self.target, "tags", ())
            return impure_random and "nondeterministic_seeded" in [str(t) for t in tags]
        if self.op == "call_module":
            module = self.graph.owning_module
            if module is None:
                return False
            return getattr(module.get_submodule(self.target), "_is_impure", False)
        return False

    # ---- printing -----------------------------------------------------------------------
    def format_node(self, placeholder_names: list | None = None,
                    maybe_return_typename: list | None = None) -> str:
        """One line of `Graph.__str__`; placeholders also add their name to
        `placeholder_names`."""
        if self.op == "placeholder":
            if placeholder_names is not None:
                placeholder_names.append(self.target)
            default = f"(default={self.args[0]})" if self.args else ""
            return (f"%{self.name} : {self._typename()}[num_users={len(self.users)}] = "
                    f"placeholder[target={self.target}]{default}")
        if self.op == "get_attr":
            return (f"%{self.name} : {self._typename()}[num_users={len(self.users)}] = "
                    f"get_attr[target={self._pretty_target()}]")
        if self.op == "output":
            if self.type is not None and maybe_return_typename is not None:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        return (f"%{self.name} : {self._typename()}[num_users={len(self.users)}] = "
                f"{self.op}[target={self._pretty_target()}](args = {_format_arg(self.args)},"
                f" kwargs = {_format_arg(self.kwargs)})")

    def _typename(self) -> str:
        return f"{_type_repr(self.type)} " if self.type is not None else ""

    def _pretty_target(self) -> str:
        return self.target if isinstance(self.target, str) else _qualified_name(self.target)

    def __repr__(self) -> str:
        return self.name


def _type_repr(t) -> str:
    """How a type annotation prints in a graph: `int`, `torch.Tensor`,
    `typing.Optional[float]`."""
    if isinstance(t, type) and not isinstance(t, types.GenericAlias):
        if t.__module__ == "builtins":
            return t.__qualname__
        import glasstorch
        if getattr(glasstorch, t.__name__, None) is t:
            return f"torch.{t.__name__}"
        module = t.__module__.replace("glasstorch", "torch", 1)
        return f"{module}.{t.__qualname__}"
    return repr(t)
