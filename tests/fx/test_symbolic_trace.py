"""symbolic_trace and GraphModule, side by side with torch.fx: the same modules traced in
both libraries give the same nodes (op kinds, names, targets), the same generated code and
printed graph, and the same outputs."""
import copy
import pickle

import numpy as np
import pytest

import glasstorch as gt
import glasstorch.fx as gfx
from oracle import oracle_torch


def define_modules(T):
    """The same module classes, written against library T."""
    nn = T.nn

    class MethodsAndOperators(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 4)
            self.seq = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))
            self.register_buffer("b", T.ones(4))
            self.p = nn.Parameter(T.full((4,), 0.5))

        def forward(self, x, y=2):
            a = self.lin(x).relu() + self.b
            z = a.sigmoid() * self.p - 1
            z = z / 2 + x.size(0)
            return self.seq(z) * y

    class Shapes(nn.Module):
        def forward(self, x):
            n = x.shape
            v = x.view(n[0], -1).sum(dim=1, keepdim=True)
            w = -v
            return w[:, 0:1, None], x.transpose(0, 1) @ x

    class Nested(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = MethodsAndOperators()
            self.blocks = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])

        def forward(self, x):
            h = self.inner(x)
            for block in self.blocks:
                h = block(h).tanh()
            return {"out": h, "also": [h.exp(), x]}

    class Reflected(nn.Module):
        def forward(self, x):
            return 1 - x, 2 * x, 2 ** x, 1 / (x + 3), -x, abs(x), x > 0, x == x

    class Functions(nn.Module):
        """glasstorch functions reach Proxy through __torch_function__."""

        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 2)

        def forward(self, x):
            F = T.nn.functional
            a = T.relu(x) + T.add(x, 1, alpha=2)
            b = F.relu(a)
            c = T.cat([a, b], dim=1)
            d = T.flatten(self.conv(x.reshape(1, 1, 2, 3)), 1)
            return F.softmax(c, dim=-1), T.sum(d), T.matmul(x, T.ones(3, 2))

    class AttentionBlock(nn.Module):
        """Keyword arguments, Ellipsis, the training flag, tensors made inside forward."""

        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.q = nn.Linear(4, 4)
            self.k = nn.Linear(4, 4)
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            F = T.nn.functional
            h = F.relu(self.bn(self.conv(x.reshape(1, 1, 2, 3))))
            h = T.flatten(F.adaptive_avg_pool2d(h, 1), 1)
            h = h.view(h.size(0), -1)
            q, k = self.q(h), self.k(h)
            att = T.matmul(q, k.transpose(-2, -1)) / q.shape[-1] ** 0.5
            att = F.dropout(T.softmax(att, dim=-1), 0.1, self.training)
            out = (att @ h).permute(1, 0).contiguous().mean(dim=0, keepdim=True)
            out = T.stack([out, out], dim=0).squeeze(1)
            return self.drop(out) + T.zeros_like(out), out.unsqueeze(0).expand(2, -1, -1)[..., 0]

    return {"methods_and_operators": MethodsAndOperators, "shapes": Shapes,
            "nested": Nested, "reflected": Reflected, "functions": Functions,
            "attention_block": AttentionBlock}


def copy_weights(torch_module, gt_module):
    for name, value in torch_module.state_dict().items():
        target = gt_module.get_parameter(name) if name in dict(
            gt_module.named_parameters()) else gt_module.get_buffer(name)
        target.data = gt.tensor(value.detach().numpy().copy())


def target_name(node) -> str:
    """The target as the printed graph names it (`operator.add`, `torch.relu`)."""
    if isinstance(node.target, str):
        return node.target
    if isinstance(node, gfx.Node):
        return node._pretty_target()
    return node._pretty_print_target(node.target)


def describe(graph):
    return [(n.op, n.name, target_name(n)) for n in graph.nodes]


def to_numpy_tree(x):
    if isinstance(x, (tuple, list)):
        return [to_numpy_tree(e) for e in x]
    if isinstance(x, dict):
        return {k: to_numpy_tree(v) for k, v in x.items()}
    return np.asarray(x.detach().numpy() if hasattr(x, "detach") else x)


