"""Nested containers as leaves plus a structure (torch.utils._pytree).

`tree_flatten([x, {"a": y}])` gives the leaves `[x, y]` and a `TreeSpec` that
`tree_unflatten` fills back in; `tree_map(fn, tree)` rebuilds the tree with `fn` applied to
every leaf. Lists, tuples, namedtuples, structseqs (torch.return_types), dicts (in insertion
order), OrderedDicts, defaultdicts, deques and `Size` are containers; everything else, None
included, is a leaf. `register_pytree_node` makes a class a container too, and key paths
(`tree_flatten_with_path`, `keystr`, `key_get`) name where each leaf sits.
Subclass and mode code uses it to find the tensors in an op's arguments.
"""
from __future__ import annotations

import dataclasses
import json
import types
from collections import OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from ..core.shape import Size

PyTree = Any
Context = Any
DumpableContext = Any
FlattenFn = Callable[[PyTree], tuple[list, Context]]
UnflattenFn = Callable[[Iterable, Context], PyTree]
ToDumpableContextFn = Callable[[Context], DumpableContext]
FromDumpableContextFn = Callable[[DumpableContext], Context]
IsLeafFn = Callable[[PyTree], bool] | None


# ---- key entries: one step of the path from a tree's root to a leaf ----------------------
@dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    key: Any

    def __str__(self):
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self):
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


KeyEntry = Any
KeyPath = tuple


def keystr(kp: tuple) -> str:
    """The key path as source text: `['x'][1].a`."""
    return "".join(str(k) for k in kp)


def key_get(obj, kp: tuple):
    """The part of `obj` the key path `kp` leads to."""
    for k in kp:
        obj = k.get(obj)
    return obj


# ---- namedtuples and structseqs ---------------------------------------------------------
def is_namedtuple_class(cls) -> bool:
    """A class made by collections.namedtuple or typing.NamedTuple."""
    return (isinstance(cls, type) and issubclass(cls, tuple)
            and isinstance(getattr(cls, "_fields", None), tuple)
            and all(type(f) is str for f in cls._fields)
            and callable(getattr(cls, "_make", None))
            and callable(getattr(cls, "_asdict", None)))


