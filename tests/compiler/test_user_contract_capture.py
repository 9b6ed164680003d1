"""The user's side of torch.compile, as an audit of issue 16 found it: each test is a
user-visible promise that once failed."""
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