def assert_trees_close(a, b):
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_trees_close(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_trees_close(a[k], b[k])
    else:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["methods_and_operators", "shapes", "nested", "reflected",
                                  "functions", "attention_block"])
def test_same_graph_code_and_outputs_as_torch_fx(name):
    torch = oracle_torch()
    torch.manual_seed(0)
    t_module = define_modules(torch)[name]().eval()
    g_module = define_modules(gt)[name]().eval()
    copy_weights(t_module, g_module)
    t_gm = torch.fx.symbolic_trace(t_module)
    g_gm = gfx.symbolic_trace(g_module)

    assert describe(g_gm.graph) == describe(t_gm.graph)
    assert g_gm.code == t_gm.code
    assert str(g_gm.graph) == str(t_gm.graph)
    assert g_gm.print_readable(print_output=False) == t_gm.print_readable(print_output=False)
    assert type(g_gm).__name__ == type(t_gm).__name__ == type(t_module).__name__

    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    if name == "shapes":
        x = x.reshape(3, 2)
    expected = to_numpy_tree(t_gm(torch.tensor(x)))
    assert_trees_close(to_numpy_tree(g_gm(gt.tensor(x))), expected)
    assert_trees_close(to_numpy_tree(g_module(gt.tensor(x))), expected)


def test_graph_module_copies_only_what_the_graph_uses():
    torch = oracle_torch()
    for T, fx in ((gt, gfx), (torch, torch.fx)):
        module = define_modules(T)["methods_and_operators"]()
        module.unused = T.nn.Linear(5, 5)
        gm = fx.symbolic_trace(module)
        assert sorted(gm.state_dict()) == ["b", "lin.bias", "lin.weight", "p", "seq.1.bias",
                                           "seq.1.weight"]
        assert not hasattr(gm, "unused")
        assert gm.lin is module.lin and gm.p is module.p
        assert type(gm.seq).__name__ == "Module"       # intermediate modules are plain


def test_str_and_repr_match_torch():
    torch = oracle_torch()
    t_gm = torch.fx.symbolic_trace(define_modules(torch)["shapes"]())
    g_gm = gfx.symbolic_trace(define_modules(gt)["shapes"]())
    assert str(g_gm) == str(t_gm)
    assert repr(g_gm) == repr(t_gm)


def test_control_flow_errors_match_torch():
    torch = oracle_torch()
    programs = [lambda x: x + 1 if x.sum() > 0 else x, lambda x: [i for i in x],
                lambda x: len(x)]
    for program in programs:
        with pytest.raises(Exception) as expected:
            torch.fx.symbolic_trace(program)
        with pytest.raises(Exception) as actual:
            gfx.symbolic_trace(program)
        assert type(actual.value).__name__ == type(expected.value).__name__
        assert str(actual.value) == str(expected.value)
    assert issubclass(gfx.proxy.TraceError, ValueError)


def test_tuple_unpacking_of_a_proxy_is_traced():
    def f(x):
        a, b = x.chunk(2)
        return a * b
    gm = gfx.symbolic_trace(f)
    assert [n.name for n in gm.graph.nodes] == ["x", "chunk", "getitem", "getitem_1", "mul",
                                               "output"]
    x = gt.arange(4.0)
    assert gm(x).tolist() == [0.0, 3.0]


def test_recompile_after_a_graph_edit():
    gm = gfx.symbolic_trace(define_modules(gt)["shapes"]())
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.name == "neg":
            with gm.graph.inserting_after(node):
                doubled = gm.graph.call_method("mul", (node, 2))
            node.replace_all_uses_with(doubled, delete_user_cb=lambda user: user is not doubled)
    gm.recompile()
    assert "mul = neg.mul(2);  neg = None" in gm.code
    x = gt.ones(3, 2)
    assert gm(x)[0].flatten().tolist() == [-4.0, -4.0, -4.0]


def test_graph_setter_recompiles():
    gm = gfx.symbolic_trace(lambda x: x.relu())
    g = gfx.Graph()
    x = g.placeholder("x")
    g.output(g.call_method("neg", (x,)))
    gm.graph = g
    assert gm.graph.owning_module is gm
    assert gm(gt.tensor([1.0, -2.0])).tolist() == [-1.0, 2.0]