def is_namedtuple_instance(obj) -> bool:
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj) -> bool:
    """A namedtuple class or instance."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_structseq_class(cls) -> bool:
    """A fixed-length tuple type of named fields as C extensions make (torch.return_types,
    os.stat_result), told apart from namedtuples by its n_*fields counts."""
    if not (isinstance(cls, type) and issubclass(cls, tuple)) or is_namedtuple_class(cls):
        return False
    return all(type(getattr(cls, n, None)) is int
               for n in ("n_fields", "n_sequence_fields", "n_unnamed_fields"))


def is_structseq_instance(obj) -> bool:
    return is_structseq_class(type(obj))


def is_structseq(obj) -> bool:
    return is_structseq_class(obj if isinstance(obj, type) else type(obj))


def structseq(sequence):
    """The node kind of every structseq class (its TreeSpec's type is the class itself)."""
    raise TypeError("structseq is a pytree node kind, not a constructor")


# ---- the registry of container types ----------------------------------------------------
class NodeDef(NamedTuple):
    type: Any
    flatten_fn: FlattenFn
    unflatten_fn: UnflattenFn
    flatten_with_keys_fn: Callable | None


@dataclasses.dataclass
class _Serialization:
    serialized_type_name: str | None
    to_dumpable_context: ToDumpableContextFn | None
    from_dumpable_context: FromDumpableContextFn | None


SUPPORTED_NODES: dict = {}
_SERIALIZATION: dict = {}
_DESERIALIZE_TYPES: dict = {}


def register_pytree_node(cls, flatten_fn: FlattenFn, unflatten_fn: UnflattenFn, *,
                         serialized_type_name: str | None = None,
                         to_dumpable_context: ToDumpableContextFn | None = None,
                         from_dumpable_context: FromDumpableContextFn | None = None,
                         flatten_with_keys_fn: Callable | None = None) -> None:
    """Make `cls` a container: `flatten_fn(obj) -> (children, context)` and
    `unflatten_fn(children, context) -> obj`. `serialized_type_name` (and the dumpable
    context functions, when the context is not JSON) let `treespec_dumps` write its specs;
    `flatten_with_keys_fn(obj) -> ([(key, child)...], context)` gives its key paths."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    if (to_dumpable_context is None) != (from_dumpable_context is None):
        raise ValueError(f"Both to_dumpable_context and from_dumpable_context for {cls} must "
                         "be None or registered.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)
    _SERIALIZATION[cls] = _Serialization(serialized_type_name, to_dumpable_context,
                                         from_dumpable_context)
    if serialized_type_name is not None:
        _DESERIALIZE_TYPES[serialized_type_name] = cls


def _sequence_with_keys(children, context):
    return [(SequenceKey(i), c) for i, c in enumerate(children)], context


def _register_builtin(cls, flatten, unflatten, keys, name=None):
    def flatten_with_keys(tree):
        children, context = flatten(tree)
        return [(key, c) for key, c in zip(keys(tree, context), children)], context
    register_pytree_node(cls, flatten, unflatten, flatten_with_keys_fn=flatten_with_keys,
                         serialized_type_name=name or f"{cls.__module__}.{cls.__qualname__}")


def _positions(tree, context):
    return [SequenceKey(i) for i in range(len(tree))]


def _mapping_keys(tree, context):
    return [MappingKey(k) for k in tree]


_register_builtin(tuple, lambda t: (list(t), None), lambda c, _: tuple(c), _positions)
_register_builtin(list, lambda t: (list(t), None), lambda c, _: list(c), _positions)
_register_builtin(dict, lambda d: (list(d.values()), list(d.keys())),
                  lambda c, keys: dict(zip(keys, c)), _mapping_keys)
_register_builtin(OrderedDict, lambda d: (list(d.values()), list(d.keys())),
                  lambda c, keys: OrderedDict(zip(keys, c)), _mapping_keys)
_register_builtin(defaultdict,
                  lambda d: (list(d.values()), [d.default_factory, list(d.keys())]),
                  lambda c, ctx: defaultdict(ctx[0], zip(ctx[1], c)), _mapping_keys)
_register_builtin(deque, lambda d: (list(d), d.maxlen),
                  lambda c, maxlen: deque(c, maxlen=maxlen), _positions)
_register_builtin(Size, lambda s: (list(s), None), lambda c, _: Size(c), _positions,
                  name="torch.Size")
_register_builtin(namedtuple, lambda t: (list(t), type(t)), lambda c, cls: cls._make(c),
                  lambda t, _: [GetAttrKey(f) for f in t._fields], name="collections.namedtuple")
_register_builtin(structseq, lambda t: (list(t), type(t)), lambda c, cls: cls(c),
                  _positions, name="torch.utils._pytree.structseq")
# A defaultdict's factory and a namedtuple's class are not JSON: they have no dumps form.
_SERIALIZATION[defaultdict].serialized_type_name = None
_SERIALIZATION[namedtuple].serialized_type_name = None
_SERIALIZATION[structseq].serialized_type_name = None


def _node_kind(tree):
    """The registry key of `tree`'s container kind, or None for a leaf."""
    kind = type(tree)
    if kind in SUPPORTED_NODES and kind is not structseq:
        return kind
    if is_namedtuple_class(kind):
        return namedtuple
    if is_structseq_class(kind):
        return structseq
    return None


def tree_is_leaf(tree, is_leaf: IsLeafFn = None) -> bool:
    """Whether `tree` is a leaf: not a registered container, or picked out by `is_leaf`."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_kind(tree) is None


# ---- TreeSpec ---------------------------------------------------------------------------
@dataclasses.dataclass
class TreeSpec:
    """The structure of a flattened tree: a container kind, its context (dict keys, the
    namedtuple class) and the specs of its children. A leaf's spec is `LeafSpec()`. A
    structseq's type is its class (context None); a namedtuple's is `namedtuple`."""

    type: Any
    context: Any
    children_specs: list = dataclasses.field(default_factory=list)

    @property
    def num_leaves(self) -> int:
        return sum(child.num_leaves for child in self.children_specs)

    @property
    def num_nodes(self) -> int:
        return 1 + sum(child.num_nodes for child in self.children_specs)

    @property
    def num_children(self) -> int:
        return len(self.children_specs)

    def child(self, index: int) -> "TreeSpec":
        return self.children_specs[index]

    def children(self) -> list:
        return list(self.children_specs)

    def is_leaf(self) -> bool:
        return False

    def _node_def(self) -> NodeDef:
        if is_structseq_class(self.type):
            return SUPPORTED_NODES[structseq]
        return SUPPORTED_NODES[self.type]

    def unflatten(self, leaves: Iterable):
        return tree_unflatten(leaves, self)

    def flatten_up_to(self, tree) -> list:
        """The subtrees of `tree` at this spec's leaf positions; `tree` must have this
        structure down to them (ValueError naming the first difference otherwise)."""
        subtrees: list = []
        self._flatten_up_to(tree, subtrees)
        return subtrees

    def _flatten_up_to(self, tree, subtrees: list) -> None:
        if self.is_leaf():
            subtrees.append(tree)
            return
        kind = _node_kind(tree)
        expected = structseq if is_structseq_class(self.type) else self.type
        if kind is not expected:
            raise ValueError(f"Node type mismatch; expected {self.type}, but got "
                             f"{type(tree)}.")
        children, context = SUPPORTED_NODES[kind].flatten_fn(tree)
        if len(children) != self.num_children:
            raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got "
                             f"{len(children)}.")
        if kind in (dict, OrderedDict, defaultdict):
            mine = self.context[1] if kind is defaultdict else self.context
            theirs = context[1] if kind is defaultdict else context
            if set(mine) != set(theirs):
                raise ValueError(f"Node keys mismatch; missing key(s): "
                                 f"{set(mine) - set(theirs)}; extra key(s): "
                                 f"{set(theirs) - set(mine)}.")
            by_key = dict(zip(theirs, children))
            children = [by_key[k] for k in mine]
        elif context != self.context:
            raise ValueError(f"Node context mismatch for custom node type {self.type}.")
        for child_spec, child in zip(self.children_specs, children):
            child_spec._flatten_up_to(child, subtrees)

    def _repr(self, indent: int) -> str:
        if not self.children_specs:
            return f"TreeSpec({self.type.__name__}, {self.context}, [])"
        indent += 2
        first, *rest = (c._repr(indent) for c in self.children_specs)
        tail = "".join(",\n" + " " * indent + r for r in rest)
        return f"TreeSpec({self.type.__name__}, {self.context}, [{first}{tail}])"

    def __repr__(self):
        return self._repr(0)


class LeafSpec(TreeSpec):
    def __init__(self):
        super().__init__(None, None, [])

    @property
    def num_leaves(self) -> int:
        return 1

    @property
    def num_nodes(self) -> int:
        return 1

    def is_leaf(self) -> bool:
        return True

    def _repr(self, indent: int) -> str:
        return "*"


PyTreeSpec = TreeSpec


def _spec_of(node, kind, context, children_specs) -> TreeSpec:
    spec_type = type(node) if kind is structseq else kind
    return TreeSpec(spec_type, None if kind is structseq else context, children_specs)


# ---- flattening and unflattening --------------------------------------------------------
def tree_flatten(tree, is_leaf: IsLeafFn = None) -> tuple:
    """(leaves, spec) of `tree`, leaves in depth-first order."""
    leaves: list = []

    def walk(node) -> TreeSpec:
        if tree_is_leaf(node, is_leaf):
            leaves.append(node)
            return LeafSpec()
        kind = _node_kind(node)
        children, context = SUPPORTED_NODES[kind].flatten_fn(node)
        return _spec_of(node, kind, context, [walk(child) for child in children])
    return leaves, walk(tree)


def tree_flatten_with_path(tree, is_leaf: IsLeafFn = None) -> tuple:
    """([(key path, leaf)...], spec): every leaf with the keys leading to it."""
    pairs: list = []

    def walk(node, path: tuple) -> TreeSpec:
        if tree_is_leaf(node, is_leaf):
            pairs.append((path, node))
            return LeafSpec()
        kind = _node_kind(node)
        node_def = SUPPORTED_NODES[kind]
        if node_def.flatten_with_keys_fn is None:
            raise ValueError(f"Did not find a flatten_with_keys_fn for type: {kind}. Please "
                             "pass a flatten_with_keys_fn argument to register_pytree_node.")
        keyed, context = node_def.flatten_with_keys_fn(node)
        return _spec_of(node, kind, context,
                        [walk(child, path + (key,)) for key, child in keyed])
    spec = walk(tree, ())
    return pairs, spec


def tree_unflatten(leaves: Iterable, treespec: TreeSpec):
    """The tree `treespec` describes, with `leaves` in its leaf positions."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be "
                        f"instance of TreeSpec but got item of type {type(treespec)}.")
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but "
                         f"the spec refers to a pytree that holds {treespec.num_leaves} "
                         f"items ({treespec}).")
    position = iter(leaves)

    def build(node: TreeSpec):
        if node.is_leaf():
            return next(position)
        children = [build(c) for c in node.children_specs]
        context = node.type if is_structseq_class(node.type) else node.context
        return node._node_def().unflatten_fn(children, context)
    return build(treespec)


