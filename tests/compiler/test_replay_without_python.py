"""Replaying a compiled call without its Python (compiler/replay.py): a call whose Python was
watched and shown pure runs the compiled graph alone; the results, gradients and training
are those of lazy capture bit for bit (same graphs), and whatever the Python read that
changes afterwards (a module attribute, a global, a closure, a class attribute, a hook, the
default dtype), or a side effect it has, keeps or puts the call back on lazy capture."""
import contextlib
import copy
import sys

import pytest

import glasstorch as gt
from glasstorch.compiler import config

from compile_helpers import training_losses

nn, F = gt.nn, gt.nn.functional
SCALE = 2.0


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 8)
        self.gain = 1.5

    def forward(self, x):
        b, t, c = x.shape
        h = F.gelu(self.fc(self.ln(x))) * self.gain * SCALE
        return (x + h).reshape(b * t, c)


def _entry(compiled):
    inner = compiled._compiled if isinstance(compiled, nn.Module) else \
        compiled._glasstorch_compiled
    return inner.entries[-1]


@contextlib.contextmanager
def _calls_of(code):
    """Counts the calls of `code` in the block (a list of one int)."""
    count = [0]

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            count[0] += 1
    sys.setprofile(profile)
    try:
        yield count
    finally:
        sys.setprofile(None)


def _replaying(compiled, *args):
    """Call `compiled` until its entry holds a replay plan (the first call compiles, the
    second is watched)."""
    for _ in range(3):
        compiled(*args)
        if _entry(compiled).replay is not None:
            return True
    return False


def test_a_pure_module_replays_without_its_python_and_equals_lazy_capture():
    gt.manual_seed(0)
    model = Block()
    lazy_model = copy.deepcopy(model)
    compiled, lazy = gt.compile(model), gt.compile(lazy_model)
    x = gt.randn(2, 3, 8)
    assert _replaying(compiled, x)
    with _calls_of(Block.forward.__code__) as ran:
        out = compiled(x)
    assert ran == [0]
    config.replay_pure_calls = False
    try:
        for _ in range(3):
            lazy(x)
        assert _entry(lazy).replay is None
        with _calls_of(Block.forward.__code__) as ran:
            want = lazy(x)
        assert ran == [1]
        with _calls_of(Block.forward.__code__) as ran:
            compiled(x)                      # the switch turns an existing replay off too
        assert ran == [1]
    finally:
        config.replay_pure_calls = True
    assert gt.equal(out, want) and out.stride() == want.stride()
    assert out.grad_fn.name() == "CompiledFunctionBackward" and out.requires_grad
    assert out._base is not None and out._base.grad_fn is out.grad_fn
    out.sum().backward()
    want.sum().backward()
    for p, q in zip(model.parameters(), lazy_model.parameters()):
        assert gt.equal(p.grad, q.grad)
    assert gt.allclose(out, model(x), rtol=1e-5, atol=1e-6)   # and eager's values


def test_twenty_training_steps_replayed_equal_lazy_capture_bit_for_bit():
    gt.manual_seed(0)
    net = nn.Sequential(nn.Linear(12, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))
    twin = copy.deepcopy(net)
    replayed, lazy = gt.compile(net), gt.compile(twin)
    gt.manual_seed(1)
    data = [(gt.randn(5, 12), gt.randint(0, 3, (5,))) for _ in range(20)]
    losses = {}
    for name, model, params in (("replayed", replayed, net), ("lazy", lazy, twin)):
        config.replay_pure_calls = name == "replayed"
        try:
            losses[name] = training_losses(model, params.parameters(), data,
                                           gt.optim.AdamW, 1e-2)
        finally:
            config.replay_pure_calls = True
    assert _entry(replayed).replay is not None and _entry(lazy).replay is None
    assert losses["replayed"] == losses["lazy"]
    for p, q in zip(net.parameters(), twin.parameters()):
        assert gt.equal(p, q)


