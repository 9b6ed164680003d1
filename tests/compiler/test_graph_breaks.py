"""Graph breaks: data-dependent Python ends a graph and capture resumes after it; explain()
lists graphs and breaks with reasons and lines (counts side by side with PyTorch);
fullgraph=True makes a break an error naming the line; uncapturable ops run eagerly."""
import inspect

import pytest

import glasstorch as gt
from oracle import oracle_torch


def branchy(T):
    def f(x):
        x = x + 1
        if x.sum() > 0:
            x = x * 2
        return x.relu()
    return f


def item_in_middle(T):
    def f(x):
        y = x.sin()
        scale = y.sum().item()
        return y * scale + 1
    return f


def no_break(T):
    def f(x, y):
        return (x @ y).softmax(-1).sum(0)
    return f


def two_breaks(T):
    def f(x):
        a = x.cos()
        if a.mean() > 0:
            a = a + 1
        b = a * a.max().item()
        return b - 1
    return f


def line_of(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("make", [branchy, item_in_middle, no_break, two_breaks])
def test_explain_counts_match_pytorch(make):
    torch = oracle_torch()
    args = (gt.randn(3, 3), gt.randn(3, 3))
    theirs_args = tuple(torch.tensor(a.numpy()) for a in args)
    n = len(inspect.signature(make(gt)).parameters)
    ours = gt._dynamo.explain(make(gt))(*args[:n])
    torch._dynamo.reset()
    theirs = torch._dynamo.explain(make(torch))(*theirs_args[:n])
    assert (ours.graph_count, ours.graph_break_count) == (theirs.graph_count,
                                                          theirs.graph_break_count)
    assert len(ours.graphs) == ours.graph_count


def test_explain_names_the_reason_and_the_users_line():
    f = branchy(gt)
    out = gt._dynamo.explain(f)(gt.ones(3))
    (brk,) = out.break_reasons
    assert "data-dependent control flow" in brk.reason
    assert brk.filename == __file__ and brk.lineno == line_of(f, "if x.sum() > 0")
    assert (brk.user_stack[-1].filename, brk.user_stack[-1].lineno) == (__file__, brk.lineno)
    text = str(out)
    assert "Graph Count: 2\nGraph Break Count: 1\n" in text
    assert f"{__file__}:{brk.lineno}" in text and "aten.gt.Scalar" in text
    assert ("x", "tensor") in [(g.source, g.kind) for g in out.out_guards]


def test_code_before_and_after_a_break_still_runs_compiled(counter):
    f = gt.compile(two_breaks(gt), backend=counter)
    x = gt.randn(4)
    assert gt.allclose(f(x), two_breaks(gt)(x))
    assert counter.compiles == 3
    f(x)
    assert counter.compiles == 3                   # each of the three graphs is reused
    first, second, third = ([str(n.target) for n in g.graph.nodes if n.op == "call_function"]
                            for g in counter.graphs)
    assert "aten.cos.default" in first and "aten.sub.Tensor" in third


@pytest.mark.parametrize("reader", [
    lambda t: t.item(), lambda t: t.tolist(), lambda t: bool(t), lambda t: t.numpy(),
    lambda t: str(t), lambda t: f"{t:.3f}", lambda t: float(t)])
def test_each_way_of_reading_data_is_a_break_with_the_right_values(counter, reader):
    seen = []

    def f(x):
        y = (x * 3).sum()
        seen.append(reader(y))
        return y + 1
    out = gt.compile(f, backend=counter)(gt.ones(2))
    assert out.item() == 7.0 and counter.compiles == 2
    assert seen[0] == reader(gt.tensor(6.0))


def test_an_op_capture_cannot_describe_runs_eagerly_between_graphs(counter):
    def f(x):
        idx = (x > 0).nonzero()                    # its output shape depends on the data
        return idx.sum() + x.sum()
    x = gt.tensor([1.0, -1.0, 2.0])
    explained = gt._dynamo.explain(f)(x)
    assert explained.graph_break_count == 1
    assert "aten.nonzero.default" in explained.break_reasons[0].reason
    assert gt.compile(f, backend=counter)(x).item() == f(x).item()


def test_fullgraph_turns_a_break_into_an_error_naming_the_line():
    f = item_in_middle(gt)
    with pytest.raises(gt._dynamo.exc.Unsupported) as info:
        gt.compile(f, backend="eager", fullgraph=True)(gt.ones(2))
    assert "Tensor.item()" in str(info.value)
    assert f"{__file__}:{line_of(f, '.item()')}" in str(info.value)
    gt.compile(no_break(gt), backend="eager", fullgraph=True)(gt.ones(2, 2), gt.ones(2, 2))


def test_disable_runs_a_function_eagerly_inside_a_compiled_one(counter):
    calls = []

    @gt.compiler.disable
    def helper(t):
        calls.append(gt.compiler.is_compiling())
        return t * 10

    def f(x):
        assert gt.compiler.is_compiling()
        return helper(x + 1) - 1
    assert gt.compile(f, backend=counter)(gt.ones(2)).tolist() == [19.0, 19.0]
    assert calls == [False] and counter.compiles == 2
    assert not gt.compiler.is_compiling()


def test_a_tensor_subclass_is_not_captured_and_runs_eagerly(counter):
    class Marked(gt.Tensor):
        pass
    x = gt.ones(2).as_subclass(Marked)
    out = gt.compile(lambda t: t * 2, backend=counter)(x)
    assert out.tolist() == [2.0, 2.0] and counter.compiles == 0


def test_an_explicit_generator_runs_its_op_eagerly_with_eagers_draws():
    g = gt.Generator().manual_seed(3)

    def f(x):
        return x + gt.randn(3, generator=g)
    explained = gt._dynamo.explain(f)(gt.zeros(3))
    assert "torch.Generator" in explained.break_reasons[0].reason
    g.manual_seed(3)
    got = gt.compile(f, backend="aot_eager")(gt.zeros(3))
    g.manual_seed(3)
    assert gt.equal(got, f(gt.zeros(3)))


def test_explain_a_module_guards_its_parameters():
    model = gt.nn.Sequential(gt.nn.Linear(2, 2), gt.nn.ReLU())
    explained = gt._dynamo.explain(model)(gt.ones(3, 2))
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    sources = {(g.source, g.kind) for g in explained.out_guards}
    assert {("input", "tensor"), ("self.0.weight", "id"), ("self.0", "training")} <= sources
