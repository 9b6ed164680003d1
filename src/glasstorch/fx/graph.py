"""`torch.fx.graph`: the Graph, an ordered list of Nodes, and the Python it compiles to.

The nodes form a doubly linked list around a sentinel (`_root`), so inserting and erasing
are O(1) and an iteration over `graph.nodes` survives erasing the node it stands on.
Node names come from a `_Namespace` with PyTorch's rules (snake_case of the target's name,
`_1`, `_2`, ... on a clash, never a Python keyword or builtin), and `python_code` turns the
graph into a `forward` function in PyTorch's format, with `torch` bound to glasstorch.
"""
from __future__ import annotations

import builtins
import inspect
import keyword
import math
import re
import typing
from collections import defaultdict
from typing import Any, Callable

from .._ops import OpOverload, OpOverloadPacket
from .node import Node, _type_repr, map_arg

# The operator functions Proxy records, and how generated code writes them inline.
magic_methods = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
    "truediv": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
    "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}", "or_": "{} | {}",
    "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
}
comparison_and_unary = {
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}",
    "ge": "{} >= {}", "pos": "+{}", "neg": "-{}", "invert": "~{}",
}
inline_formats = {**magic_methods, **comparison_and_unary}
reflectable_magic_methods = {k: v for k, v in magic_methods.items() if k != "getitem"}

_snake_case_sub = re.compile(r"(?<=[a-z])([A-Z])").sub


def _snake_case(s: str) -> str:
    """`fooBar` -> `foo_bar`: an underscore before an upper-case letter that follows a
    lower-case one, then lower case (so `ReLU` -> `re_lu`)."""
    return _snake_case_sub(r"_\1", s).lower()


