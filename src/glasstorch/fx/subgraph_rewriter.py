"""`torch.fx.subgraph_rewriter`: find every occurrence of a pattern in a graph and replace
it with another subgraph.

The pattern and the replacement are functions (or GraphModules) traced with
`symbolic_trace`. A match maps each pattern node to a graph node with the same op and
target, argument by argument, starting at the pattern's returned node(s) and walking up;
the pattern's placeholders match any value, the same one each time. A match whose inner
nodes are also used outside it is skipped (replacing it would change those uses), as are
matches that overlap one found earlier.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_arg


class Match(NamedTuple):
    anchor: Node            # the pattern node the match was found from (its returned node)
    nodes_map: dict         # pattern node -> graph node


def _graph_of(fn_or_gm) -> Graph:
    if isinstance(fn_or_gm, GraphModule):
        return fn_or_gm.graph
    from ._symbolic_trace import symbolic_trace
    return symbolic_trace(fn_or_gm).graph


def _returned_nodes(graph: Graph) -> list:
    output = next(n for n in graph.nodes if n.op == "output")
    returned: list = []
    map_arg(output.args[0], returned.append)
    return returned


class _Matcher:
    def __init__(self, pattern: Graph):
        self.pattern = pattern
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
        self.anchors = _returned_nodes(pattern)

    def match_at(self, anchor: Node, graph: Graph) -> dict | None:
        """A match whose first returned node is `anchor`, or None. Further returned nodes
        are found by search when they are not reached from the first."""
        nodes_map: dict = {}
        if not self._match_node(self.anchors[0], anchor, nodes_map):
            return None
        return self._match_remaining_anchors(1, nodes_map, graph)

    def _match_remaining_anchors(self, i: int, nodes_map: dict, graph: Graph) -> dict | None:
        if i == len(self.anchors):
            return nodes_map
        p = self.anchors[i]
        if p in nodes_map:
            return self._match_remaining_anchors(i + 1, nodes_map, graph)
        for g in graph.nodes:
            trial = dict(nodes_map)
            if self._match_node(p, g, trial):
                found = self._match_remaining_anchors(i + 1, trial, graph)
                if found is not None:
                    return found
        return None

    def _match_node(self, p: Node, g: Node, nodes_map: dict) -> bool:
        if p in nodes_map:
            return nodes_map[p] is g
        if any(g is mapped for mapped in nodes_map.values()):
            return False                  # one graph node per pattern node
        if p.op == "placeholder":
            nodes_map[p] = g
            return True
        if p.op != g.op or p.target != g.target or len(p.args) != len(g.args) or set(
                p.kwargs) != set(g.kwargs):
            return False
        nodes_map[p] = g
        ok = all(self._match_arg(pa, ga, nodes_map) for pa, ga in zip(p.args, g.args)) and all(
            self._match_arg(p.kwargs[k], g.kwargs[k], nodes_map) for k in p.kwargs)
        if not ok:
            del nodes_map[p]
        return ok

    def _match_arg(self, pa, ga, nodes_map: dict) -> bool:
        if isinstance(pa, Node):
            if pa.op == "placeholder" and not isinstance(ga, Node):
                if pa in nodes_map:               # a placeholder also matches a constant
                    return nodes_map[pa] == ga
                nodes_map[pa] = ga
                return True
            return isinstance(ga, Node) and self._match_node(pa, ga, nodes_map)
        if isinstance(pa, (tuple, list)):
            return (isinstance(ga, (tuple, list)) and len(pa) == len(ga)
                    and all(self._match_arg(x, y, nodes_map) for x, y in zip(pa, ga)))
        if isinstance(pa, dict):
            return (isinstance(ga, dict) and set(pa) == set(ga)
                    and all(self._match_arg(pa[k], ga[k], nodes_map) for k in pa))
        return not isinstance(ga, Node) and type(pa) is type(ga) and pa == ga

    def is_self_contained(self, nodes_map: dict) -> bool:
        """Only the returned nodes may be used outside the match."""
        inner = {nodes_map[p] for p in self.pattern.nodes
                 if p.op not in ("placeholder", "output")}
        returned = {nodes_map[p] for p in self.anchors}
        return all(user in inner for g in inner - returned for user in g.users)


def _insertion_point(graph: Graph, returned: list) -> Node:
    """Where the replacement goes: before the first user of what the match returned (so
    every input of the match is defined by then), else after the last returned node."""
    users = {user for n in returned for user in n.users}
    for node in graph.nodes:
        if node in users:
            return node
    return max(returned, key=lambda n: list(graph.nodes).index(n)).next


def replace_pattern(gm: GraphModule, pattern: Callable | GraphModule,
                    replacement: Callable | GraphModule) -> list:
    """Replace each non-overlapping occurrence of `pattern` in `gm.graph` with
    `replacement` (same arguments, same number of results); recompiles `gm` and returns
    the matches found, in graph order (each maps pattern nodes to the graph nodes they
    matched, which are erased)."""
    pattern_graph = _graph_of(pattern)
    replacement_graph = _graph_of(replacement)
    matcher = _Matcher(pattern_graph)
    graph = gm.graph
    matches: list = []
    claimed: set = set()
    for node in graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        nodes_map = matcher.match_at(node, graph)
        if nodes_map is None or not matcher.is_self_contained(nodes_map):
            continue
        inner = [nodes_map[p] for p in pattern_graph.nodes
                 if p.op not in ("placeholder", "output")]
        if any(n in claimed for n in inner):
            continue
        claimed.update(inner)
        matches.append(Match(anchor=matcher.anchors[0], nodes_map=nodes_map))

    replacement_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    for match in matches:
        inputs = [match.nodes_map.get(p) for p in matcher.placeholders]
        val_map = dict(zip(replacement_placeholders, inputs))
        old_outputs = [match.nodes_map[p] for p in matcher.anchors]
        with graph.inserting_before(_insertion_point(graph, old_outputs)):
            results = graph.graph_copy(replacement_graph, val_map)
        new_outputs: list = []
        map_arg(results, new_outputs.append)
        if not isinstance(results, Node) and not new_outputs:
            new_outputs = [results]
        for old, new in zip(old_outputs, new_outputs):
            old.replace_all_uses_with(new)
        for p in reversed(pattern_graph.nodes):
            if p.op not in ("placeholder", "output"):
                graph.erase_node(match.nodes_map[p])
    gm.recompile()
    return matches
