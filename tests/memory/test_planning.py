"""memory.estimate: one training step's peak, planned on 'meta', against the CPU's real peak.

Each real step is measured the way a user would: memory_allocated before the model exists,
reset_peak_memory_stats, then model, optimizer, batch and one step; the step's peak is
max_memory_allocated minus that baseline, which is what `estimate(...).peak` covers
(parameters, buffers, the batch, gradients, optimizer state, activations, temporaries).
"""

import pytest

import glasstorch as gt
import glasstorch.nn.functional as F
from glasstorch import nn
from glasstorch.core import device as device_mod
from glasstorch.core import storage as storage_mod
from glasstorch.examples.chargpt import GPT
from glasstorch.examples.digits import DigitsNet
from glasstorch.memory import (MemoryEstimate, estimate, max_memory_allocated,
                               memory_allocated, reset_peak_memory_stats)

VOCAB = 158


def _tensor_bytes(tensors):
    return sum(t.untyped_storage().nbytes() for t in tensors if isinstance(t, gt.Tensor))


def _real_step(make_model, make_batch, loss_fn, optimizer, kwargs, after_backward=None):
    """One training step on the CPU: (peak bytes over the step, model, optimizer)."""
    base = memory_allocated("cpu")
    reset_peak_memory_stats("cpu")
    model = make_model()
    opt = optimizer(model.parameters(), **kwargs)
    x, y = make_batch()
    loss = loss_fn(model(x), y)
    opt.zero_grad()
    loss.backward()
    if after_backward is not None:
        after_backward(model)
    opt.step()
    peak = max_memory_allocated("cpu") - base
    del x, y, loss
    return peak, model, opt


def _digits_batch():
    return gt.randn(64, 1, 8, 8), gt.randint(0, 10, (64,))


def _gpt_batch():
    return gt.randint(0, VOCAB, (16, 64)), gt.randint(0, VOCAB, (16, 64))


def _gpt_loss(logits, y):
    return F.cross_entropy(logits.flatten(0, 1), y.flatten())


def _mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256),
                         nn.ReLU(), nn.Linear(256, 10))


def _mlp_batch():
    return gt.randn(128, 784), gt.randint(0, 10, (128,))


def _cnn():
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


def _cnn_batch():
    return gt.randn(64, 1, 28, 28), gt.randint(0, 10, (64,))


def _clip(model):
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)   # as the chargpt example does


