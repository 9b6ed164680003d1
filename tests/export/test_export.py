"""torch.export: signature against PyTorch's, module() equal to the model, dynamic dims,
run_decompositions, save/load, and the error for data-dependent control flow."""
import io
import warnings

import pytest

import glasstorch as torch
import glasstorch.nn as nn
import glasstorch.nn.functional as F
from glasstorch.export import Dim, GuardOnDataDependentSymNode, export


def _net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(3, 4, 3)
            self.bn = lib.nn.BatchNorm2d(4)
            self.fc = lib.nn.Linear(4 * 6 * 6, 5)
            self.register_buffer("scale", lib.ones(5))
            self.register_buffer("scratch", lib.zeros(1), persistent=False)

        def forward(self, x, bias):
            h = lib.relu(self.bn(self.conv(x)))
            return self.fc(h.flatten(1)) * self.scale + bias

    return Net().eval()


def _specs(ep):
    return [(s.kind.name, s.arg.name, s.target, s.persistent)
            for s in ep.graph_signature.input_specs]


def test_signature_matches_pytorch():
    torch_ = pytest.importorskip("torch")
    ours = export(_net(torch), (torch.randn(2, 3, 8, 8), torch.randn(5)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch_.export.export(_net(torch_), (torch_.randn(2, 3, 8, 8),
                                                     torch_.randn(5)))
    assert _specs(ours) == _specs(theirs)
    assert ours.graph_signature.user_inputs == theirs.graph_signature.user_inputs
    assert len(ours.graph_signature.user_outputs) == 1
    assert list(ours.state_dict) == list(theirs.state_dict)


def test_graph_is_aten_and_module_equals_the_model():
    torch.manual_seed(0)
    model = _net(torch)
    x, bias = torch.randn(2, 3, 8, 8), torch.randn(5)
    ep = export(model, (x, bias))
    targets = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten.convolution.default in targets
    assert all(str(t).startswith(("aten.", "<built-in function getitem>")) for t in targets)
    assert ep.graph_module.graph is ep.graph
    m = ep.module()
    assert torch.equal(m(x, bias), model(x, bias))
    assert sorted(m.state_dict()) == sorted(k for k in model.state_dict())
    with pytest.raises(RuntimeError, match="module\\(\\)"):
        ep(x, bias)


def test_kwargs_and_output_structure():
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)

        def forward(self, x, *, shift):
            y = self.lin(x)
            return {"sum": y + shift, "parts": [y, -y]}

    model = TwoHeads()
    x, shift = torch.randn(4, 3), torch.randn(2)
    ep = export(model, (x,), {"shift": shift})
    out = ep.module()(x, shift=shift)
    expected = model(x, shift=shift)
    assert sorted(out) == ["parts", "sum"]
    assert torch.equal(out["sum"], expected["sum"])
    assert all(torch.equal(a, b) for a, b in zip(out["parts"], expected["parts"]))
    assert ep.graph_signature.user_inputs == ("x", "shift")


def test_dynamic_batch_runs_other_sizes_and_checks_ranges():
    model = _net(torch)
    ep = export(model, (torch.randn(4, 3, 8, 8), torch.randn(5)),
                dynamic_shapes={"x": {0: Dim("batch", min=2, max=16)}, "bias": None})
    assert ep.range_constraints == {"batch": (2, 16)}
    m = ep.module()
    for n in (2, 7, 16, 4):
        x = torch.randn(n, 3, 8, 8)
        bias = torch.randn(5)
        assert torch.allclose(m(x, bias), model(x, bias), atol=1e-6)
    with pytest.raises(AssertionError, match=r"x.size\(\)\[0\] <= 16"):
        m(torch.randn(17, 3, 8, 8), torch.randn(5))
    with pytest.raises(AssertionError, match=r"x.size\(\)\[0\] >= 2"):
        m(torch.randn(1, 3, 8, 8), torch.randn(5))
    with pytest.raises(AssertionError, match=r"x.size\(\)\[3\] == 8"):
        m(torch.randn(4, 3, 8, 9), torch.randn(5))


def test_dim_checks_example_against_range():
    with pytest.raises(ValueError, match="example input has size 4"):
        export(_net(torch), (torch.randn(4, 3, 8, 8), torch.randn(5)),
               dynamic_shapes={"x": {0: Dim("batch", min=8)}})
    assert repr(Dim("batch", max=64)) == "Dim('batch', max=64)"


def test_sizes_that_multiply_two_dynamic_dims_follow_them():
    from glasstorch.examples.chargpt import GPT
    torch.manual_seed(0)
    model = GPT(20, 16, d_model=16, n_head=2, n_layer=1).eval()
    ep = export(model, (torch.randint(0, 20, (2, 8)),),
                dynamic_shapes={"idx": {0: Dim("batch", max=8), 1: Dim("time", max=16)}})
    runner = ep.module()
    for batch, time in ((3, 5), (1, 16), (2, 8), (8, 2)):
        idx = torch.randint(0, 20, (batch, time))
        assert torch.allclose(runner(idx), model(idx), atol=1e-5)


def test_product_of_three_dynamic_sizes_is_refused():
    class Merge(nn.Module):
        def forward(self, x):
            return x.reshape(x.shape[0] * x.shape[1] * x.shape[2])

    with pytest.raises(ValueError, match="beyond products of two sizes"):
        export(Merge(), (torch.randn(3, 5, 4),),
               dynamic_shapes={"x": {0: Dim("a", max=9), 1: Dim("b", max=9),
                                     2: Dim("c", max=9)}})


def test_data_dependent_control_flow_names_the_line():
    class Branchy(nn.Module):
        def forward(self, x):
            if x.sum() > 0:   # the line the error names
                return x * 2
            return x

    with pytest.raises(GuardOnDataDependentSymNode) as info:
        export(Branchy(), (torch.randn(3),))
    message = str(info.value)
    assert "bool(Tensor)" in message and "test_export.py" in message
    assert "if x.sum() > 0:   # the line the error names" in message


def test_module_state_is_restored_after_tracing():
    model = _net(torch)
    before = dict(model.named_parameters()) | dict(model.named_buffers())
    export(model, (torch.randn(2, 3, 8, 8), torch.randn(5)))
    after = dict(model.named_parameters()) | dict(model.named_buffers())
    assert after.keys() == before.keys()
    assert all(after[k] is v for k, v in before.items())
    assert isinstance(model.conv.weight, nn.Parameter)


def test_run_decompositions_lowers_composites():
    class Gelu(nn.Module):
        def forward(self, x):
            return F.log_softmax(F.silu(x), dim=-1)

    ep = export(Gelu(), (torch.randn(2, 5),))
    decomposed = ep.run_decompositions()
    ops = {str(n.target) for n in decomposed.graph.nodes if n.op == "call_function"}
    assert "aten.silu.default" not in ops and "aten.sigmoid.default" in ops
    x = torch.randn(2, 5)
    assert torch.allclose(decomposed.module()(x), Gelu()(x), atol=1e-6)
    assert decomposed.graph_signature.input_specs == ep.graph_signature.input_specs


def test_save_load_round_trip(tmp_path):
    torch.manual_seed(0)
    model = _net(torch)
    ep = export(model, (torch.randn(4, 3, 8, 8), torch.randn(5)),
                dynamic_shapes={"x": {0: Dim("batch", min=1, max=32)}})
    path = tmp_path / "net.pt2"
    torch.export.save(ep, path, extra_files={"note": "hello"})
    extra = {"note": ""}
    loaded = torch.export.load(path, extra_files=extra)
    assert extra["note"] == "hello"
    assert _specs(loaded) == _specs(ep)
    assert [n.name for n in loaded.graph.nodes] == [n.name for n in ep.graph.nodes]
    assert [n.target for n in loaded.graph.nodes] == [n.target for n in ep.graph.nodes]
    x, bias = torch.randn(9, 3, 8, 8), torch.randn(5)
    assert torch.allclose(loaded.module()(x, bias), model(x, bias), atol=1e-6)
    buffer = io.BytesIO()
    torch.export.save(loaded, buffer)
    buffer.seek(0)
    assert torch.export.load(buffer).range_constraints == {"batch": (1, 32)}


def test_load_refuses_other_archives(tmp_path):
    path = tmp_path / "weights.pt"
    torch.save({"a": torch.ones(1)}, path)
    with pytest.raises(RuntimeError, match="not an archive written by"):
        torch.export.load(path)


def test_bad_arguments():
    with pytest.raises(ValueError, match="instance of `torch.nn.Module`"):
        export(lambda x: x, (torch.ones(1),))
    with pytest.raises(ValueError, match="to be a tuple"):
        export(nn.ReLU(), [torch.ones(1)])
    with pytest.raises(TypeError, match="do not fit"):
        export(nn.ReLU(), (torch.ones(1), torch.ones(1)))