def test_concrete_args_fix_a_value():
    def f(x, flag):
        return x + 1 if flag else x - 1
    gm = gfx.symbolic_trace(f, concrete_args={"flag": True})
    assert [n.name for n in gm.graph.nodes] == ["x", "flag_1", "add", "output"]
    assert gm(gt.zeros(1), True).tolist() == [1.0]


def test_leaf_modules_and_custom_tracer():
    nn = gt.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            return self.lin(x).relu()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block(x)

    default = gfx.symbolic_trace(Net())
    assert [n.target for n in default.graph.nodes if n.op == "call_module"] == ["block.lin"]
    assert default.graph.find_nodes(op="call_module")[0].meta["nn_module_stack"] == {
        "block": ("block", Block), "block.lin": ("block.lin", nn.Linear)}

    class BlocksAreLeaves(gfx.Tracer):
        def is_leaf_module(self, m, qualified_name):
            return isinstance(m, Block) or super().is_leaf_module(m, qualified_name)

    graph = BlocksAreLeaves().trace(Net())
    assert [n.target for n in graph.nodes if n.op == "call_module"] == ["block"]


def test_wrap_records_a_free_function():
    from fx_wrap_helpers import scaled_sum, trace_scaled
    gm = trace_scaled()
    names = [(n.op, n.name) for n in gm.graph.nodes]
    assert ("call_function", "scaled_sum") in names
    node = next(n for n in gm.graph.nodes if n.name == "scaled_sum")
    assert node.target is scaled_sum
    assert gm(gt.ones(3)).tolist() == [7.0, 7.0, 7.0]


def test_math_functions_are_autowrapped():
    import math

    torch = oracle_torch()

    def f(x):
        return x * math.sqrt(x.size(0))
    gm = gfx.symbolic_trace(f)
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"][0] is math.sqrt
    assert gm.code == torch.fx.symbolic_trace(f).code
    assert gm(gt.ones(4)).tolist() == [2.0] * 4


def test_deepcopy_and_pickle():
    module = define_modules(gt)["methods_and_operators"]()
    gm = gfx.symbolic_trace(module)
    x = gt.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    loaded = pickle.loads(pickle.dumps(gm))
    expected = gm(x)
    copied = copy.deepcopy(gm)
    for other in (copied, loaded):
        assert other.code == gm.code
        assert type(other).__name__ == "MethodsAndOperators"
        assert other.lin is not gm.lin
        np.testing.assert_allclose(other(x).detach().numpy(), expected.detach().numpy())
    copied.lin.weight.data.zero_()
    assert not np.allclose(gm.lin.weight.detach().numpy(), 0)


def test_graph_module_from_a_dict_root():
    g = gfx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("params.w")
    g.output(g.call_function(gt.mul, (x, w)))
    gm = gfx.GraphModule({"params.w": gt.tensor([2.0, 3.0])}, g)
    assert gm(gt.ones(2)).tolist() == [2.0, 3.0]
    assert list(gm.state_dict()) == ["params.w"]
    with pytest.raises(RuntimeError, match="referenced target params.w but that target was "
                                           "not provided"):
        gfx.GraphModule({}, g)


def test_annotations_defaults_and_keyword_only_parameters_match_torch():
    torch = oracle_torch()
    from typing import Optional

    def define(T):
        def f(x: T.Tensor, n: int = 2, *, scale: Optional[float] = None, k=None):
            return x * n
        return f

    ours = gfx.symbolic_trace(define(gt))
    theirs = torch.fx.symbolic_trace(define(torch))
    assert ours.code == theirs.code
    assert str(ours.graph) == str(theirs.graph)
    assert ours(gt.ones(2), 3).tolist() == [3.0, 3.0]


def test_add_and_delete_submodules_as_torch():
    torch = oracle_torch()
    for T, fx in ((gt, gfx), (torch, torch.fx)):
        gm = fx.symbolic_trace(define_modules(T)["methods_and_operators"]())
        assert gm.add_submodule("extra.deep", T.nn.ReLU())
        assert not gm.add_submodule("p.child", T.nn.ReLU())     # p is a Parameter
        assert gm.delete_submodule("extra.deep") and not gm.delete_submodule("extra.deep")
        assert not gm.delete_submodule("p")
        gm.add_submodule("unused", T.nn.Linear(1, 1))
        gm.delete_all_unused_submodules()
        assert sorted(name for name, _ in gm.named_modules()) == ["", "lin", "seq", "seq.0",
                                                                  "seq.1"]