def test_what_the_python_read_is_guarded():
    """A module attribute, a global, a closure cell, a class attribute and the default
    dtype changed between calls each show in the result."""
    global SCALE
    gt.manual_seed(0)
    model = Block()
    compiled = gt.compile(model)
    x = gt.randn(1, 2, 8)
    assert _replaying(compiled, x)
    model.gain = 3.0
    assert gt.allclose(compiled(x), model(x))
    assert _replaying(compiled, x)
    SCALE = 5.0
    try:
        assert gt.allclose(compiled(x), model(x))
    finally:
        SCALE = 2.0

    offset = [1.0]

    def make():
        shift = offset[0]

        def f(v):
            return v * 2 + shift
        return f
    f = make()
    cf = gt.compile(f)
    v = gt.ones(3)
    assert _replaying(cf, v)
    f.__closure__[0].cell_contents = 4.0
    assert gt.equal(cf(v), gt.full((3,), 6.0))

    class Scaled(nn.Module):
        factor = 2.0

        def forward(self, v):
            return v * self.factor + gt.zeros(v.shape[0])
    m = Scaled()
    cm = gt.compile(m)
    assert _replaying(cm, v)
    Scaled.factor = 7.0
    assert gt.equal(cm(v), gt.full((3,), 7.0))
    gt.set_default_dtype(gt.float64)
    try:
        assert cm(v).dtype == gt.float64
    finally:
        gt.set_default_dtype(gt.float32)


def test_a_hook_registered_later_runs():
    model = Block()
    compiled = gt.compile(model)
    x = gt.randn(1, 2, 8)
    assert _replaying(compiled, x)
    seen = []
    handle = model.fc.register_forward_hook(lambda mod, args, out: seen.append(out.shape))
    compiled(x)
    assert seen == [(1, 2, 8)]
    handle.remove()


@pytest.mark.parametrize("effect", ["print", "append", "dropout", "item", "attribute"])
def test_side_effects_and_breaks_keep_the_python_running(effect, capsys):
    log = []

    class Effect(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.calls = 0

        def forward(self, v):
            y = self.fc(v)
            if effect == "print":
                print("called")
            elif effect == "append":
                log.append(1)
            elif effect == "dropout":
                y = F.dropout(y, 0.5, training=True)
            elif effect == "item":
                y = y * y.sum().item()
            else:
                self.calls += 1
            return y
    model = Effect()
    compiled = gt.compile(model)
    v = gt.randn(2, 4)
    for _ in range(5):
        compiled(v)
    assert _entry(compiled).replay is None
    if effect == "print":
        assert capsys.readouterr().out.count("called") == 5
    if effect == "append":
        assert len(log) == 5
    if effect == "attribute":
        assert model.calls == 5
    if effect == "dropout":
        gt.manual_seed(3)
        a = compiled(v)
        gt.manual_seed(3)
        assert gt.equal(a, compiled(v)) and not gt.equal(a, compiled(v))


def test_modes_and_profiles_see_the_python_again():
    from glasstorch.overrides import TorchFunctionMode

    class Names(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.names.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))
    model = Block()
    compiled = gt.compile(model)
    x = gt.randn(1, 2, 8)
    assert _replaying(compiled, x)
    with Names() as mode:
        compiled(x)
    assert "gelu" in mode.names
    with gt.profiler.profile() as prof:
        compiled(x)
    assert any("gelu" in e.name for e in prof.events())


