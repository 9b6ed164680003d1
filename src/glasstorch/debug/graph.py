"""Pictures of the autograd graph: indented text, or Graphviz DOT text (no graphviz needed).

    print(glasstorch.debug.graph_text(loss))
    open("graph.dot", "w").write(glasstorch.debug.graph_dot(loss))   # dot -Tsvg graph.dot
"""
from __future__ import annotations

from ..autograd.graph import AccumulateGrad, SavedTensor


def _saved(node) -> list:
    """'name: shape dtype' for each tensor a node keeps for its backward."""
    out = []
    for name, value in sorted(getattr(node, "_saved", {}).items()):
        if isinstance(value, SavedTensor) and value.tensor is not None:   # None: packed
            t = value.tensor
            out.append(f"{name}: {list(t._shape)} {t.dtype.name}")
    return out


def _leaf(node, names: dict) -> str:
    t = node.variable
    label = names.get(id(t), "leaf")
    return f"{label} {list(t._shape)} {t.dtype.name}"


def graph_text(tensor, names: dict | None = None) -> str:
    """The graph behind `tensor`, one node per line, inputs indented below their user.

    names: optional {name: tensor} to label leaves (e.g. dict(model.named_parameters())).
    A node reached again is shown once more as '(seen above)'."""
    if tensor.grad_fn is None:
        return f"{'leaf' if tensor.requires_grad else 'constant'} {list(tensor._shape)} " \
               f"{tensor.dtype.name} (no graph)"
    labels = {id(t): n for n, t in (names or {}).items()}
    lines, seen = [], set()
    stack = [(tensor.grad_fn, 0)]          # iterative: graphs can be thousands deep
    while stack:
        node, depth = stack.pop()
        pad = "  " * depth
        if isinstance(node, AccumulateGrad):
            lines.append(f"{pad}AccumulateGrad -> {_leaf(node, labels)}")
            continue
        if node in seen:
            lines.append(f"{pad}{node.name()} (seen above)")
            continue
        seen.add(node)
        saved = _saved(node)
        lines.append(f"{pad}{node.name()}" + (f"  saved: {', '.join(saved)}" if saved else ""))
        for nxt, _ in reversed(node.next_functions):
            if nxt is not None:
                stack.append((nxt, depth + 1))
    return "\n".join(lines)


def graph_dot(tensor, names: dict | None = None) -> str:
    """The graph behind `tensor` as Graphviz DOT text: ops as boxes, leaves as ellipses,
    edges from each input to the node that uses it."""
    labels = {id(t): n for n, t in (names or {}).items()}
    lines = ["digraph autograd {", '  rankdir="BT";', '  node [fontname="monospace"];']
    ids: dict = {}
    pending = [tensor.grad_fn] if tensor.grad_fn is not None else []
    while pending:
        node = pending.pop()
        if node in ids:
            continue
        ids[node] = f"n{len(ids)}"
        if isinstance(node, AccumulateGrad):
            lines.append(f'  {ids[node]} [shape=ellipse, label="{_leaf(node, labels)}"];')
        else:
            label = "\\n".join([node.name()] + _saved(node))
            lines.append(f'  {ids[node]} [shape=box, label="{label}"];')
        pending.extend(n for n, _ in node.next_functions if n is not None)
    for node, name in ids.items():
        for nxt, _ in node.next_functions:
            if nxt is not None:
                lines.append(f"  {ids[nxt]} -> {name};")
    lines.append("}")
    return "\n".join(lines)
