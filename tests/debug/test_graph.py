"""Graph pictures: indented text and DOT, with names, saved tensors and leaves."""
import re

import glasstorch as gt


def _loss():
    w = gt.ones(3, 2, requires_grad=True)
    x = gt.ones(4, 3)
    return w, (x @ w).tanh().sum()


def test_text_shows_nodes_saved_tensors_and_named_leaves():
    w, loss = _loss()
    lines = gt.debug.graph_text(loss, names={"w": w}).splitlines()
    assert lines[0] == "SumBackward0"
    assert lines[1].startswith("  TanhBackward0") and "result: [4, 2] float32" in lines[1]
    assert lines[2].startswith("    MmBackward0") and "[4, 3] float32" in lines[2]
    assert lines[3] == "      AccumulateGrad -> w [3, 2] float32"


def test_shared_nodes_are_shown_once_and_constants_say_so():
    a = gt.ones(2, requires_grad=True)
    b = a * 2
    text = gt.debug.graph_text(b * b + b)
    assert text.count("(seen above)") >= 1
    assert gt.debug.graph_text(gt.ones(2)) == "constant [2] float32 (no graph)"


def test_dot_has_one_node_per_function_and_edges_from_inputs():
    w, loss = _loss()
    dot = gt.debug.graph_dot(loss, names={"w": w})
    assert dot.startswith("digraph autograd {") and dot.rstrip().endswith("}")
    nodes = re.findall(r"^  (n\d+) \[shape=(box|ellipse)", dot, re.M)
    assert [shape for _, shape in nodes].count("ellipse") == 1 and len(nodes) == 4
    assert len(re.findall(r"^  n\d+ -> n\d+;$", dot, re.M)) == 3
    assert 'label="w [3, 2] float32"' in dot


def test_deep_graphs_do_not_recurse():
    x = gt.ones(1, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    assert gt.debug.graph_text(y).count("MulBackward0") == 3000
    assert gt.debug.graph_dot(y).count("->") == 3000