def test_outputs_in_a_tuple_with_none_and_no_grad():
    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, v, targets=None):
            logits = self.fc(v)
            loss = None if targets is None else F.cross_entropy(logits, targets)
            return logits, loss
    model = Pair()
    compiled = gt.compile(model)
    v, y = gt.randn(3, 4), gt.tensor([0, 1, 1])
    assert _replaying(compiled, v, y)
    logits, loss = compiled(v, y)
    want_logits, want_loss = model(v, y)
    assert gt.allclose(logits, want_logits) and gt.allclose(loss, want_loss)
    loss.backward()
    assert model.fc.weight.grad is not None
    assert _replaying(compiled, v)
    logits, loss = compiled(v)
    assert loss is None and gt.allclose(logits, model(v)[0])
    with gt.no_grad():
        assert _replaying(compiled, v, y)
        logits, loss = compiled(v, y)
    assert not logits.requires_grad and logits.grad_fn is None


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_backward_autograd_recorded_keeps_the_python_running(backend):
    """With a backend that compiles no backward ("eager"), the gradient comes from the
    graph autograd records while the Python runs: such calls are not replayed (under
    no_grad they may be); with "aot_eager" the compiled backward is replayed."""
    gt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    twin = copy.deepcopy(model)
    compiled = gt.compile(model, backend=backend)
    x = gt.randn(5, 4)
    for _ in range(4):
        model.zero_grad()
        compiled(x).sum().backward()
    assert (_entry(compiled).replay is not None) == (backend == "aot_eager")
    twin(x).sum().backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        assert gt.allclose(p.grad, q.grad, rtol=1e-6, atol=1e-7)
    with gt.no_grad():
        assert _replaying(compiled, x)


def test_batch_norm_training_replays_with_its_buffers_updated_and_versions_counted():
    """Running statistics written in place by the graph are written on every replayed call,
    and the buffers' version counters move as eager mode's in-place ops move them."""
    def build():
        gt.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU())
    model, twin, eager = build(), build(), build()
    compiled, lazy = gt.compile(model), gt.compile(twin)
    x = gt.randn(8, 4)
    for _ in range(4):
        compiled(x).sum().backward()
        eager(x).sum().backward()
        config.replay_pure_calls = False
        try:
            lazy(x).sum().backward()
        finally:
            config.replay_pure_calls = True
    assert _entry(compiled).replay is not None and _entry(lazy).replay is None
    bn, bn2, bn3 = model[1], twin[1], eager[1]
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        ours, want = getattr(bn, name), getattr(bn2, name)
        assert gt.equal(ours, want) and ours._version == want._version
        assert gt.allclose(ours.double(), getattr(bn3, name).double(), atol=1e-6)
    assert bn.num_batches_tracked.item() == 4
    for p, q in zip(model.parameters(), twin.parameters()):
        assert gt.equal(p.grad, q.grad)


def test_a_mutable_default_or_two_functions_of_one_code_keep_the_python_running():
    def scaled(v, table={"k": 2.0}):
        return v * table["k"]
    cs = gt.compile(scaled)
    v = gt.ones(2)
    for _ in range(4):
        cs(v)
    assert _entry(cs).replay is None
    scaled.__defaults__[0]["k"] = 3.0
    assert gt.equal(cs(v), gt.full((2,), 3.0))


def test_a_mutable_object_read_through_a_module_keeps_the_python_running():
    import os

    def flagged(v):
        return v * (2.0 if os.environ.get("GLASSTORCH_TEST_FLAG") else 1.0)
    cf = gt.compile(flagged)
    v = gt.ones(2)
    for _ in range(4):
        cf(v)
    assert _entry(cf).replay is None
    os.environ["GLASSTORCH_TEST_FLAG"] = "1"
    try:
        assert gt.equal(cf(v), gt.full((2,), 2.0))
    finally:
        del os.environ["GLASSTORCH_TEST_FLAG"]


def test_a_config_object_is_guarded_attribute_by_attribute():
    """nanoGPT keeps a dataclass config on its model and reads it in forward: replayed, and
    a changed or added attribute is seen."""
    import dataclasses

    @dataclasses.dataclass
    class Config:
        scale: float = 2.0
        tanh: bool = False

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.config = Config()
            self.fc = nn.Linear(4, 4)

        def forward(self, v):
            y = self.fc(v) * self.config.scale
            y = y.tanh() if self.config.tanh else y
            return y.view(-1, 2)
    net = Net()
    compiled = gt.compile(net)
    v = gt.randn(3, 4)
    assert _replaying(compiled, v)
    out = compiled(v)
    assert gt.allclose(out, net(v)) and out.shape == (6, 2)
    out.sum().backward()
    assert net.fc.weight.grad is not None
    net.config.scale = 5.0
    assert gt.allclose(compiled(v), net(v))
    assert _replaying(compiled, v)
    net.config.tanh = True
    assert gt.allclose(compiled(v), net(v))
    assert _replaying(compiled, v)
    net.config.extra = [1]           # an attribute added (a list: not guardable) is seen too
    assert gt.allclose(compiled(v), net(v))


