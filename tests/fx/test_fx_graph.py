"""Graph and Node built and edited by hand, side by side with torch.fx where the two can
be compared: names, printing, generated code, editing, lint and dead-code elimination."""
import operator

import pytest

import glasstorch as gt
import glasstorch.fx as gfx
from oracle import oracle_torch


def libraries():
    torch = oracle_torch()
    return [(gt, gfx), (torch, torch.fx)]


def build_naming_graph(T, fx):
    """Names from targets: snake_case, `_1` suffixes, builtins avoided, dots sanitized."""
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y", default_value=3)
    mm = g.call_function(T.ops.aten.mm.default, (x, x))
    s1 = g.call_function(T.sum, (mm,))
    s2 = g.call_function(T.sum, (s1,), name="sum_1")
    s3 = g.call_function(T.sum, (s2,), name="sum_7")
    m = g.call_module("foo.bar", (s3,), {"scale": y})
    a = g.get_attr("a.0.b")
    add = g.call_function(operator.add, (m, a))
    cm = g.call_method("MyMethodName", (add,))
    ga = g.call_function(getattr, (cm, "shape"))
    gi = g.call_function(operator.getitem, (ga, 0))
    g.call_function(operator.neg, (gi,), name="2nd")
    g.call_function(operator.abs, (gi,), name="class")
    g.output((add, [gi], {"k": cm}))
    return g


def test_names_printing_and_code_match_torch():
    (_, gfx_), (torch, tfx) = libraries()
    ours = build_naming_graph(gt, gfx_)
    theirs = build_naming_graph(torch, tfx)
    assert [n.name for n in ours.nodes] == [n.name for n in theirs.nodes]
    assert str(ours) == str(theirs)
    assert ours.python_code("self").src == theirs.python_code("self").src
    assert [n.format_node() for n in ours.nodes] == [n.format_node() for n in theirs.nodes]


def test_node_links_users_and_inputs():
    for T, fx in libraries():
        g = fx.Graph()
        x = g.placeholder("x")
        y = g.placeholder("y")
        a = g.call_function(operator.add, (x, y))
        b = g.call_function(operator.mul, (a, x), {"unused": [y]})
        out = g.output(b)
        assert list(x.users) == [a, b] and list(a.users) == [b]
        assert b.all_input_nodes == [a, x, y]
        assert (a.next, a.prev, out.next.op) == (b, y, "root")
        b.args = (x, x)
        assert list(a.users) == [] and b.all_input_nodes == [x, y]
        b.replace_input_with(x, a)
        assert b.args == (a, a) and list(x.users) == [a]
        changed = a.replace_all_uses_with(y)
        assert changed == [b] and b.args == (y, y)
        with pytest.raises(TypeError):
            b.kwargs["unused"].append(x)


def test_insert_points_prepend_append_and_copy():
    for T, fx in libraries():
        g = fx.Graph()
        x = g.placeholder("x")
        r = g.call_method("relu", (x,))
        g.output(r)
        with g.inserting_before(r):
            n = g.call_method("neg", (x,))
        with g.inserting_after(r):
            s = g.call_method("sigmoid", (r,))
        assert [v.name for v in g.nodes] == ["x", "neg", "relu", "sigmoid", "output"]
        s.prepend(n)
        assert [v.name for v in g.nodes] == ["x", "relu", "neg", "sigmoid", "output"]
        n.append(r)
        assert [v.name for v in g.nodes] == ["x", "neg", "relu", "sigmoid", "output"]
        copy = fx.Graph()
        env = {}
        out = copy.graph_copy(g, env)
        copy.output(out)
        assert str(copy) == str(g)
        assert env[x] is not x and env[x].graph is copy


def test_nodes_iteration_survives_erasing():
    for T, fx in libraries():
        g = fx.Graph()
        x = g.placeholder("x")
        a = g.call_method("neg", (x,))
        b = g.call_method("relu", (x,))
        g.output(b)
        seen = []
        for node in g.nodes:
            seen.append(node.name)
            if node is a:
                g.erase_node(a)
        assert seen == ["x", "neg", "relu", "output"]
        assert [n.name for n in reversed(g.nodes)] == ["output", "relu", "x"]
        assert len(g.nodes) == 3


def test_erase_node_with_users_raises_as_torch():
    messages = []
    for T, fx in libraries():
        g = fx.Graph()
        x = g.placeholder("x")
        g.output(g.call_method("neg", (x,)))
        with pytest.raises(RuntimeError) as info:
            g.erase_node(x)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_eliminate_dead_code_keeps_side_effects():
    for T, fx in libraries():
        g = fx.Graph()
        x = g.placeholder("x")
        dead = g.call_method("neg", (x,))
        g.call_method("relu", (dead,))
        g.call_function(print, (x,))                          # pure, as in PyTorch
        g.call_method("add_", (x, 1))                         # a method: not inspected
        g.call_function(T.ops.aten.add_.Tensor, (x, x))       # mutates an argument
        g.call_function(operator.setitem, (x, 0, 1.0))
        g.output(x)
        assert g.eliminate_dead_code() is True
        assert [n.name for n in g.nodes] == ["x", "add__tensor", "setitem", "output"]
        assert g.eliminate_dead_code() is False