def tree_iter(tree, is_leaf: IsLeafFn = None):
    """The leaves one at a time, depth first, without building a spec."""
    if tree_is_leaf(tree, is_leaf):
        yield tree
        return
    children, _ = SUPPORTED_NODES[_node_kind(tree)].flatten_fn(tree)
    for child in children:
        yield from tree_iter(child, is_leaf)


def tree_leaves(tree, is_leaf: IsLeafFn = None) -> list:
    return list(tree_iter(tree, is_leaf))


def tree_leaves_with_path(tree, is_leaf: IsLeafFn = None) -> list:
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_structure(tree, is_leaf: IsLeafFn = None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]


# ---- mapping and predicates -------------------------------------------------------------
def tree_map(func: Callable, tree, *rests, is_leaf: IsLeafFn = None):
    """`tree` rebuilt with func(leaf, *matching subtrees of `rests`) at every leaf; each of
    `rests` must have `tree`'s structure (or a deeper one) at those positions."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(rest) for rest in rests]
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def tree_map_(func: Callable, tree, *rests, is_leaf: IsLeafFn = None):
    """Call func(leaf, *matching subtrees of `rests`) for its effect; return `tree`."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(rest) for rest in rests]
    for xs in zip(leaves, *others):
        func(*xs)
    return tree


