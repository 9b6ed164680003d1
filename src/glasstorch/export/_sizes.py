"""Sizes that follow the dynamic dimensions, without symbolic shapes.

A graph traced at the example sizes holds some sizes as plain ints (`view(x, [4, 144])`
after a flatten, `expand`, `new_zeros`). To let the program run at other sizes of its
dynamic dimensions, the model is traced once more per dynamic dimension with only that size
changed; the two graphs must have the same ops, and each int argument that differs is
fitted as `example value + coefficient * (size - example size)`. A last trace with every
dynamic dimension changed at once checks that the fitted formulas add up (they do not for
a size that is a product of two dynamic sizes; such a model is refused, with the op named).
`specialize` writes the ints for a call's sizes into a graph.
"""
from __future__ import annotations

_MARGIN = 1        # how far from the example size the extra traces go


def _other_size(example: int, low: int, high: int):
    for candidate in (example + _MARGIN + 1, example - 1, example + 1):
        if low <= candidate <= high and candidate != example and candidate >= 2:
            return candidate
    return None


def fit_sizes(gm, ranges: dict, example_shapes: list, trace) -> dict:
    """{node name: [(argument path, example value, {(input, dim): coefficient})]} for the
    int arguments of `gm`'s nodes that follow the dynamic dimensions in `ranges`;
    `trace(shapes)` retraces the model at other input shapes."""
    fitted: dict = {}
    changed_all = [list(s) for s in example_shapes]
    moves = {}
    for (position, d), (_, low, high) in ranges.items():
        example = example_shapes[position][d]
        other = _other_size(example, low, high)
        if other is None:
            continue
        moves[(position, d)] = other - example
        shapes = [list(s) for s in example_shapes]
        shapes[position][d] = other
        changed_all[position][d] = other
        for name, path, base, value in _differences(gm, trace(shapes), (position, d)):
            step, remainder = divmod(value - base, other - example)
            if remainder:
                raise ValueError(f"torch.export: {name}'s argument {path} changes with the "
                                 f"dynamic dimension {ranges[(position, d)][0]} in a way "
                                 "glasstorch cannot express without symbolic shapes")
            entries = fitted.setdefault(name, {})
            entries.setdefault(path, [base, {}])[1][(position, d)] = step
    if len(moves) > 1:
        for name, path, base, value in _differences(gm, trace(changed_all), None):
            predicted = evaluate(fitted.get(name, {}).get(path, [base, {}]), moves)
            if predicted != value:
                raise ValueError(f"torch.export: {name}'s argument {path} depends on several "
                                 "dynamic dimensions at once (a product of sizes), which "
                                 "glasstorch cannot express without symbolic shapes")
    return {name: [(path, base, coefficients) for path, (base, coefficients)
                   in entries.items()] for name, entries in fitted.items()}


def evaluate(entry, moves: dict) -> int:
    """An int argument's value when each dynamic dimension moved by `moves[(input, dim)]`."""
    base, coefficients = entry
    return base + sum(c * moves.get(key, 0) for key, c in coefficients.items())


def _differences(gm, other, what):
    """(node name, argument path, example value, other value) of the int arguments that
    differ between two traces, which must otherwise match node for node."""
    ours, theirs = list(gm.graph.nodes), list(other.graph.nodes)
    for a, b in zip(ours, theirs):
        if (a.op, a.target, a.name) != (b.op, b.target, b.name):
            break
        for path, x, y in _walk((a.args, a.kwargs), (b.args, b.kwargs), ()):
            yield a.name, path, x, y
    else:
        if len(ours) == len(theirs):
            return
    raise ValueError("torch.export: the model runs different operators when a dynamic "
                     "dimension changes size; export it with that dimension static")


def _walk(x, y, path):
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)) and len(x) == len(y):
        for i, (u, v) in enumerate(zip(x, y)):
            yield from _walk(u, v, path + (i,))
    elif isinstance(x, dict) and isinstance(y, dict):
        for k in x:
            yield from _walk(x[k], y.get(k), path + (k,))
    elif type(x) is int and type(y) is int and x != y:
        yield path, x, y


def specialize(graph, sizes: dict, moves: dict) -> None:
    """Write into `graph`'s nodes the int arguments for dynamic sizes moved by `moves`."""
    nodes = {n.name: n for n in graph.nodes}
    for name, entries in sizes.items():
        node = nodes[name]
        args, kwargs = node.args, dict(node.kwargs)
        for path, base, coefficients in entries:
            value = evaluate((base, coefficients), moves)
            args, kwargs = _replace((args, kwargs), path, value)
        node.args, node.kwargs = args, kwargs


def _replace(tree, path, value):
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {**tree, head: _replace(tree[head], rest, value)}
    items = list(tree)
    items[head] = _replace(items[head], rest, value)
    return type(tree)(items) if isinstance(tree, tuple) else items
