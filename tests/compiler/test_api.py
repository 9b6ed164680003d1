"""The user's side of torch.compile, side by side with PyTorch where its answer is
deterministic: call and decorator forms, OptimizedModule, Module.compile, backends, the
torch.compiler and torch._dynamo namespaces, logging."""
import pytest

import glasstorch as gt
import glasstorch.nn as nn
from oracle import oracle_torch


def test_compile_as_a_call_and_as_decorators(counter):
    def f(x):
        return x + 1
    assert gt.compile(f, backend=counter)(gt.ones(1)).item() == 2

    @gt.compile
    def g(x):
        return x * 2

    @gt.compile(backend=counter, fullgraph=True)
    def h(x):
        return x - 1
    assert g.__name__ == "g" and g._torchdynamo_orig_callable.__name__ == "g"
    assert h(gt.ones(1)).item() == 0 and counter.compiles == 2
    assert gt.compile(f, disable=True) is f


def test_optimized_module_matches_pytorch():
    torch = oracle_torch()
    theirs = torch.compile(torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU()))
    ours = gt.compile(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    assert type(ours).__name__ == type(theirs).__name__ == "OptimizedModule"
    assert type(ours).__module__ == type(theirs).__module__.replace("torch", "glasstorch")
    assert gt._dynamo.eval_frame.OptimizedModule is type(ours)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert repr(ours) == repr(theirs)
    assert isinstance(ours._orig_mod, nn.Sequential) and len(ours) == len(theirs) == 2


def test_optimized_module_forwards_attributes_and_training_flag(counter):
    model = nn.Linear(2, 2)
    compiled = gt.compile(model, backend=counter)
    compiled.eval()
    assert not model.training and not compiled.training
    compiled.custom = 3
    assert model.custom == 3
    assert compiled.weight is model.weight
    out = compiled(gt.ones(1, 2))
    assert gt.equal(out, model(gt.ones(1, 2))) and counter.compiles == 1


def test_module_compile_compiles_in_place(counter):
    model = nn.Linear(2, 2)
    keys = list(model.state_dict())
    assert model.compile(backend=counter) is None
    assert gt.equal(model(gt.ones(1, 2)), gt.nn.functional.linear(gt.ones(1, 2), model.weight,
                                                                  model.bias))
    assert counter.compiles == 1 and list(model.state_dict()) == keys


def test_backends_registry():
    torch = oracle_torch()
    assert gt.compiler.list_backends()[0] == "inductor"
    assert "inductor" in torch.compiler.list_backends()
    everything = gt._dynamo.list_backends(exclude_tags=())
    assert {"eager", "aot_eager", "inductor"} <= set(everything)
    assert everything == sorted(everything)
    with pytest.raises(gt._dynamo.exc.InvalidBackend, match="Invalid backend"):
        gt.compile(lambda x: x, backend="no_such_backend")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        gt.compile(lambda x: x, mode="max-autotune", options={})


def test_a_failing_backend_raises_unless_errors_are_suppressed():
    def broken(gm, example_inputs):
        raise ValueError("no code today")
    f = gt.compile(lambda x: x.exp(), backend=broken)
    with pytest.raises(gt._dynamo.exc.BackendCompilerFailed, match="no code today"):
        f(gt.zeros(2))
    gt._dynamo.config.suppress_errors = True
    try:
        assert f(gt.zeros(2)).tolist() == [1.0, 1.0]
    finally:
        gt._dynamo.config.suppress_errors = False


def test_the_inductor_backend_falls_back_to_eager_when_absent():
    try:
        import glasstorch.compiler.inductor  # noqa: F401
        pytest.skip("the inductor code generator is installed")
    except ImportError:
        pass
    from glasstorch.compiler import backends
    backends._warned_no_inductor = False           # the warning is once per process
    with pytest.warns(UserWarning, match="inductor is not available"):
        out = gt.compile(lambda x: x + 1)(gt.ones(2))
    assert out.tolist() == [2.0, 2.0]


def test_compiler_namespace():
    assert not gt.compiler.is_compiling() and not gt.compiler.is_dynamo_compiling()
    f = lambda x: x   # noqa: E731
    assert gt.compiler.allow_in_graph(f) is f
    assert gt.compiler.assume_constant_result(f) is f
    assert gt.compiler.disable(f)(3) == 3
    assert gt._dynamo.config.cache_size_limit == gt._dynamo.config.recompile_limit == 8
    assert gt._dynamo.config.suppress_errors is False


def test_glasstorch_logs_environment_variable_turns_on_graphs_and_breaks(monkeypatch, caplog):
    from glasstorch.compiler import logs

    def f(x):
        y = x + 1
        if y.sum() > 0:
            y = y * 2
        return y
    monkeypatch.setenv("GLASSTORCH_LOGS", "graph,graph_breaks")
    logs._from_environment()
    try:
        with caplog.at_level("DEBUG", logger="glasstorch._dynamo"):
            gt.compile(f, backend="eager")(gt.ones(2))
    finally:
        logs.set_logs(**{name: False for name in logs.ARTIFACTS})
    by_logger = {}
    for record in caplog.records:
        by_logger.setdefault(record.name, []).append(record.getMessage())
    assert "torch.ops.aten.add.Tensor" in by_logger["glasstorch._dynamo.graph"][0]
    (brk,) = by_logger["glasstorch._dynamo.graph_breaks"]
    assert brk.startswith("Graph break in test_glasstorch_logs_environment_variable")
    assert "data-dependent control flow" in brk


def test_an_optimized_module_copies_with_its_options_not_its_graphs(counter):
    import copy
    compiled = gt.compile(nn.Linear(2, 2), backend=counter)
    compiled(gt.ones(1, 2))
    twin = copy.deepcopy(compiled)
    assert twin._orig_mod is not compiled._orig_mod
    assert gt.equal(twin(gt.ones(1, 2)), compiled(gt.ones(1, 2)))
    assert counter.compiles == 1           # the copy compiled its own graph, with its own
    assert twin._compiled.backend is not counter and len(twin._compiled.entries) == 1


def test_compile_signature_and_argument_errors_match_pytorch():
    import inspect
    torch = oracle_torch()
    assert list(inspect.signature(gt.compile).parameters) == \
        list(inspect.signature(torch.compile).parameters)
    for T in (gt, torch):
        with pytest.raises(AssertionError, match="A callable function is expected"):
            T.compile(3)
        with pytest.raises(RuntimeError, match="Unrecognized mode=bogus"):
            T.compile(lambda x: x, mode="bogus")


def test_a_per_function_recompile_limit(counter):
    compiled = gt.compile(lambda x: x + 1, backend=counter, recompile_limit=1)
    compiled(gt.ones(1))
    with pytest.warns(UserWarning, match=r"recompile_limit \(1\)"):
        compiled(gt.ones(2))
    assert counter.compiles == 1


def test_a_module_compiled_in_place_copies_to_a_module_that_computes_with_its_own_weights():
    import copy
    model = nn.Linear(2, 2)
    model.compile(backend="eager")
    twin = copy.deepcopy(model)
    with gt.no_grad():
        twin.weight.zero_()
        twin.bias.fill_(1.0)
    assert twin(gt.ones(1, 2)).tolist() == [[1.0, 1.0]]
    assert not gt.equal(model(gt.ones(1, 2)), twin(gt.ones(1, 2)))
