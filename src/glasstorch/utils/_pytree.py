"""Nested containers as leaves plus a structure (torch.utils._pytree).

`tree_flatten([x, {"a": y}])` gives the leaves `[x, y]` and a `TreeSpec` that
`tree_unflatten` fills back in; `tree_map(fn, tree)` rebuilds the tree with `fn` applied to
every leaf. Lists, tuples, namedtuples, dicts (in insertion order), OrderedDicts,
defaultdicts, deques and `Size` are containers; everything else, None included, is a leaf.
Subclass and mode code uses it to find the tensors in an op's arguments.
"""
from __future__ import annotations

from collections import OrderedDict, defaultdict, deque
from dataclasses import dataclass, field
from typing import Any, Callable

from ..core.shape import Size


def _is_namedtuple(tree) -> bool:
    return isinstance(tree, tuple) and hasattr(type(tree), "_fields")


def _node_type(tree):
    """The container kind of `tree` (None for a leaf): exact types, as PyTorch looks up."""
    kind = type(tree)
    if kind in (list, tuple, dict, OrderedDict, defaultdict, deque, Size):
        return kind
    if _is_namedtuple(tree):
        return "namedtuple"
    return None


def _children(tree, kind) -> tuple:
    """(children, context): what unflattening needs besides the children."""
    if kind in (dict, OrderedDict):
        return list(tree.values()), list(tree.keys())
    if kind is defaultdict:
        return list(tree.values()), [tree.default_factory, list(tree.keys())]
    if kind == "namedtuple":
        return list(tree), type(tree)
    if kind is deque:
        return list(tree), tree.maxlen
    return list(tree), None


def _rebuild(kind, context, children):
    if kind in (dict, OrderedDict):
        return kind(zip(context, children))
    if kind is defaultdict:
        return defaultdict(context[0], zip(context[1], children))
    if kind == "namedtuple":      # a namedtuple, or a structseq (torch.return_types)
        return context._make(children) if hasattr(context, "_make") else context(children)
    if kind is deque:
        return deque(children, maxlen=context)
    return kind(children)


@dataclass
class TreeSpec:
    """The structure of a flattened tree: a container kind, its context (dict keys, the
    namedtuple class) and the specs of its children. A leaf's spec is `LeafSpec()`."""

    type: Any
    context: Any
    children_specs: list = field(default_factory=list)

    @property
    def num_leaves(self) -> int:
        return sum(child.num_leaves for child in self.children_specs)

    def is_leaf(self) -> bool:
        return False

    def __repr__(self):
        name = self.type if isinstance(self.type, str) else self.type.__name__
        return f"TreeSpec({name}, {self.context!r}, {self.children_specs!r})"


class LeafSpec(TreeSpec):
    def __init__(self):
        super().__init__(None, None, [])

    @property
    def num_leaves(self) -> int:
        return 1

    def is_leaf(self) -> bool:
        return True

    def __repr__(self):
        return "*"


def tree_flatten(tree) -> tuple:
    """(leaves, spec) of `tree`, leaves in depth-first order."""
    leaves: list = []

    def walk(node) -> TreeSpec:
        kind = _node_type(node)
        if kind is None:
            leaves.append(node)
            return LeafSpec()
        children, context = _children(node, kind)
        return TreeSpec(kind, context, [walk(child) for child in children])
    return leaves, walk(tree)


def tree_unflatten(leaves, spec: TreeSpec):
    """The tree `spec` describes, with `leaves` in its leaf positions."""
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but "
                         f"the spec refers to a pytree that holds {spec.num_leaves} items "
                         f"({spec}).")
    position = iter(leaves)

    def build(node: TreeSpec):
        if node.is_leaf():
            return next(position)
        return _rebuild(node.type, node.context, [build(c) for c in node.children_specs])
    return build(spec)


def tree_leaves(tree) -> list:
    return tree_flatten(tree)[0]


def tree_structure(tree) -> TreeSpec:
    return tree_flatten(tree)[1]


def tree_map(func: Callable, tree, *rests):
    """`tree` rebuilt with func(leaf, *matching leaves of `rests`) at every leaf."""
    leaves, spec = tree_flatten(tree)
    others = [tree_flatten(rest)[0] for rest in rests]
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def tree_map_only(type_or_types, func: Callable, tree):
    """tree_map applying `func` only to the leaves of the given type(s)."""
    return tree_map(lambda x: func(x) if isinstance(x, type_or_types) else x, tree)


def tree_all(pred: Callable, tree) -> bool:
    return all(map(pred, tree_leaves(tree)))


def tree_any(pred: Callable, tree) -> bool:
    return any(map(pred, tree_leaves(tree)))


__all__ = ["LeafSpec", "TreeSpec", "tree_all", "tree_any", "tree_flatten", "tree_leaves",
           "tree_map", "tree_map_only", "tree_structure", "tree_unflatten"]