def _is_magic(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _torch():
    import glasstorch
    return glasstorch


# Names generated code may bind globally (PyTorch's list); a node may not take them.
_CUSTOM_BUILTINS = ("inf", "nan", "NoneType", "torch", "device", "fx_pytree", "pytree")


def _custom_builtin(name: str):
    torch = _torch()
    return {"inf": math.inf, "nan": math.nan, "NoneType": type(None), "torch": torch,
            "device": torch.device}.get(name)


_public_paths: dict = {}


def _public_function_paths() -> dict:
    """{id(function): 'torch.x.y'} for the functions glasstorch exports, built on first
    use: a function's `__module__` is where it is defined, not where users find it."""
    if not _public_paths:
        torch = _torch()
        namespaces = [("torch", torch), ("torch.nn.functional", torch.nn.functional),
                      ("torch.special", torch.special), ("torch.linalg", torch.linalg),
                      ("torch.fft", torch.fft), ("torch.nn.init", torch.nn.init),
                      ("torch.Tensor", torch.Tensor)]
        exports = [(prefix, name, value) for prefix, namespace in namespaces
                   for name, value in vars(namespace).items()
                   if callable(value) and not isinstance(value, type)
                   and not name.startswith("__")]
        # A function exported under several names (mul, multiply) is known by its own
        # name, in the first namespace that has it.
        exports.sort(key=lambda e: e[1] != getattr(e[2], "__name__", None))
        for prefix, name, value in exports:
            _public_paths.setdefault(id(value), (value, f"{prefix}.{name}"))
    return _public_paths


def _get_qualified_name(func) -> str:
    """How a target is named in printed graphs and generated code: `operator.add`,
    `torch.relu`, `torch.ops.aten.mm.default`, `builtins.getattr`."""
    if isinstance(func, (OpOverload, OpOverloadPacket)):
        return f"torch.ops.{func}"
    if getattr(func, "__module__", None) == "_operator":
        return f"operator.{func.__name__}"
    if getattr(builtins, getattr(func, "__name__", ""), None) is func:
        return f"builtins.{func.__name__}"
    entry = _public_function_paths().get(id(func))
    if entry is not None and entry[0] is func:
        return entry[1]
    module = getattr(func, "__module__", None) or "__main__"
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    if name is None:
        raise RuntimeError(f"Unable to find a qualified name for {func!r}")
    if module == "glasstorch" or module.startswith("glasstorch."):
        module = "torch" + module[len("glasstorch"):]
    return f"{module}.{name}"


def _target_name(target) -> str:
    """The base of a node's name for `target`, before the namespace makes it unique."""
    if isinstance(target, OpOverload):
        op = f"{target.overloadpacket._name}.{target._overloadname}"
    elif callable(target):
        op = target.__name__
    else:
        op = target
        if _is_magic(op):
            op = op[2:-2]
    return _snake_case(op)


class _Namespace:
    """Hands out names that are valid, unused Python identifiers, PyTorch's way: illegal
    characters become `_`, a taken base gets the next free `_<n>` suffix."""

    _illegal_char = re.compile("[^0-9a-zA-Z_]+")
    _name_suffix = re.compile(r"(.*)_(\d+)$")

    def __init__(self):
        self._obj_to_name: dict = {}
        self._used_names: set = set()
        self._base_count: dict = defaultdict(int)

    def create_name(self, candidate: str, obj) -> str:
        if obj is not None and id(obj) in self._obj_to_name:
            return self._obj_to_name[id(obj)][1]
        candidate = self._illegal_char.sub("_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        match = self._name_suffix.match(candidate)
        if match is None:
            base, num = candidate, None
        else:
            base, num = match.group(1), int(match.group(2))
            candidate = f"{base}_{num}"
        if not num:
            num = self._base_count[base]
        while candidate in self._used_names or self._is_illegal_name(candidate, obj):
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[id(obj)] = (obj, candidate)
        return candidate

    def associate_name_with_obj(self, name: str, obj) -> None:
        self._obj_to_name[id(obj)] = (obj, name)

    @staticmethod
    def _is_illegal_name(name: str, obj) -> bool:
        if name in keyword.kwlist:
            return True
        if name in builtins.__dict__:
            return obj is not builtins.__dict__[name]
        if name in _CUSTOM_BUILTINS:
            return obj is None or obj is not _custom_builtin(name)
        return False


class PythonCode:
    """What `Graph.python_code` returns: the source of `forward` (`src`) and the globals it
    needs (`globals`)."""

    def __init__(self, src: str, globals: dict):
        self.src = src
        self.globals = globals


def _repr_value(arg, node_name: Callable, add_global: Callable) -> str:
    """An argument as Python source: Nodes by name, containers recursively, other
    objects by repr (dtypes and friends repr as `torch.float32`)."""
    if isinstance(arg, Node):
        return node_name(arg)
    if isinstance(arg, tuple) and hasattr(type(arg), "_make"):
        items = ", ".join(_repr_value(a, node_name, add_global) for a in arg)
        return f"{add_global(type(arg).__name__, type(arg))}({items})"
    if isinstance(arg, tuple):
        items = ", ".join(_repr_value(a, node_name, add_global) for a in arg)
        return f"({items},)" if len(arg) == 1 else f"({items})"
    if isinstance(arg, list):
        return "[" + ", ".join(_repr_value(a, node_name, add_global) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k!r}: {_repr_value(v, node_name, add_global)}"
                               for k, v in arg.items()) + "}"
    if isinstance(arg, slice):
        parts = (_repr_value(p, node_name, add_global) for p in (arg.start, arg.stop, arg.step))
        return f"slice({', '.join(parts)})"
    if isinstance(arg, float) and (math.isinf(arg) or math.isnan(arg)):
        return repr(arg)          # `inf` / `nan`, bound in the globals
    if isinstance(arg, (bool, int, float, complex, str, bytes, type(None), type(...))):
        return repr(arg)
    torch = _torch()
    if isinstance(arg, torch.device):
        return add_global("device", torch.device) + f"(type={arg.type!r}" + (
            f", index={arg.index})" if arg.index is not None else ")")
    if isinstance(arg, (torch.dtype, torch.memory_format, torch.layout)):
        return repr(arg)
    if callable(arg):
        return add_global(_get_qualified_name(arg), arg)
    return add_global(type(arg).__name__.lower(), arg)


def _format_target(base: str, target: str) -> str:
    """`self.a.b`, with `getattr(self.seq, "0")` for atoms that are not identifiers."""
    out = base
    for atom in target.split("."):
        out = f"{out}.{atom}" if atom.isidentifier() else f'getattr({out}, "{atom}")'
    return out


class _NodeList:
    """`graph.nodes`: iterates in order (or reversed), skipping erased nodes, and keeps
    going when the node it stands on is erased or moved."""

    def __init__(self, graph: "Graph", direction: str = "_next"):
        self._graph = graph
        self._direction = direction

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        cur = getattr(root, self._direction)
        while cur is not root:
            if not cur._erased:
                yield cur
            cur = getattr(cur, self._direction)

    def __reversed__(self):
        return iter(_NodeList(self._graph, "_prev" if self._direction == "_next" else "_next"))


class _InsertPoint:
    """Where new nodes go; as a context manager, restores the previous point on exit."""

    def __init__(self, graph: "Graph", new_insert: Callable):
        self._graph = graph
        self._orig, graph._insert = graph._insert, new_insert

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, tb):
        self._graph._insert = self._orig


