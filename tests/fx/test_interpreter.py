"""Interpreter, Transformer, ShapeProp and subgraph_rewriter.replace_pattern, side by side
with torch.fx: the same programs, the same results, graphs and code."""
import numpy as np
import pytest

import glasstorch as gt
import glasstorch.fx as gfx
from glasstorch.fx.passes.shape_prop import ShapeProp
from oracle import oracle_torch


def define(T):
    nn = T.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            h = self.lin(x).relu() * 2
            return (h.sigmoid() + x).sum(dim=1), h.t()

    return Net


def pair():
    torch = oracle_torch()
    torch.manual_seed(0)
    t_net = define(torch)()
    g_net = define(gt)()
    for name, value in t_net.state_dict().items():
        g_net.get_parameter(name).data = gt.tensor(value.numpy().copy())
    return torch, torch.fx.symbolic_trace(t_net), gfx.symbolic_trace(g_net)


X = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)


def assert_close(ours, theirs):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_close(a, b)
    else:
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_interpreter_runs_like_the_module():
    torch, t_gm, g_gm = pair()
    assert_close(gfx.Interpreter(g_gm).run(gt.tensor(X)),
                 torch.fx.Interpreter(t_gm).run(torch.tensor(X)))


def test_interpreter_per_op_overrides_see_the_same_calls():
    torch, t_gm, g_gm = pair()

    def recording(fx):
        class Recording(fx.Interpreter):
            def __init__(self, module):
                super().__init__(module)
                self.calls = []

            def call_function(self, target, args, kwargs):
                self.calls.append(("function", target.__name__))
                return super().call_function(target, args, kwargs)

            def call_method(self, target, args, kwargs):
                self.calls.append(("method", target))
                return super().call_method(target, args, kwargs)

            def call_module(self, target, args, kwargs):
                self.calls.append(("module", target))
                return super().call_module(target, args, kwargs)
        return Recording

    ours = recording(gfx)(g_gm)
    ours.run(gt.tensor(X))
    theirs = recording(torch.fx)(t_gm)
    theirs.run(torch.tensor(X))
    assert ours.calls == theirs.calls


def test_interpreter_fetch_args_and_missing_inputs():
    _, _, g_gm = pair()
    interp = gfx.Interpreter(g_gm)
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter x"):
        interp.run()
    node = next(n for n in g_gm.graph.nodes if n.op == "call_method")
    interp.env = {n: gt.ones(2, 3) for n in node.all_input_nodes}
    args, kwargs = interp.fetch_args_kwargs_from_env(node)
    assert args[0].shape == (2, 3) and kwargs == {}
    assert interp.fetch_attr("lin.weight") is g_gm.lin.weight


def test_transformer_rewrites_into_a_new_module():
    torch, t_gm, g_gm = pair()

    def swap(fx):
        class Swap(fx.Transformer):
            def call_method(self, target, args, kwargs):
                return super().call_method("tanh" if target == "relu" else target, args,
                                           kwargs)
        return Swap

    ours = swap(gfx)(g_gm).transform()
    theirs = swap(torch.fx)(t_gm).transform()
    assert ours.code == theirs.code
    assert isinstance(ours, gfx.GraphModule) and ours is not g_gm
    assert_close(ours(gt.tensor(X)), theirs(torch.tensor(X)))
    assert "relu" in g_gm.code                  # the original is untouched


def test_shape_prop_records_tensor_meta():
    torch, t_gm, g_gm = pair()
    from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp
    ShapeProp(g_gm).propagate(gt.tensor(X))
    TorchShapeProp(t_gm).propagate(torch.tensor(X))
    for ours, theirs in zip(g_gm.graph.nodes, t_gm.graph.nodes):
        a, b = ours.meta["tensor_meta"], theirs.meta["tensor_meta"]
        if ours.op == "output":
            a, b = a[1], b[1]
        assert tuple(a.shape) == tuple(b.shape), ours.name
        assert a.stride == b.stride and str(a.dtype) == str(b.dtype)
        assert a.requires_grad == b.requires_grad
        assert str(a.memory_format) == str(b.memory_format), ours.name