CASES = {
    "digits": (DigitsNet, _digits_batch, nn.CrossEntropyLoss(), gt.optim.Adam,
               dict(lr=3e-3), None),
    "chargpt": (lambda: GPT(VOCAB, 64), _gpt_batch, _gpt_loss, gt.optim.AdamW,
                dict(lr=3e-3, weight_decay=0.1, betas=(0.9, 0.95)), _clip),
    "mlp": (_mlp, _mlp_batch, nn.CrossEntropyLoss(), gt.optim.Adam, dict(lr=1e-3), None),
    "cnn": (_cnn, _cnn_batch, nn.CrossEntropyLoss(), gt.optim.SGD,
            dict(lr=0.01, momentum=0.9), None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_estimate_lands_within_ten_percent_of_the_cpu_peak(quiet_gc, name):
    make_model, make_batch, loss_fn, optimizer, kwargs, after_backward = CASES[name]
    gt.manual_seed(0)
    real, model, opt = _real_step(make_model, make_batch, loss_fn, optimizer, kwargs,
                                  after_backward)
    x, y = make_batch()
    e = estimate(model, x, target=y, loss_fn=loss_fn, optimizer=optimizer,
                 optimizer_kwargs=kwargs)
    assert abs(e.peak - real) <= 0.10 * real, (name, e.peak, real)

    params = list(model.parameters())
    assert e.parameters == _tensor_bytes(params)
    assert e.parameters == sum(p.numel() * p.element_size() for p in params)
    assert e.gradients == _tensor_bytes(p.grad for p in params) == e.parameters
    state = [v for s in opt.state.values() for v in s.values()]
    assert e.optimizer_state == _tensor_bytes(state)
    if optimizer is gt.optim.SGD:     # one momentum buffer per parameter
        assert e.optimizer_state == e.parameters
    else:                             # exp_avg, exp_avg_sq and a 0-dim float32 step each
        assert e.optimizer_state == 2 * e.parameters + 4 * len(params)
    assert e.inputs == x.nbytes + y.nbytes
    assert e.buffers == 0
    assert e.activations_peak > 0
    assert sum(e.at_peak.values()) == e.peak
    assert e.peak >= e.parameters + e.inputs + e.activations_peak


def test_estimate_allocates_nothing_and_leaves_the_model_alone(quiet_gc):
    gt.manual_seed(0)
    model = DigitsNet()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    params = list(model.parameters())
    rng = gt.get_rng_state()
    base, peak = memory_allocated("cpu"), max_memory_allocated("cpu")
    estimate(model, (64, 1, 8, 8), target=gt.empty(64, dtype=gt.int64, device="meta"),
             loss_fn=nn.CrossEntropyLoss(), optimizer=gt.optim.Adam)
    assert memory_allocated("cpu") == base
    assert max_memory_allocated("cpu") == peak
    assert list(model.parameters()) == params
    assert all(p.device.type == "cpu" and p.grad is None and p.requires_grad for p in params)
    for k, v in model.state_dict().items():
        assert gt.equal(v, before[k])
    assert model.training
    assert gt.equal(gt.get_rng_state(), rng)
    # estimating left the defaults as they were: CPU factories
    assert gt.arange(3).device.type == "cpu"
    assert device_mod.default_device.type == "cpu"


def test_without_a_step_or_an_optimizer(quiet_gc):
    gt.manual_seed(0)
    base = memory_allocated("cpu")
    reset_peak_memory_stats("cpu")
    model = _mlp()
    x = gt.randn(32, 784)
    model(x).sum().backward()
    real = max_memory_allocated("cpu") - base
    e = estimate(model, (32, 784))      # default loss: the output's sum
    assert e.peak == pytest.approx(real, rel=0.10)
    assert e.optimizer_state == 0 and e.gradients == e.parameters
    assert e.inputs == 32 * 784 * 4
    no_step = estimate(model, (32, 784), optimizer=gt.optim.Adam, step=False)
    assert no_step.optimizer_state == 0 and no_step.peak == e.peak
    stepped = estimate(model, (32, 784), optimizer=gt.optim.Adam)
    assert stepped.optimizer_state == 2 * e.parameters + 4 * len(list(model.parameters()))


class _TwoInputs(nn.Module):
    """Two inputs, a tied weight (counted once) and a buffer."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 16)
        self.b.weight = self.a.weight
        self.register_buffer("scale", gt.ones(16))

    def forward(self, x, z):
        return self.b(self.a(x) * self.scale) + z


def test_several_inputs_tied_weights_buffers_and_an_optimizer_factory(quiet_gc):
    gt.manual_seed(0)
    base = memory_allocated("cpu")
    reset_peak_memory_stats("cpu")
    model = _TwoInputs()
    opt = gt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, z = gt.randn(8, 16), gt.randn(8, 16)
    model(x, z).sum().backward()
    opt.step()
    real = max_memory_allocated("cpu") - base
    e = estimate(model, [(8, 16), z], optimizer=lambda ps: gt.optim.SGD(ps, lr=0.1,
                                                                      momentum=0.9))
    assert e.parameters == (16 * 16 + 16 + 16) * 4       # the tied weight once
    assert e.buffers == 16 * 4
    assert e.optimizer_state == e.parameters
    assert e.peak == pytest.approx(real, rel=0.10)


def test_a_loss_module_with_cpu_weights_runs_on_meta(quiet_gc):
    loss_fn = nn.CrossEntropyLoss(weight=gt.rand(10))
    e = estimate(_mlp(), (4, 784), target=gt.zeros(4, dtype=gt.int64), loss_fn=loss_fn)
    assert e.peak > e.parameters + e.gradients
    assert loss_fn.weight.device.type == "cpu"


def test_report_is_a_readable_table():
    e = estimate(_mlp(), (4, 784), optimizer=gt.optim.Adam)
    assert isinstance(e, MemoryEstimate)
    text = str(e)
    for row in ("parameters", "buffers", "inputs", "gradients", "optimizer state",
                "activations and temporaries", "peak"):
        assert row in text
    assert "MiB" in text and "KiB" in text
    assert repr(e).startswith("MemoryEstimate(parameters=")


def test_bad_inputs_raise_and_leave_nothing_switched():
    allocator = storage_mod.cpu_allocator
    with pytest.raises(TypeError, match="estimate\\(\\): an input must be a Tensor or a shape"):
        estimate(_mlp(), ["not a shape"])
    with pytest.raises(TypeError, match="target must be a Tensor or a shape"):
        estimate(_mlp(), (4, 784), target="labels")

    def failing(out):
        raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        estimate(_mlp(), (4, 784), loss_fn=failing)
    assert device_mod.default_device.type == "cpu"
    assert storage_mod.cpu_allocator is allocator


class _Resizes(nn.Module):
    """A forward that grows a fresh tensor with resize_ (meta storages resize counted)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        buf = gt.empty(0)
        buf.resize_(x.shape[0], 1000)
        return self.lin(x) + buf[:, :8]


def test_a_resized_storage_counts_its_new_size(quiet_gc):
    base = memory_allocated("cpu")
    reset_peak_memory_stats("cpu")
    model = _Resizes()
    x = gt.randn(4, 8)
    model(x).sum().backward()
    real = max_memory_allocated("cpu") - base
    e = estimate(model, (4, 8))
    assert e.activations_peak >= 4 * 1000 * 4
    assert e.peak == pytest.approx(real, rel=0.10)


def test_estimate_changes_nothing_outside_its_own_thread():
    """estimate works through modes of the calling thread: another thread's factories stay
    on the CPU, its tensors are not counted, and no mode is left behind."""
    import threading
    from glasstorch.utils import _python_dispatch
    seen = {}

    def elsewhere():
        seen["device"] = gt.arange(3).device.type
        seen["big"] = gt.zeros(1_000_000)       # 4 MB made meanwhile in another thread

    def loss_fn(out):
        worker = threading.Thread(target=elsewhere)
        worker.start()
        worker.join()
        seen["here"] = gt.arange(3).device.type
        return out.sum()
    alone = estimate(_mlp(), (4, 784), loss_fn=lambda out: out.sum())
    e = estimate(_mlp(), (4, 784), loss_fn=loss_fn)
    assert seen["device"] == "cpu" and seen["here"] == "meta"
    assert seen["big"].device.type == "cpu"
    assert e.peak == alone.peak
    assert _python_dispatch._get_current_dispatch_mode() is None


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_optimizer_fast_path_takes_fake_tensors(name):
    """The element-wise optimizers' in-place fast path tells a FakeTensor (which reports
    its fake device) by its data-less storage: a step on fakes only counts its writes, as
    PyTorch's step under FakeTensorMode does."""
    torch = pytest.importorskip("torch")
    kwargs = {"SGD": dict(lr=0.1, momentum=0.9), "Adam": {}, "AdamW": {}}[name]
    results = []
    for T in (gt, torch):
        with T._subclasses.fake_tensor.FakeTensorMode():
            lin = T.nn.Linear(4, 3)
            opt = getattr(T.optim, name)(lin.parameters(), **kwargs)
            for _ in range(2):
                opt.zero_grad()
                lin(T.randn(2, 4)).sum().backward()
                before = lin.weight._version
                opt.step()
            state = opt.state[lin.weight]
            results.append((lin.weight._version - before, type(lin.weight).__name__,
                            str(lin.weight.device),
                            {k: (type(v).__name__, tuple(v.shape)) for k, v in state.items()}))
    assert results[0] == results[1]