class Graph:
    """A program as a list of Nodes: `placeholder`s for the inputs, operations, and one
    `output`. Build one by hand with the shorthands below or with `symbolic_trace`."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = _sentinel(self)
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        return _NodeList(self)

    def find_nodes(self, *, op: str, target=None, sort: bool = True) -> list:
        """The nodes of kind `op` (and `target`, if given), always in graph order (`sort`
        is PyTorch's option to skip ordering them)."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ---- making nodes -------------------------------------------------------------------
    def create_node(self, op: str, target, args: tuple | None = None,
                    kwargs: dict | None = None, name: str | None = None,
                    type_expr=None) -> Node:
        """Make a Node at the insert point (default: the end). Its name is `name` or
        derived from `target`, made unique in this graph."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise AssertionError("args must be a tuple")
        if not isinstance(kwargs, dict):
            raise AssertionError("kwargs must be a dict")
        candidate = name if name is not None else _target_name(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name: str, type_expr=None,
                    default_value: Any = inspect.Signature.empty) -> Node:
        """An input of the graph's function, called `name` (a default makes it optional)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr=None) -> Node:
        """Fetch `self.<qualified_name>` (a parameter, buffer or attribute of the module)."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr=None) -> Node:
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr=None) -> Node:
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None,
                      kwargs: dict | None = None, type_expr=None,
                      name: str | None = None) -> Node:
        return self.create_node("call_function", the_function, args, kwargs, name=name,
                                type_expr=type_expr)

    def output(self, result, type_expr=None) -> Node:
        """The graph's return value (Nodes, possibly inside tuples, lists and dicts)."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable = lambda x: x) -> Node:
        """Copy `node` (from any graph) into this one; `arg_transform` maps each Node in
        its arguments to the Node to use here."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g: "Graph", val_map: dict, return_output_node: bool = False):
        """Copy every node of `g` except its output into this graph, recording old -> new
        in `val_map`; returns what the output returned, mapped (or the output node)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def erase_node(self, to_erase: Node) -> None:
        """Remove a node nothing uses any more."""
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """New nodes go just before `n` (None: at the start); use as `with`."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """New nodes go just after `n` (None: at the end)."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    # ---- checks and passes --------------------------------------------------------------
    def lint(self) -> None:
        """Check the invariants: nodes belong here, are defined before use, names are
        unique, targets exist in the owning module."""
        seen_names: set = set()
        seen_nodes: set = set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong "
                                       "to this Graph, but was used as an argument! If you "
                                       "are copying nodes from another graph, make sure to "
                                       "use ``arg_transform`` on node_copy() to remap values"
                                       f"\n{self}")
                if arg not in seen_nodes:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before "
                                       "it has been defined! Please check that Nodes in the "
                                       "graph are topologically ordered\n" + str(self))
                if node not in arg.users:
                    raise RuntimeError(f"Node '{node}' is missing from the users of its "
                                       f"argument '{arg}'")
            seen_nodes.add(node)
        module = self.owning_module
        if module is None:
            return
        for node in self.nodes:
            if node.op in ("get_attr", "call_module"):
                m_itr = module
                for i, atom in enumerate(node.target.split(".")):
                    if not hasattr(m_itr, atom):
                        seen = ".".join(node.target.split(".")[:i])
                        raise RuntimeError(f"Node {node} target {node.target} references "
                                           f"nonexistent attribute {atom} of {seen}")
                    m_itr = getattr(m_itr, atom)
                if node.op == "call_module" and not isinstance(m_itr, _torch().nn.Module):
                    raise RuntimeError(f"Node {node} target {node.target} {atom} of {seen} "
                                       "does not reference an nn.Module")

    def eliminate_dead_code(self, is_impure_node: Callable | None = None) -> bool:
        """Erase nodes that nothing uses and that have no side effect, last first (so a
        chain of them goes in one pass). Returns whether anything changed."""
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not impure(node):
                self.erase_node(node)
                changed = True
        return changed

    # ---- printing and code generation ---------------------------------------------------
    def __str__(self) -> str:
        return_type = [""]
        lines = [n.format_node([], return_type) for n in self.nodes]
        head = f"graph(){return_type[0]}:"
        return "\n".join([head] + ["    " + line for line in lines])

    def print_tabular(self) -> None:
        """Print the nodes as a table (opcode, name, target, args, kwargs)."""
        rows = [[n.op, n.name, n._pretty_target() if n.op != "output" else "output",
                 str(n.args), str(n.kwargs)] for n in self.nodes]
        header = ["opcode", "name", "target", "args", "kwargs"]
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(5)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        print(fmt.format(*header).rstrip())
        print("  ".join("-" * w for w in widths))
        for row in rows:
            print(fmt.format(*row).rstrip())

    def python_code(self, root_module: str, *, verbose: bool = False,
                    include_stride: bool = False, include_device: bool = False,
                    colored: bool = False) -> PythonCode:
        """The graph as the source of `def forward(<root_module>, ...)`, PyTorch's format:
        one statement per node, each value freed (`x = None`) after its last use.
        `verbose` annotates values with the dtype and shape in their meta."""
        return _generate(self, root_module, verbose)

    def __deepcopy__(self, memo) -> "Graph":
        """A copy with new Nodes of the same names; meta is shared, not copied."""
        copy = Graph(tracer_cls=self._tracer_cls, tracer_extras=self._tracer_extras)
        copied = copy.graph_copy(self, {}, return_output_node=True)
        if copied is not None:                    # the graph has an output
            rv, output = copied
            copy.output(rv, output.type)
        memo[id(self)] = copy
        return copy