def test_replace_pattern_matches_torch():
    torch = oracle_torch()

    def program(x, w):
        a = x.relu() * 2
        b = (a + w).relu() * 2
        c = b.relu() * 3            # not the pattern: the constant differs
        return c + a

    def pattern(x):
        return x.relu() * 2

    def replacement(x):
        return x.sigmoid().neg()

    results = []
    for T, fx in ((gt, gfx), (torch, torch.fx)):
        gm = fx.symbolic_trace(program)
        matches = fx.replace_pattern(gm, pattern, replacement)
        x = T.tensor([[-1.0, 0.5], [2.0, -3.0]])
        results.append((gm.code, [m.anchor.name for m in matches],
                        gm(x, x).detach().numpy()))
    (our_code, our_anchors, our_out), (their_code, their_anchors, their_out) = results
    assert our_code == their_code
    assert our_anchors == their_anchors == ["mul", "mul"]     # the pattern's node
    np.testing.assert_allclose(our_out, their_out, rtol=1e-6)


def test_replace_pattern_skips_a_match_used_inside():
    torch = oracle_torch()

    def program(x):
        r = x.relu()
        return r * 2, r          # relu is used outside the pattern's output

    def pattern(x):
        return x.relu() * 2

    def replacement(x):
        return x.neg()

    codes = []
    for fx in (gfx, torch.fx):
        gm = fx.symbolic_trace(program)
        assert fx.replace_pattern(gm, pattern, replacement) == []
        codes.append(gm.code)
    assert codes[0] == codes[1]


def test_replace_pattern_shared_inputs_and_several_outputs_as_torch():
    torch = oracle_torch()

    def define(T):
        def program(a, b, c):
            s = (a + a).relu()
            t = (a + b).relu()
            u = T.add(b, c).relu() * s
            v = (t + t).relu()
            return u + v, s

        def same_input_twice(x):          # matches a + a, not a + b
            return (x + x).relu()

        def two_inputs(x, y):             # matches T.add(b, c) only: a + b is operator.add
            return T.add(x, y).relu()

        def two_outputs(x, y):
            z = x + y
            return z.relu(), z

        replacements = {
            same_input_twice: lambda x: x.mul(2).clamp(min=0),
            two_inputs: lambda x, y: T.sub(x, y),
        }

        def two_outputs_replacement(x, y):
            z = x - y
            return z.sigmoid(), z

        replacements[two_outputs] = two_outputs_replacement
        return program, replacements

    results = {}
    for T, fx in ((gt, gfx), (torch, torch.fx)):
        program, replacements = define(T)
        for i, (pattern, replacement) in enumerate(replacements.items()):
            gm = fx.symbolic_trace(program)
            matches = fx.replace_pattern(gm, pattern, replacement)
            mapped = [sorted((str(k), str(v)) for k, v in m.nodes_map.items()) for m in matches]
            abc = [T.tensor([1.0, -2.0]), T.tensor([0.5, 3.0]), T.tensor([-1.0, 1.0])]
            out = [o.numpy() for o in gm(*abc)]
            results.setdefault(i, []).append((gm.code, mapped, out))
    for (ours, theirs) in results.values():
        assert ours[0] == theirs[0]
        assert ours[1] == theirs[1]
        for a, b in zip(ours[2], theirs[2]):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_shape_prop_with_a_fake_mode_computes_metadata_only():
    from glasstorch._subclasses import fake_tensor
    gm = gfx.symbolic_trace(lambda x, w: (x @ w).relu().sum(0))
    ShapeProp(gm, fake_mode=fake_tensor.FakeTensorMode()).propagate(gt.ones(2, 3),
                                                                    gt.ones(3, 4))
    assert [tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes] == [
        (2, 3), (3, 4), (2, 4), (2, 4), (4,), (4,)]
    assert all(issubclass(n.meta["type"], fake_tensor.FakeTensor) for n in gm.graph.nodes)

