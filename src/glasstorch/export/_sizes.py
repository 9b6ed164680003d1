"""Sizes that follow the dynamic dimensions, without symbolic shapes.

A graph traced at the example sizes holds some sizes as plain ints (`view(x, [8, 32])`
after a Linear on a (batch, time, features) input, `expand`, `new_zeros`, `slice` ends).
To let the program run at other sizes of its dynamic dimensions, the model is traced again
with the dynamic sizes moved: once per dimension alone and once per pair. The graphs must
have the same ops; each int argument that differs is fitted as a polynomial in the moves
`m_i = size_i - example_i` with integer coefficients,

    value = example value + sum(c_i * m_i) + sum(c_ij * m_i * m_j),

which covers sums, multiples and products of two sizes (`batch * time`). A last trace
with every dimension moved by another amount checks the fit; a size the polynomial does not
describe (a product of three dynamic sizes, a division) is refused, with the op named.
`specialize` writes the ints for a call's sizes into a graph.
"""
from __future__ import annotations

import itertools


def _other_sizes(example: int, low: int, high: int) -> list:
    """Sizes in the range to trace at besides the example (sizes 0 and 1 are avoided:
    they are special cases for many ops)."""
    candidates = (example + 2, example - 1, example + 1, example + 3, example - 2)
    return [c for c in candidates if low <= c <= high and c != example and c >= 2]


def fit_sizes(gm, ranges: dict, example_shapes: list, trace) -> dict:
    """{node name: [(argument path, example value, {key: coefficient})]} for the int
    arguments of `gm`'s nodes that follow the dynamic dimensions in `ranges`; a key is a
    tuple of one or two (input, dim) pairs. `trace(shapes)` retraces at other shapes."""
    moves, checks = {}, {}
    for (position, d), (_, low, high) in ranges.items():
        example = example_shapes[position][d]
        others = _other_sizes(example, low, high)
        if others:
            moves[(position, d)] = others[0] - example
            if len(others) > 1:
                checks[(position, d)] = others[1] - example
    if not moves:
        return {}

    def traced(moved: dict) -> dict:
        shapes = [list(s) for s in example_shapes]
        for (position, d), m in moved.items():
            shapes[position][d] += m
        return {(name, path): value for name, path, _, value in
                _differences(gm, trace(shapes))}

    singles = {key: traced({key: m}) for key, m in moves.items()}
    fitted: dict = {}

    def add(where, key, amount, divisor):
        coefficient, remainder = divmod(amount, divisor)
        if remainder:
            raise ValueError(_refusal(where, "in a way"))
        if coefficient:
            fitted.setdefault(where, {})[key] = coefficient

    examples = {}
    for key, values in singles.items():
        for where, value in values.items():
            examples[where] = _example_value(gm, where)
            add(where, (key,), value - examples[where], moves[key])
    for a, b in itertools.combinations(sorted(moves), 2):
        both = traced({a: moves[a], b: moves[b]})
        for where in set(both) | set(singles[a]) | set(singles[b]):
            examples.setdefault(where, _example_value(gm, where))
            e = examples[where]
            cross = (both.get(where, e) - singles[a].get(where, e) - singles[b].get(where, e)
                     + e)
            add(where, (a, b), cross, moves[a] * moves[b])
    if checks:
        moved = {key: checks.get(key, m) for key, m in moves.items()}
        for where, value in traced(moved).items():
            predicted = evaluate((_example_value(gm, where), fitted.get(where, {})), moved)
            if predicted != value:
                raise ValueError(_refusal(where, "beyond products of two sizes"))
    result: dict = {}
    for (name, path), coefficients in fitted.items():
        result.setdefault(name, []).append((path, examples[(name, path)], coefficients))
    return result


def _refusal(where, how: str) -> str:
    name, path = where
    return (f"torch.export: {name}'s argument {path} changes with the dynamic dimensions "
            f"{how} glasstorch cannot express without symbolic shapes")


def _example_value(gm, where):
    name, path = where
    node = next(n for n in gm.graph.nodes if n.name == name)
    value = (node.args, node.kwargs)
    for step in path:
        value = value[step]
    return value


def evaluate(entry, moves: dict) -> int:
    """An int argument's value when each dynamic dimension moved by `moves[(input, dim)]`."""
    base, coefficients = entry
    total = base
    for key, c in coefficients.items():
        term = c
        for dim in key:
            term *= moves.get(dim, 0)
        total += term
    return total


def _differences(gm, other):
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
