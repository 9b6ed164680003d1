"""Replayed calls: the bookkeeping a call does when its trace is already known (the compiled
backward's region found anew each flush, inputs and their aliases named, outputs made
from the recorded metadata, a fake mode only when an op is new) gives eager's results, and
whatever the user does on a later call (a hook, retain_grad, aliased inputs, a branch, a
graph break) is seen as on the first."""
import pytest

import glasstorch as gt

from compile_helpers import CountingBackend, training_losses


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_hook_added_on_a_later_call_runs_and_the_gradient_is_eager(backend):
    w = gt.randn(4, 4, requires_grad=True)
    seen = []
    hook = [False]

    def f(x):
        y = (x @ w).tanh()
        if hook[0]:
            y.register_hook(lambda g: seen.append(tuple(g.shape)) or g * 2)
        return (y * y).sum()

    compiled = gt.compile(f, backend=backend)
    x = gt.randn(3, 4)
    for _ in range(3):               # the region's compiled backward, replayed
        compiled(x).backward()
        assert compiled(x).grad_fn.name() == "CompiledFunctionBackward"
    hook[0] = True
    w.grad = None
    out = compiled(x)
    assert out.grad_fn.name() != "CompiledFunctionBackward"    # the region stays eager
    out.backward()
    assert seen == [(3, 4)]
    expected = w.grad.clone()
    w.grad = None
    f(x).backward()                  # eager, the hook doubling the gradient too
    assert gt.allclose(w.grad, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_retain_grad_on_a_later_call_fills_the_intermediate_grad(backend):
    w = gt.randn(4, requires_grad=True)
    keep = []

    def f(x):
        y = x * w
        if keep is not None and len(keep) == 1:
            y.retain_grad()
            keep.append(y)
        return y.exp().sum()

    compiled = gt.compile(f, backend=backend)
    x = gt.randn(4)
    for _ in range(3):
        compiled(x).backward()
    keep.append("now")
    compiled(x).backward()
    y = keep[1]
    assert y.grad is not None
    assert gt.allclose(y.grad, (x * w).exp().detach(), rtol=1e-6)


def test_aliased_inputs_on_a_later_call_are_not_taken_for_distinct_ones():
    def f(a, b):
        a.mul_(2)                   # through `b` too when it is the same tensor
        return a + b

    compiled = gt.compile(f, backend="aot_eager")
    for _ in range(2):
        x, y = gt.ones(3), gt.ones(3)
        assert gt.equal(compiled(x, y), gt.full((3,), 3.0))
    x = gt.ones(3)
    assert gt.equal(compiled(x, x), gt.full((3,), 4.0))
    base = gt.ones(6)
    assert gt.equal(compiled(base[:3], base[:3].view(3)), gt.full((3,), 4.0))


def test_new_inputs_of_an_uncapturable_op_are_forgotten_and_renumbered():
    def f(x, y, z):
        a = x * 2
        y.t_()                       # changes y's metadata in place: runs eagerly
        return a + y.sum() + z

    compiled = gt.compile(f, backend="aot_eager")
    for _ in range(3):
        x, y, z = gt.randn(2, 3), gt.randn(2, 3), gt.randn(2, 3)
        expected = f(x.clone(), y.clone(), z.clone())
        assert gt.allclose(compiled(x, y, z), expected)
        assert y.shape == (3, 2)


def test_ops_refused_by_name_break_on_every_call_and_constants_stay_real():
    """What the op's name alone decides is remembered per op after its first call: a
    lazily conjugated view is a break on every call, with its reason; a constant made from
    data is the constant."""
    def f(x):
        y = (x * gt.tensor([1.0, 2.0, 3.0])).conj()     # lift_fresh, then a refused view
        return y * 2

    for _ in range(2):           # the second explain meets the remembered refusal
        explained = gt._dynamo.explain(f)(gt.randn(2, 3, dtype=gt.complex64))
        assert explained.break_reasons[0].reason == \
            "aten._conj.default makes a lazily conjugated (negated) view, which is not captured"
    backend = CountingBackend()
    compiled = gt.compile(f, backend=backend)
    compiles = []
    for _ in range(3):
        x = gt.randn(2, 3, dtype=gt.complex64)
        assert gt.allclose(compiled(x), f(x))
        compiles.append(backend.compiles)
    assert compiles[0] >= 1 and compiles[-1] == compiles[0]   # replayed, not recompiled


def test_a_subclass_argument_on_a_later_call_breaks_as_on_the_first():
    class Marked(gt.Tensor):
        pass

    def f(x, y):
        return (x * 2) + y

    compiled = gt.compile(f, backend="aot_eager")
    x = gt.randn(3)
    for _ in range(2):                               # plain tensors: replayed
        assert gt.allclose(compiled(x, gt.ones(3)), x * 2 + 1)
    marked = gt.ones(3).as_subclass(Marked)
    out = compiled(x, marked)                        # the same trace, but a subclass
    assert gt.allclose(out, x * 2 + 1)


def test_a_hook_added_then_removed_keeps_the_compiled_backward():
    """A node that once had a hook (its hook containers made) but has none now is no
    reason to leave the region on eager autograd."""
    w = gt.randn(4, 4, requires_grad=True)
    add_and_remove = [False]

    def f(x):
        y = (x @ w).tanh()
        if add_and_remove[0]:
            y.grad_fn.register_prehook(lambda grads: (grads[0] * 100,)).remove()
        return (y * y).sum()

    compiled = gt.compile(f, backend="aot_eager")
    x = gt.randn(3, 4)
    for _ in range(2):
        compiled(x)
    add_and_remove[0] = True
    out = compiled(x)
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    (grad,) = gt.autograd.grad(out, [w])
    (expected,) = gt.autograd.grad(f(x), [w])
    assert gt.allclose(grad, expected, rtol=1e-5, atol=1e-6)


def test_a_branch_taken_on_a_later_call_describes_its_new_ops():
    flag = [False]

    def f(x):
        y = x.sin() * 2
        if flag[0]:
            y = y.cumsum(0).relu()
        return y + 1

    compiled = gt.compile(f, backend="inductor")
    x = gt.randn(5)
    for _ in range(2):
        assert gt.allclose(compiled(x), f(x))
    flag[0] = True
    for _ in range(2):               # a known prefix, then ops met for the first time
        assert gt.allclose(compiled(x), f(x))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_break_inside_keeps_both_regions_compiled_on_every_call(backend):
    w = gt.randn(4, 4, requires_grad=True)

    def f(x):
        y = (x @ w).tanh()
        if y.sum() > -100:           # a graph break
            y = y * 3
        return (y @ w).sigmoid()

    compiled = gt.compile(f, backend=backend)
    x = gt.randn(2, 4)
    expected_out = f(x)
    (expected,) = gt.autograd.grad(expected_out.sum(), [w])
    for _ in range(4):
        out = compiled(x)
        assert out.grad_fn.name() == "CompiledFunctionBackward"
        inner = [n.name() for n, _ in out.grad_fn.next_functions if n is not None]
        assert "CompiledFunctionBackward" in inner
        (grad,) = gt.autograd.grad(out.sum(), [w])
        assert gt.allclose(out, expected_out, rtol=1e-6, atol=1e-6)
        assert gt.allclose(grad, expected, rtol=1e-5, atol=1e-6)


def test_guards_still_fire_on_replayed_calls(caplog):
    calls = []

    def f(x):
        calls.append(1)
        return x * 2

    compiled = gt.compile(f, backend="aot_eager")
    for _ in range(3):
        compiled(gt.ones(3))
    gt._logging.set_logs(recompiles=True)
    try:
        with caplog.at_level("DEBUG", logger="glasstorch._dynamo.recompiles"):
            assert gt.equal(compiled(gt.ones(5)), gt.full((5,), 2.0))
    finally:
        gt._logging.set_logs(recompiles=False)
    assert calls == [1] * 4                         # the user's Python ran on every call
    assert "tensor 'x' size mismatch at index 0. expected 3, actual 5" in caplog.text


def test_the_bench_mlp_trains_as_eager_for_twenty_steps():
    """The compiled model of bench/compiled.py's `c_mlp` (GELU + LayerNorm, Adam), its
    forward and backward compiled by inductor, against eager over 20 steps."""
    import copy
    nn = gt.nn
    gt.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 16), nn.GELU(), nn.LayerNorm(16),
                          nn.Linear(16, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4))
    twin = copy.deepcopy(model)
    compiled = gt.compile(twin)
    gt.manual_seed(1)
    data = [(gt.randn(8, 20), gt.randint(0, 4, (8,))) for _ in range(20)]
    losses = {name: training_losses(net, params.parameters(), data, gt.optim.Adam, 1e-3)
              for name, net, params in (("eager", model, model), ("compiled", compiled, twin))}
    assert gt.allclose(gt.tensor(losses["compiled"]), gt.tensor(losses["eager"]),
                       rtol=1e-5, atol=1e-6)
    for p, q in zip(twin.parameters(), model.parameters()):
        assert (p - q).abs().max() < 1e-5