def test_sequential_cnn_traces_through_sequential_only():
    torch = oracle_torch()

    def build(T):
        nn = T.nn
        return nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(),
                             nn.Sequential(nn.MaxPool2d(2), nn.Flatten()), nn.Linear(36, 10))

    torch.manual_seed(0)
    t_model = build(torch).eval()
    g_model = build(gt).eval()
    copy_weights(t_model, g_model)
    t_gm, g_gm = torch.fx.symbolic_trace(t_model), gfx.symbolic_trace(g_model)
    assert g_gm.code == t_gm.code
    assert describe(g_gm.graph) == describe(t_gm.graph)
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 1, 8, 8)
    np.testing.assert_allclose(g_gm(gt.tensor(x)).detach().numpy(),
                               t_gm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_graph_that_does_not_compile_leaves_the_module_as_it_was():
    gm = gfx.symbolic_trace(lambda x: x.relu())
    bad = gfx.Graph()
    bad.placeholder("x")
    bad.placeholder("x.y")                     # not a valid parameter name
    bad.output(None)
    with pytest.raises(SyntaxError):
        gm.graph = bad
    assert gm.graph.owning_module is gm and "relu" in gm.code
    assert gm(gt.tensor([-1.0])).tolist() == [0.0]


def test_tracebacks_show_the_generated_line():
    import traceback
    gm = gfx.symbolic_trace(lambda x: x.view(-1, 4))
    with pytest.raises(RuntimeError) as info:
        gm(gt.ones(3))
    text = "".join(traceback.format_exception(info.value))
    assert "view = x.view(-1, 4)" in text


def test_nn_module_stack_meta_matches_torch():
    torch = oracle_torch()
    t_gm = torch.fx.symbolic_trace(define_modules(torch)["nested"]())
    g_gm = gfx.symbolic_trace(define_modules(gt)["nested"]())

    def stacks(gm):
        return [(n.name, [(k, v[0], v[1].__name__) for k, v in
                          n.meta.get("nn_module_stack", {}).items()]) for n in gm.graph.nodes]
    assert stacks(g_gm) == stacks(t_gm)


@pytest.mark.parametrize("name", ["methods_and_operators", "nested", "functions"])
def test_retracing_a_graph_module_gives_the_same_code(name):
    gm = gfx.symbolic_trace(define_modules(gt)[name]())
    again = gfx.symbolic_trace(gm)
    assert again.code == gm.code
    assert type(again).__name__ == type(gm).__name__


def test_retracing_keeps_wrapped_functions_wrapped():
    from fx_wrap_helpers import trace_scaled
    gm = trace_scaled()
    assert 'torch.fx._symbolic_trace.wrap("fx_wrap_helpers_scaled_sum")' in gm.code
    assert gfx.symbolic_trace(gm).code == gm.code


def test_star_args_and_kwargs_become_one_placeholder_each_as_torch():
    torch = oracle_torch()

    def define(T):
        def f(x, *args, k=1, **kwargs):
            return x + args[0] * k + kwargs["z"]

        class M(T.nn.Module):
            def forward(self, *inputs):
                return inputs[0] - inputs[1]
        return f, M()

    (g_f, g_m), (t_f, t_m) = define(gt), define(torch)
    for ours, theirs in ((g_f, t_f), (g_m, t_m)):
        g_gm, t_gm = gfx.symbolic_trace(ours), torch.fx.symbolic_trace(theirs)
        assert g_gm.code == t_gm.code
        assert str(g_gm.graph) == str(t_gm.graph)
    gm = gfx.symbolic_trace(g_f)
    assert gm(gt.ones(1), 2, gt.ones(1), z=gt.ones(1)).tolist() == [4.0]
    assert gfx.symbolic_trace(g_m)(gt.ones(1), gt.ones(1)).tolist() == [0.0]
