"""Compiled equals eager: values, dtypes, shapes, strides, aliasing of outputs, views and
in-place mutation of inputs, module buffers, side effects in eager's order; and what a
backend receives."""
import copy

import pytest

import glasstorch as gt
import glasstorch.nn as nn
import glasstorch.nn.functional as F
from compile_helpers import same

BACKENDS = ["eager", "aot_eager"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program", [
    lambda x, y: (x * y + 1).relu() - x.sigmoid(),
    lambda x, y: (x.sum(0), y.mean(1, keepdim=True), x.amax(-1), (x * y).sum()),
    lambda x, y: (x.t() @ y, F.softmax(x, -1), x.to(gt.float64) + 1),
    lambda x, y: (x > y, gt.where(x > 0, x, y), x.int() * 2),
])
def test_programs_equal_eager(backend, program):
    gt.manual_seed(0)
    x, y = gt.randn(3, 4), gt.randn(3, 4)
    expected = program(x, y)
    got = gt.compile(program, backend=backend)(x, y)
    for g, e in zip(got if isinstance(got, tuple) else (got,),
                    expected if isinstance(expected, tuple) else (expected,)):
        same(g, e)


def test_views_of_inputs_and_outputs_alias_as_in_eager():
    def f(x):
        a = x + 1
        return x.view(12), x.t(), x[1], a, a.t(), a[:, 1:3]
    x = gt.randn(3, 4)
    outs = gt.compile(f, backend="eager")(x)
    for got, expected in zip(outs, f(x)):
        same(got, expected)
    v, t, row, a, at, a_cols = outs
    assert v.untyped_storage() is x.untyped_storage()
    assert t._base is x and row._base is x
    assert at.untyped_storage() is a.untyped_storage() and at._base is a
    assert a_cols.storage_offset() == 1 and a_cols._base is a
    a.zero_()                                     # the outputs really share memory
    assert at.abs().sum().item() == 0 and a_cols.abs().sum().item() == 0


def test_in_place_mutation_of_inputs_and_version_counters():
    def f(x, y):
        x.add_(1)
        x[0].mul_(y[0])                            # through a view
        y.copy_(x.sum(0))
        return x * 2
    x1, y1 = gt.ones(2, 3), gt.arange(3.)
    x2, y2 = x1.clone(), y1.clone()
    out = gt.compile(f, backend="eager")(x1, y1)
    same(out, f(x2, y2))
    same(x1, x2)
    same(y1, y2)
    assert (x1._version, y1._version) == (x2._version, y2._version)


def test_reading_a_mutated_input_inside_the_function_sees_the_new_value():
    seen = []

    def f(x):
        x.mul_(3)
        seen.append(x.tolist())                    # a graph break: the write happens first
        return x + 1
    x = gt.ones(2)
    out = gt.compile(f, backend="eager")(x)
    assert seen == [[3.0, 3.0]] and out.tolist() == [4.0, 4.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_batchnorm_in_train_mode_updates_buffers_as_eager(backend):
    gt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    reference = copy.deepcopy(model)
    compiled = gt.compile(model, backend=backend)
    for _ in range(3):
        x = gt.randn(5, 4)
        same(compiled(x), reference(x))
    bn, bn_ref = model[1], reference[1]
    same(bn.running_mean, bn_ref.running_mean)
    same(bn.running_var, bn_ref.running_var)
    assert bn.num_batches_tracked.item() == 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_small_cnn_forward_and_backward(backend):
    gt.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(36, 3))
    reference = copy.deepcopy(model)
    x = gt.randn(2, 1, 8, 8)
    out = gt.compile(model, backend=backend)(x)
    expected = reference(x)
    assert gt.allclose(out, expected, atol=1e-6)
    out.sum().backward()
    expected.sum().backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert gt.allclose(p.grad, q.grad, atol=1e-5)


def test_side_effects_happen_in_eager_order(capsys):
    log = []

    class Box:
        pass
    box = Box()

    def f(x):
        log.append("start")
        y = x * 2
        print("shape", tuple(y.shape))
        box.value = y
        log.append(y.sum().item())                 # a graph break in the middle
        print("after", y[0].item())
        log.append("end")
        return y + 1
    out = gt.compile(f, backend="eager")(gt.ones(2))
    assert log == ["start", 4.0, "end"]
    assert capsys.readouterr().out == "shape (2,)\nafter 2.0\n"
    assert box.value.tolist() == [2.0, 2.0] and out.tolist() == [3.0, 3.0]