def _sentinel(graph: Graph) -> Node:
    """The list's root: a Node that is in no list and never printed."""
    root = Node.__new__(Node)
    root.graph, root.name, root.op, root.target = graph, "", "root", ""
    root._input_nodes, root.users, root.type, root.meta = {}, {}, None, {}
    root._args, root._kwargs, root._erased = (), {}, False
    root._prev = root._next = root
    return root


_DTYPE_ABBREVIATIONS = {
    "float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
    "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
    "bool": "b8", "complex64": "c64", "complex128": "c128"}


def _value_annotation(node: Node) -> str:
    """`: "f32[2, 3]"` for a node whose meta holds the tensor it computed (make_fx's
    nodes); empty otherwise."""
    value = node.meta.get("val")
    if not isinstance(value, _torch().Tensor):
        return ""
    dtype = str(value.dtype).replace("torch.", "")
    shape = ", ".join(str(d) for d in value.shape)
    return f': "{_DTYPE_ABBREVIATIONS.get(dtype, dtype)}[{shape}]"'


def _generate(graph: Graph, root_module: str, verbose: bool = False) -> PythonCode:
    torch = _torch()
    globals_: dict = {"torch": torch, "inf": math.inf, "nan": math.nan,
                      "NoneType": type(None), "device": torch.device}
    namespace = _Namespace()
    for node in graph.nodes:
        namespace.create_name(node.name, node)

    def add_global(name_hint: str, obj) -> str:
        if name_hint.startswith("torch.") or name_hint == "torch":
            return name_hint
        if name_hint.startswith("builtins."):
            return name_hint[len("builtins."):]
        for existing, value in globals_.items():
            if value is obj:
                return existing
        name = namespace.create_name(name_hint, obj)
        globals_[name] = obj
        return name

    def node_name(n: Node) -> str:
        return n.name

    def fmt(a) -> str:
        return _repr_value(a, node_name, add_global)

    # The user after which each value is dead: walk backwards, first sighting wins.
    last_user: dict = {}
    frees: dict = defaultdict(list)
    for user in reversed(graph.nodes):
        seen: list = []
        map_arg((user.args, user.kwargs), lambda n: seen.append(n) if n not in seen else None)
        for n in seen:
            if n not in last_user:
                last_user[n] = user
                frees[user].append(n)

    params: list = []
    body: list = []
    wrapped: dict = {}        # globals to re-register with wrap() (a dict keeps the order)
    output_type = ""
    for node in graph.nodes:
        if node.op == "placeholder":
            annotation = (f" : {_annotation_source(node.type, add_global)}"
                          if node.type is not None else "")
            if verbose and not annotation:
                annotation = _value_annotation(node)
            default = f" = {fmt(node.args[0])}" if node.args else ""
            params.append(f"{node.target}{annotation}{default}")
            raw_name = node.target.lstrip("*")
            if raw_name != node.name:      # renamed (a clash, or `*args` named `_args`)
                body.append(f"{node.name} = {raw_name}")
            continue
        if node.op == "output":
            if node.type is not None:
                output_type = f" -> {_annotation_source(node.type, add_global)}"
            body.append(f"return {fmt(node.args[0])}")
            continue
        annotation = _value_annotation(node) if verbose else ""
        body.append(f"{node.name}{annotation} = {_expression(node, fmt, add_global)}")
        if node.meta.get("is_wrapped") and node.op == "call_function":
            wrapped.setdefault(add_global(_get_qualified_name(node.target), node.target))
        dead = [n.name for n in frees.get(node, []) if n.op != "output"]
        if not node.users:
            dead.append(node.name)
        if dead:
            body[-1] += f";  {' = '.join(dead)} = None"
    if not body:
        body.append("pass")
    signature = ", ".join([root_module] + params)
    code = "\n".join("    " + line for line in body)
    wrap_stmts = "\n".join(f'torch.fx._symbolic_trace.wrap("{name}")' for name in wrapped)
    src = f"\n{wrap_stmts}\n\ndef forward({signature}){output_type}:\n{code}\n    "
    return PythonCode(src, globals_)