def tree_map_with_path(func: Callable, tree, *rests, is_leaf: IsLeafFn = None):
    """tree_map whose func also receives each leaf's key path first."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    others = [spec.flatten_up_to(rest) for rest in rests]
    return tree_unflatten([func(path, leaf, *xs) for (path, leaf), *xs
                           in zip(pairs, *others)], spec)


def _selector(type_or_types_or_pred) -> Callable:
    """A leaf filter from a type, a tuple or union of types, or a predicate."""
    if isinstance(type_or_types_or_pred, (type, tuple, types.UnionType)):
        return lambda x: isinstance(x, type_or_types_or_pred)
    if callable(type_or_types_or_pred):
        return type_or_types_or_pred
    raise TypeError("Argument must be a type, a tuple of types, or a callable.")


def _only(type_or_types_or_pred, func: Callable) -> Callable:
    selected = _selector(type_or_types_or_pred)
    return lambda x: func(x) if selected(x) else x


def tree_map_only(type_or_types_or_pred, /, func: Callable, tree, is_leaf: IsLeafFn = None):
    """tree_map applying `func` only to the leaves of the given type(s) (or for which the
    predicate holds); the other leaves stay as they are."""
    return tree_map(_only(type_or_types_or_pred, func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred, /, func: Callable, tree,
                   is_leaf: IsLeafFn = None):
    return tree_map_(_only(type_or_types_or_pred, func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable, tree, is_leaf: IsLeafFn = None) -> bool:
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred: Callable, tree, is_leaf: IsLeafFn = None) -> bool:
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types, /, pred: Callable, tree, is_leaf: IsLeafFn = None) -> bool:
    """Whether `pred` holds for every leaf of the given type(s)."""
    return all(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, /, pred: Callable, tree, is_leaf: IsLeafFn = None) -> bool:
    return any(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


# ---- specs as text ----------------------------------------------------------------------
_DEFAULT_PROTOCOL = 1


def _spec_to_json(spec: TreeSpec) -> dict:
    if spec.is_leaf():
        return {"type": None, "context": None, "children_spec": []}
    kind = structseq if is_structseq_class(spec.type) else spec.type
    serialization = _SERIALIZATION[kind]
    if serialization.serialized_type_name is None:
        raise NotImplementedError(
            f"No registered serialization name for {spec.type} found. Please update your "
            "register_pytree_node call with a `serialized_type_name` kwarg.")
    context = spec.context
    if serialization.to_dumpable_context is not None:
        context = serialization.to_dumpable_context(context)
    try:
        context_text = json.dumps(context)
    except TypeError as err:
        raise TypeError(f"Unable to serialize context {context!r} of {spec.type} as JSON; "
                        "register the type with to_dumpable_context and "
                        "from_dumpable_context.") from err
    return {"type": serialization.serialized_type_name, "context": context_text,
            "children_spec": [_spec_to_json(c) for c in spec.children_specs]}


def _spec_from_json(data: dict) -> TreeSpec:
    if data["type"] is None:
        return LeafSpec()
    kind = _DESERIALIZE_TYPES.get(data["type"])
    if kind is None:
        raise NotImplementedError(f"Deserializing {data['type']} in pytree is not "
                                  "registered.")
    serialization = _SERIALIZATION[kind]
    context = json.loads(data["context"])
    if serialization.from_dumpable_context is not None:
        context = serialization.from_dumpable_context(context)
    return TreeSpec(kind, context, [_spec_from_json(c) for c in data["children_spec"]])


def treespec_dumps(treespec: TreeSpec, protocol: int | None = None) -> str:
    """The spec as JSON text, `[protocol, {type, context, children_spec}]`."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"treespec_dumps(treespec, protocol): Expected `treespec` to be "
                        f"instance of TreeSpec but got item of type {type(treespec)}.")
    protocol = _DEFAULT_PROTOCOL if protocol is None else protocol
    if protocol != _DEFAULT_PROTOCOL:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: "
                         f"[{_DEFAULT_PROTOCOL}]")
    return json.dumps([protocol, _spec_to_json(treespec)])


