"""The user's side of torch.compile, as an audit of issue 16 found it: each test is a
user-visible promise that once failed."""
import warnings

import pytest

import glasstorch as gt


def test_a_backend_computing_while_it_compiles_adds_nothing_to_the_next_graph():
    """A break at a data read flushes with the capture's mode still on the stack; ops the
    backend runs while compiling (inductor runs some) must not be recorded after it."""
    graphs = []

    def computing_backend(gm, example_inputs):
        graphs.append([str(n.target) for n in gm.graph.nodes if n.op == "call_function"])
        (example_inputs[0] * 2).sum()          # work done at compile time
        return gm.forward

    def f(x):
        y = (x * 2 + 1).relu()
        if y.sum() > 0:                        # a break at bool(tensor)
            y = y.softmax(-1)
        return y

    compiled = gt.compile(f, backend=computing_backend)
    x = gt.randn(4, 8)
    assert gt.equal(compiled(x), f(x))
    assert graphs[1] == ["aten._softmax.default"]
    compiled(gt.randn(4, 8))                   # the same trace: nothing compiles again
    assert len(graphs) == 2


def test_new_sizes_in_dynamic_dims_never_reach_the_recompile_limit(counter):
    """dynamic=True and mark_dynamic: each new size compiles its own static graph, and no
    number of sizes sends the function back to eager mode with a warning."""
    old = gt._dynamo.config.recompile_limit
    gt._dynamo.config.recompile_limit = 2
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compiled = gt.compile(lambda x: (x * 2).sum(0), backend=counter, dynamic=True)
            for n in range(1, 6):
                assert compiled(gt.ones(n, 3)).tolist() == [2.0 * n] * 3
            marked = gt.compile(lambda x: x.cos(), backend=counter)
            for n in range(1, 6):
                x = gt.zeros(n)
                gt._dynamo.mark_dynamic(x, 0)
                assert marked(x).tolist() == [1.0] * n
    finally:
        gt._dynamo.config.recompile_limit = old
    assert counter.compiles == 10              # every call compiled its own graph


def test_a_changing_trace_under_dynamic_dims_still_counts(counter):
    """What the sizes do not explain (here a Python number read from outside) still
    counts towards the limit under dynamic=True."""
    scale = [1.0]
    compiled = gt.compile(lambda x: x * scale[0], backend=counter, dynamic=True,
                          recompile_limit=2)
    compiled(gt.ones(2))
    scale[0] = 2.0
    compiled(gt.ones(2))
    scale[0] = 3.0
    with pytest.warns(UserWarning, match="compiled new graphs on 2 calls"):
        assert compiled(gt.ones(2)).tolist() == [3.0, 3.0]


def test_printing_a_tensor_is_the_break_reason_explain_gives(capsys):
    def f(x):
        y = x.sin()
        print(y)
        return y + 1

    reasons = [b.reason for b in gt._dynamo.explain(f)(gt.ones(2)).break_reasons]
    assert reasons == ["printing a Tensor reads the tensor's data"]
    assert capsys.readouterr().out == f"{gt.ones(2).sin()}\n"


def test_explain_shows_what_inductor_makes_of_each_graph():
    """Fusion groups, the generated source and per-kernel times, graph by graph."""
    import glasstorch.nn.functional as F

    def f(x, r):
        h = F.layer_norm(x + r, (64,))
        if h.sum() > 0:
            h = h * 2
        return h.relu().softmax(-1)

    explanation = gt._dynamo.explain(f)(gt.randn(8, 64), gt.randn(8, 64))
    compiled = explanation.compiled_graphs()
    assert len(compiled) == explanation.graph_count == 2
    first, second = (c.artefacts for c in compiled)
    assert [k.name for k in first.kernels] == ["kernel0", "kernel1"]
    assert any("not fused into kernel0" in line for line in first.schedule.fusion_log)
    assert len(second.kernels) == 1 and "kernel0(" in second.host_source
    assert "void kernel0" in second.kernel_source or "def kernel0" in second.kernel_source
    times = explanation.kernel_times()
    assert [sorted(t) for t in times] == [["kernel0", "kernel1"], ["kernel0"]]
    assert all(s >= 0 for t in times for s in t.values())