def _annotation_source(t, add_global: Callable) -> str:
    """A type annotation as source: builtins by name, glasstorch types as `torch.X`,
    typing constructs through globals (`typing_Union[float,NoneType]`), as PyTorch."""
    if t is type(None):
        return "NoneType"
    origin = typing.get_origin(t)
    if origin is None:
        text = _type_repr(t)
        if isinstance(t, type) and not text.startswith("torch.") and "." in text:
            return add_global(text, t)
        return text
    name = "typing.Union" if origin is typing.Union else f"typing.{getattr(t, '_name', None)}"
    head = add_global(name, getattr(typing, name.split(".")[1], origin))
    args = ",".join(_annotation_source(a, add_global) for a in typing.get_args(t))
    return f"{head}[{args}]"


def _expression(node: Node, fmt: Callable, add_global: Callable) -> str:
    args, kwargs = node.args, node.kwargs

    def call_args(positional) -> str:
        parts = [fmt(a) for a in positional] + [f"{k} = {fmt(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    if node.op == "get_attr":
        return _format_target("self", node.target)
    if node.op == "call_module":
        return f"{_format_target('self', node.target)}({call_args(args)})"
    if node.op == "call_method":
        return f"{fmt(args[0])}.{node.target}({call_args(args[1:])})"
    target = node.target
    name = getattr(target, "__name__", None)
    if (getattr(target, "__module__", None) == "_operator" and name in inline_formats
            and not kwargs and inline_formats[name].count("{}") == len(args)):
        return inline_formats[name].format(*(fmt(a) for a in args))
    if (target is builtins.getattr and len(args) == 2 and isinstance(args[1], str)
            and args[1].isidentifier() and not kwargs):
        return f"{fmt(args[0])}.{args[1]}"
    if getattr(target, "__module__", None) == "_operator":
        return f"{add_global(f'_operator.{name}', target)}({call_args(args)})"
    return f"{add_global(_get_qualified_name(target), target)}({call_args(args)})"