def treespec_loads(serialized: str) -> TreeSpec:
    """The spec `treespec_dumps` wrote."""
    protocol, data = json.loads(serialized)
    if protocol != _DEFAULT_PROTOCOL:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: "
                         f"[{_DEFAULT_PROTOCOL}]")
    return _spec_from_json(data)


class _Star:
    def __repr__(self):
        return "*"


def treespec_pprint(treespec: TreeSpec) -> str:
    """The spec drawn as the tree it describes, with `*` for each leaf."""
    return repr(tree_unflatten([_Star()] * treespec.num_leaves, treespec))


__all__ = ["PyTree", "Context", "FlattenFn", "UnflattenFn", "DumpableContext",
           "ToDumpableContextFn", "FromDumpableContextFn", "PyTreeSpec", "TreeSpec",
           "LeafSpec", "keystr", "key_get", "register_pytree_node", "tree_is_leaf",
           "tree_flatten", "tree_flatten_with_path", "tree_unflatten", "tree_iter",
           "tree_leaves", "tree_leaves_with_path", "tree_structure", "tree_map",
           "tree_map_with_path", "tree_map_", "tree_map_only", "tree_map_only_", "tree_all",
           "tree_any", "tree_all_only", "tree_any_only", "treespec_dumps", "treespec_loads",
           "treespec_pprint", "is_namedtuple", "is_namedtuple_class", "is_namedtuple_instance",
           "is_structseq", "is_structseq_class", "is_structseq_instance"]