def test_a_user_backend_receives_an_aten_graph_and_real_inputs(counter):
    def f(x, w):
        return F.relu(x @ w).sum(1)
    x, w = gt.randn(2, 3), gt.randn(3, 4)
    gt.compile(f, backend=counter)(x, w)
    (gm,), (inputs,) = counter.graphs, counter.example_inputs
    assert isinstance(gm, gt.fx.GraphModule)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets == [gt.ops.aten.matmul.default, gt.ops.aten.relu.default,
                       gt.ops.aten.sum.dim_IntList]
    assert inputs[0] is x and inputs[1] is w
    assert [n.op for n in gm.graph.nodes].count("placeholder") == 2
    node = [n for n in gm.graph.nodes if n.op == "call_function"][-1]
    assert tuple(node.meta["val"].shape) == (2,)


def test_the_result_tensors_are_plain_tensors_with_autograd_history():
    w = gt.randn(3, requires_grad=True)
    out = gt.compile(lambda x: (x * w).sin(), backend="eager")(gt.ones(3))
    assert type(out) is gt.Tensor and out.grad_fn is not None
    out.sum().backward()
    assert gt.allclose(w.grad, w.cos())


def test_random_ops_draw_as_eager():
    def f(x):
        return x + gt.randn(3), F.dropout(x, 0.5)
    gt.manual_seed(5)
    expected = f(gt.ones(3))
    gt.manual_seed(5)
    got = gt.compile(f, backend="eager")(gt.ones(3))
    for g, e in zip(got, expected):
        same(g, e)


def test_an_exception_in_the_function_propagates_and_leaves_tensors_computed():
    kept = []

    def f(x):
        kept.append(x * 2)
        raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        gt.compile(f, backend="eager")(gt.ones(2))
    assert kept[0].tolist() == [2.0, 2.0]


def test_nested_compiled_functions_are_captured_by_the_outer_one(counter):
    inner = gt.compile(lambda x: x * 3, backend="eager")
    outer = gt.compile(lambda x: inner(x + 1) - 1, backend=counter)
    assert outer(gt.ones(2)).tolist() == [5.0, 5.0]
    assert counter.compiles == 1
    assert len([n for n in counter.graphs[0].graph.nodes if n.op == "call_function"]) == 3


def test_writing_an_input_through_numpy_after_an_op_read_it_keeps_eager_order():
    def f(x):
        y = x * 2                                  # reads x (pending)
        x.numpy()[0] = 100.0                       # a direct write: the read happens first
        return y, x + 1
    x1, x2 = gt.ones(2), gt.ones(2)
    got = gt.compile(f, backend="eager")(x1)
    for g, e in zip(got, f(x2)):
        same(g, e)


def test_an_optimizer_update_inside_a_compiled_region_is_recorded_as_operators(counter):
    w = nn.Parameter(gt.ones(3))
    optimizer = gt.optim.SGD([w], lr=0.5)

    def step(x):
        loss = (w * x).sum()
        loss.backward()
        optimizer.step()
        return loss
    gt.compile(step, backend=counter)(gt.arange(3.))
    assert w.tolist() == [1.0, 0.5, 0.0] and counter.compiles == 1
    assert "aten.add_.Tensor" in {str(n.target) for n in counter.graphs[0].graph.nodes}


def test_a_tensor_repointed_without_an_operator_is_seen_with_its_new_value():
    def f(p):
        p.data = p.data * 2                        # .data assignment: no operator runs
        return p + 1
    a, b = nn.Parameter(gt.ones(2)), nn.Parameter(gt.ones(2))
    same(gt.compile(f, backend="eager")(a), f(b))
    same(a.detach(), b.detach())


def test_threads_share_a_compiled_function_safely():
    import threading
    compiled = gt.compile(lambda t: (t * 2).sum(), backend="eager")
    results = []

    def work(i):
        for _ in range(10):
            results.append(compiled(gt.full((8,), float(i))).item() == 16.0 * i)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 40 and all(results)


def test_reading_or_setting_the_rng_state_lets_recorded_random_ops_draw_first():
    def f(x):
        a = x + gt.randn(3)
        gt.manual_seed(7)                          # the draw above happens first
        b = F.dropout(x, 0.5)
        state = gt.get_rng_state()                 # reflects the dropout's draws
        with gt.random.fork_rng():
            c = gt.rand(3)
        return a, b, state, c, gt.rand(3)
    gt.manual_seed(1)
    got = gt.compile(f, backend="eager")(gt.ones(3))
    gt.manual_seed(1)
    for g, e in zip(got, f(gt.ones(3))):
        same(g, e)


def test_a_compiled_model_with_checkpointed_dropout_gets_eagers_gradients():
    from glasstorch.utils.checkpoint import checkpoint

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            x = F.dropout(self.a(x), 0.3)
            return checkpoint(lambda h: F.dropout(self.b(h), 0.3).relu(), x,
                              use_reentrant=False)
    gt.manual_seed(0)
    model = Net()
    reference = copy.deepcopy(model)
    x = gt.randn(3, 4)
    gt.manual_seed(5)
    gt.compile(model, backend="eager")(x).sum().backward()
    gt.manual_seed(5)
    reference(x).sum().backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        same(p.grad, q.grad)
