"""torch.jit: trace (graph, code, TracerWarning as PyTorch's, shared parameters), script
(runs the Python: control flow stays right), save/load of traces, the decorators, freeze."""
import warnings

import pytest

import glasstorch as torch
import glasstorch.nn as nn


def branchy(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.register_buffer("shift", torch.ones(2))

    def forward(self, x):
        return torch.relu(self.lin(x)) + self.shift


def _tracer_warnings(lib, fn, example):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = lib.jit.trace(fn, example)
    return traced, [(str(w.message), w.lineno) for w in caught
                    if w.category.__name__ == "TracerWarning"]


def test_trace_warns_on_data_dependent_python_as_pytorch():
    torch_ = pytest.importorskip("torch")
    ours, our_warnings = _tracer_warnings(torch, branchy, (torch.ones(3),))
    _, their_warnings = _tracer_warnings(torch_, branchy, (torch_.ones(3),))
    assert our_warnings and our_warnings[0] == their_warnings[0]
    # the branch taken while tracing is what the trace runs, as in PyTorch
    assert ours(-torch.ones(2)).tolist() == [-2.0, -2.0]


def test_traced_function_graph_and_code():
    traced = torch.jit.trace(lambda x, y: (x * y).sum(1), (torch.ones(2, 3), torch.ones(2, 3)))
    assert isinstance(traced, torch.jit.ScriptFunction)
    ops = [str(n.target) for n in traced.graph.nodes if n.op == "call_function"]
    assert ops == ["aten.mul.Tensor", "aten.sum.dim_IntList"]
    assert "torch.ops.aten.mul.Tensor" in traced.code
    assert not torch.jit.is_tracing()


def test_traced_module_shares_parameters_and_matches_eager():
    model = Net()
    traced = torch.jit.trace(model, torch.randn(4, 3))
    assert isinstance(traced, torch.jit.ScriptModule)
    assert traced.lin.weight is model.lin.weight
    assert sorted(traced.state_dict()) == sorted(model.state_dict())
    x = torch.randn(5, 3)
    assert torch.equal(traced(x), model(x))
    with torch.no_grad():
        model.lin.bias.add_(1.0)
    assert torch.equal(traced(x), model(x))


def test_is_tracing_inside_trace():
    seen = []

    def probe(x):
        seen.append(torch.jit.is_tracing())
        return x + 1

    torch.jit.trace(probe, torch.ones(1))
    assert seen == [True] and not torch.jit.is_tracing()


def test_trace_rejects_non_tensor_inputs():
    with pytest.raises(RuntimeError, match="cannot be traced"):
        torch.jit.trace(lambda x, n: x * n, (torch.ones(1), 3))


def test_script_keeps_data_dependent_control_flow():
    scripted = torch.jit.script(branchy)
    assert isinstance(scripted, torch.jit.ScriptFunction)
    assert scripted(torch.ones(2)).tolist() == [2.0, 2.0]
    assert scripted(-torch.ones(2)).tolist() == [-2.0, -2.0]
    assert "if x.sum() > 0:" in scripted.code
    assert not torch.jit.is_scripting()


def test_script_module_shares_state_and_leaves_original_alone():
    model = Net()
    scripted = torch.jit.script(model)
    assert isinstance(scripted, torch.jit.ScriptModule) and isinstance(scripted, Net)
    assert scripted.original_name == "Net" and type(model) is Net
    assert scripted.lin is model.lin
    x = torch.randn(2, 3)
    assert torch.equal(scripted(x), model(x))
    scripted.extra = nn.Linear(1, 1)
    assert "extra" not in dict(model.named_children())
    assert "def forward(self, x):" in scripted.code


def test_save_load_traced_module_and_function(tmp_path):
    model = Net()
    traced = torch.jit.trace(model, torch.randn(4, 3))
    traced.save(tmp_path / "net.pt")
    loaded = torch.jit.load(tmp_path / "net.pt")
    x = torch.randn(3, 3)
    assert torch.equal(loaded(x), model(x))
    assert isinstance(loaded.lin.weight, nn.Parameter)
    fn = torch.jit.trace(lambda a: (a.exp(), a * 2), torch.ones(2))
    torch.jit.save(fn, tmp_path / "fn.pt")
    out = torch.jit.load(tmp_path / "fn.pt")(torch.zeros(2))
    assert isinstance(out, tuple) and out[0].tolist() == [1.0, 1.0]


def test_save_of_scripted_code_says_what_to_do(tmp_path):
    with pytest.raises(NotImplementedError, match="trace"):
        torch.jit.save(torch.jit.script(Net()), tmp_path / "x.pt")
    with pytest.raises(RuntimeError, match="not an archive written by"):
        torch.save({"a": 1}, tmp_path / "y.pt")
        torch.jit.load(tmp_path / "y.pt")


def test_decorators_and_helpers_return_their_argument():
    def f(x):
        return x

    assert torch.jit.ignore(f) is f and torch.jit.unused(f) is f and torch.jit.export(f) is f
    assert torch.jit.ignore(drop=True)(f) is f
    assert torch.jit.script_if_tracing(f) is f
    assert torch.jit.annotate(list, [1]) == [1]
    import typing
    assert torch.jit.Final is typing.Final


def test_freeze_and_optimize_for_inference_as_pytorch():
    torch_ = pytest.importorskip("torch")
    for lib in (torch, torch_):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="Freezing expects a ScriptModule"):
                lib.jit.freeze(lib.nn.Linear(2, 2))
            traced = lib.jit.trace(lib.nn.Linear(2, 2), lib.ones(1, 2))
            with pytest.raises(RuntimeError, match="only implemented for modules in eval"):
                lib.jit.freeze(traced)
    traced = torch.jit.trace(Net(), torch.ones(1, 3))
    frozen = torch.jit.optimize_for_inference(traced)
    assert isinstance(frozen, torch.jit.ScriptModule) and not frozen.training
    assert torch.jit.freeze(frozen) is frozen