def test_lint_finds_use_before_definition():
    for T, fx in libraries():
        g = fx.Graph()
        x = g.placeholder("x")
        a = g.call_method("neg", (x,))
        b = g.call_method("relu", (a,))
        g.output(b)
        g.lint()
        a.prepend(b)
        with pytest.raises(RuntimeError, match="used before it has been defined"):
            g.lint()


def test_lint_checks_targets_of_the_owning_module():
    gm = gfx.symbolic_trace(gt.nn.Sequential(gt.nn.ReLU()))
    gm.graph.lint()
    node = next(n for n in gm.graph.nodes if n.op == "call_module")
    node.target = "missing"
    with pytest.raises(RuntimeError, match="references nonexistent attribute missing"):
        gm.graph.lint()


def test_hand_built_graph_runs_in_a_graph_module():
    g = gfx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("weight")
    mm = g.call_function(gt.ops.aten.mm.default, (x, w))
    g.output(g.call_method("sum", (mm,), {"dim": 0}))
    root = gt.nn.Module()
    root.weight = gt.nn.Parameter(gt.ones(2, 3))
    gm = gfx.GraphModule(root, g)
    assert gm.code == ("\n\n\ndef forward(self, x):\n    weight = self.weight\n"
                       "    mm_default = torch.ops.aten.mm.default(x, weight);  x = weight = None\n"
                       "    sum_1 = mm_default.sum(dim = 0);  mm_default = None\n"
                       "    return sum_1\n    ")
    assert gm(gt.ones(4, 2)).tolist() == [8.0, 8.0, 8.0]
    assert gm.weight is root.weight


def test_map_arg_and_map_aggregate():
    g = gfx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y")
    nested = (x, [y, 1], {"a": slice(x, None)})
    names = gfx.map_arg(nested, lambda n: n.name)
    assert names == ("x", ["y", 1], {"a": slice("x", None, None)})
    assert gfx.node.map_aggregate((1, [2]), lambda v: v * 10) == (10, [20])
    with pytest.raises(TypeError, match="does not support mutation"):
        g.call_function(operator.add, ([x],)).args[0].append(y)


def test_print_tabular_lists_every_node(capsys):
    g = gfx.Graph()
    x = g.placeholder("x")
    g.output(g.call_method("relu", (x,)))
    g.print_tabular()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert [line.split()[:3] for line in lines[2:]] == [
        ["placeholder", "x", "x"], ["call_method", "relu", "relu"], ["output", "output",
                                                                      "output"]]


def test_deepcopy_of_a_graph_keeps_names_and_structure():
    import copy
    for T, fx in libraries():
        g = fx.Graph()
        x = g.placeholder("x")
        g.call_method("neg", (x,))
        partial = copy.deepcopy(g)                 # no output yet
        assert [n.name for n in partial.nodes] == ["x", "neg"]
        g.output(g.call_function(operator.add, (x, 1)))
        copied = copy.deepcopy(g)
        assert str(copied) == str(g)
        assert all(a is not b for a, b in zip(copied.nodes, g.nodes))


def test_placeholders_named_like_generated_code_globals_are_renamed():
    codes = []
    for T, fx in libraries():
        g = fx.Graph()
        nodes = [g.placeholder(name) for name in ("device", "torch", "inf", "sum", "x")]
        g.output(tuple(nodes))
        codes.append(g.python_code("self").src)
        assert [n.name for n in nodes] == ["device_1", "torch_1", "inf_1", "sum_1", "x"]
    assert codes[0] == codes[1]


def test_insert_arg_update_arg_and_find_nodes_as_torch():
    for T, fx in libraries():
        g = fx.Graph()
        x = g.placeholder("x")
        a = g.call_method("view", (x, 4))
        b = g.call_method("view", (a, 2, 2))
        g.output(b)
        a.insert_arg(1, -1)
        a.update_arg(2, 1)
        b.update_kwarg("unused", x)
        assert a.args == (x, -1, 1) and b.kwargs == {"unused": x}
        assert list(x.users) == [a, b]
        assert g.find_nodes(op="call_method", target="view") == [a, b]
        assert g.find_nodes(op="placeholder") == [x]


def test_boxed_run_empties_the_list():
    for T, fx in libraries():
        gm = fx.symbolic_trace(lambda x: x * 2)
        inputs = [T.ones(2)]
        assert fx.Interpreter(gm).boxed_run(inputs).tolist() == [2.0, 2.0]
        assert inputs == []