def test_an_argument_written_in_place_is_written_on_every_replayed_call():
    def bump(x, y):
        x.add_(1)
        return x * y
    cb = gt.compile(bump)
    x, y = gt.zeros(3), gt.full((3,), 2.0)
    assert _replaying(cb, x, y)
    before = (x.clone(), x._version)
    out = cb(x, y)
    assert gt.equal(x, before[0] + 1) and x._version == before[1] + 1
    assert gt.equal(out, (before[0] + 1) * 2)


def test_a_callable_object_among_the_attributes_keeps_the_python_running():
    """A call made from C (a partial's) is not seen by the watch: such attributes are not
    replayed."""
    import functools
    seen = []

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.note = functools.partial(seen.append, 1)

        def forward(self, v):
            self.note()
            return v * 2
    compiled = gt.compile(Net())
    for _ in range(4):
        compiled(gt.ones(2))
    assert _entry(compiled).replay is None and len(seen) == 4


def test_classes_made_twice_by_a_factory_replay_and_their_closures_are_guarded():
    """A model class made inside a function (the bench's GPTs, nanoGPT's build) made twice
    has two forward functions of one code: the one running is told apart by its cells."""
    def build(scale):
        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 3)

            def forward(self, v):
                return self.fc(v) * scale
        return Scaled()
    first, second = build(2.0), build(3.0)
    v = gt.randn(2, 3)
    c1, c2 = gt.compile(first), gt.compile(second)
    assert _replaying(c1, v) and _replaying(c2, v)
    assert gt.allclose(c1(v), first(v)) and gt.allclose(c2(v), second(v))
    type(second).forward.__closure__[0].cell_contents = 5.0
    assert gt.allclose(c2(v), second.fc(v) * 5.0) and gt.allclose(c1(v), first.fc(v) * 2.0)


def test_replayed_outputs_are_freed_when_dropped():
    """A replayed call's outputs (a view of one among them) hold their memory only while
    the caller does: no reference cycle keeps them until the garbage collector runs."""
    import gc
    import weakref

    def f(x, r):
        y = F.layer_norm(x + r, (64,))
        return y, y[:, :8]
    compiled = gt.compile(f)
    x, r = gt.randn(32, 64), gt.randn(32, 64)
    assert _replaying(compiled, x, r)
    gc.disable()
    try:
        before = gt.memory.memory_allocated("cpu")
        y, view = compiled(x, r)
        assert gt.allclose(y, f(x, r)[0]) and view._base is y
        storage = weakref.ref(y._storage)
        del y, view
        assert storage() is None
        assert gt.memory.memory_allocated("cpu") == before
    finally:
        gc.enable()


COLLECTIONS = 0


def _count_collections(phase, info):
    global COLLECTIONS
    COLLECTIONS += 1


def test_a_collection_during_the_watched_call_does_not_keep_it_from_replaying():
    """What the garbage collector runs inside the watched call (a gc callback storing a
    global, as hypothesis's does; finalizers of cyclic garbage) is not the call's doing:
    such a call replayed only when no collection happened to fall inside it."""
    import gc
    gt.manual_seed(0)
    compiled = gt.compile(Block())
    x = gt.randn(2, 3, 8)
    compiled(x)                              # compiles
    threshold, callbacks = gc.get_threshold(), list(gc.callbacks)
    gc.callbacks.append(_count_collections)
    gc.set_threshold(1)                      # a collection at nearly every allocation
    try:
        before = COLLECTIONS
        compiled(x)                          # watched
        assert COLLECTIONS > before
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(_count_collections)
    assert _entry(compiled).replay is not None
    assert gc.callbacks == callbacks             # the watch took its own callbacks away
