"""glasstorch._subclasses.fake_tensor side by side with PyTorch's: FakeTensors made by
factories and by from_tensor, their metadata and printing, ops and autograd on fakes, a
'cuda' model without a GPU, the exceptions for data-dependent ops, non-fake inputs."""
import pytest

import glasstorch as gt
from oracle import oracle_torch


def fake_module(T):
    if T is gt:
        from glasstorch._subclasses import fake_tensor
    else:
        from torch._subclasses import fake_tensor
    return fake_tensor


def meta_of(t):
    return (tuple(t.shape), t.stride(), str(t.dtype), str(t.device), t.requires_grad,
            type(t).__name__)


# Programs on device `dev`; the CPU build of PyTorch cannot run every one with 'cuda' fakes
# (autograd and copies ask the CUDA runtime), so each runs on 'cpu' in both libraries and on
# 'cuda' in glasstorch, whose results must then differ from the CPU ones only in the device.
PROGRAMS = {
    "factories": lambda T, dev: [T.ones(2, 3, device=dev), T.zeros(2, device=dev),
                                 T.arange(3, device=dev), T.empty(0, device=dev),
                                 T.randn(3, 3, requires_grad=True, device=dev),
                                 T.ones((), device=dev), T.full((2,), 7, device=dev),
                                 T.eye(2, 3, dtype=T.float64, device=dev)],
    "pointwise_and_views": lambda T, dev: (lambda x: [x * 2, x.t(), x.t().contiguous(),
                                                      x[:, 1:], x.sum(1), x.to(T.float16),
                                                      x.unsqueeze(0).expand(4, 2, 3)])(
        T.ones(2, 3, device=dev)),
    "cpu_scalar_joins": lambda T, dev: [T.zeros(3, device=dev) + T.ones(())],
    "matmul_conv": lambda T, dev: [T.randn(4, 5, device=dev) @ T.randn(5, 6, device=dev),
                                   T.nn.functional.conv2d(T.randn(2, 3, 8, 8, device=dev),
                                                          T.randn(4, 3, 3, 3, device=dev),
                                                          stride=2, padding=1)],
    "like_and_new": lambda T, dev: (lambda x: [T.zeros_like(x), T.empty_like(x),
                                               x.new_ones(4), T.rand_like(x)])(
        T.ones(2, 3, device=dev)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_fake_results_have_torchs_metadata(name):
    torch = oracle_torch()
    results = {}
    for T, dev in ((gt, "cpu"), (torch, "cpu"), (gt, "cuda")):
        with fake_module(T).FakeTensorMode():
            results[T, dev] = [meta_of(t) for t in PROGRAMS[name](T, dev)]
    assert results[gt, "cpu"] == results[torch, "cpu"]
    on_cuda = results[gt, "cuda"]
    assert {m[3] for m in on_cuda} == {"cuda:0"}
    assert [m[:3] + m[4:] for m in on_cuda] == [m[:3] + m[4:] for m in results[gt, "cpu"]]


def test_to_and_cpu_change_only_the_fake_device():
    with gt._subclasses.FakeTensorMode():
        x = gt.ones(2, 3)
        assert str(x.cuda().device) == "cuda:0" and str(x.to("cuda:1").device) == "cuda:1"
        assert str(x.cuda().cpu().device) == "cpu"
        assert str(gt.empty_like(x.cuda(), device="cpu").device) == "cpu"


def test_printing_matches_torch():
    torch = oracle_torch()
    texts = {}
    for T in (gt, torch):
        with fake_module(T).FakeTensorMode():
            w = T.ones(3, 3, requires_grad=True)
            texts[T] = [repr(T.ones(2, 3)), repr(T.zeros(2, device="cuda")), repr(T.arange(3)),
                        repr(w), repr(w.sum()), str(T.ones(2, dtype=T.float16))]
    assert texts[gt] == texts[torch]
    assert texts[gt][:2] == ["FakeTensor(..., size=(2, 3))",
                             "FakeTensor(..., device='cuda:0', size=(2,))"]


def test_fake_device_and_mode(T):
    mode = fake_module(T).FakeTensorMode()
    with mode:
        x = T.ones(2, device="cuda")
    assert isinstance(x, fake_module(T).FakeTensor)
    assert x.fake_mode is mode and str(x.fake_device) == "cuda:0" and x.is_cuda
    assert x.get_device() == 0 and str(x.device) == "cuda:0"


def test_public_names(T):
    assert T._subclasses.FakeTensorMode is fake_module(T).FakeTensorMode
    assert T._subclasses.FakeTensor is fake_module(T).FakeTensor
    for name in ("UnsupportedOperatorException", "DataDependentOutputException",
                 "DynamicOutputShapeException", "UnsupportedFakeTensorException"):
        assert issubclass(getattr(fake_module(T), name), RuntimeError)


def test_from_tensor_is_memoized_and_keeps_metadata(T):
    mode = fake_module(T).FakeTensorMode()
    real = T.ones(4, 6)[:, ::2]
    leaf = T.ones(3, requires_grad=True)
    fake = mode.from_tensor(real)
    assert fake is mode.from_tensor(real)
    assert meta_of(fake)[:5] == meta_of(real)[:5]
    assert fake.storage_offset() == real.storage_offset()
    assert mode.from_tensor(leaf).requires_grad
    with mode:
        assert tuple((fake * 2).shape) == (4, 3)


def test_backward_on_fakes_gives_fake_grads(T):
    with fake_module(T).FakeTensorMode():
        w = T.randn(3, 4, requires_grad=True)
        x = T.randn(2, 3)
        loss = (x @ w).relu().sum()
        assert loss.grad_fn is not None
        loss.backward()
    assert isinstance(w.grad, fake_module(T).FakeTensor)
    assert tuple(w.grad.shape) == (3, 4) and w.grad.requires_grad is False


def train_step(T, dev):
    model = T.nn.Sequential(T.nn.Conv2d(3, 8, 3, padding=1), T.nn.ReLU(), T.nn.Flatten(),
                            T.nn.Linear(8 * 8 * 8, 10))
    if dev != "cpu":
        model = model.to(dev)
    opt = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    out = model(T.randn(4, 3, 8, 8, device=dev))
    loss = T.nn.functional.cross_entropy(out, T.randint(0, 10, (4,), device=dev))
    loss.backward()
    opt.step()
    return model, [meta_of(out), meta_of(loss)] + [
        (meta_of(p), meta_of(p.grad)) for p in model.parameters()]


def test_a_model_trains_a_step_on_fakes_as_in_torch():
    torch = oracle_torch()
    results = {}
    for T in (gt, torch):
        with fake_module(T).FakeTensorMode():
            model, results[T] = train_step(T, "cpu")
        assert all(isinstance(p, T.nn.Parameter) for p in model.parameters())
    assert results[gt] == results[torch]


def test_a_cuda_model_trains_a_step_without_a_gpu():
    with gt._subclasses.FakeTensorMode():
        model, cuda = train_step(gt, "cuda")
        _, cpu = train_step(gt, "cpu")
    assert all(p.is_cuda and p.grad.is_cuda for p in model.parameters())
    assert str(cuda).replace("cuda:0", "cpu") == str(cpu)


def test_data_dependent_ops_raise_torchs_exceptions(T):
    fake = fake_module(T)
    with fake.FakeTensorMode():
        x = T.ones(2, 3)
        with pytest.raises(fake.DataDependentOutputException):
            x.sum().item()
        with pytest.raises(fake.DynamicOutputShapeException):
            T.nonzero(x)


def test_device_mismatch_raises(T):
    with fake_module(T).FakeTensorMode():
        with pytest.raises(RuntimeError, match="same device"):
            T.ones(2, 3) + T.zeros(3, device="cuda")


def test_op_without_meta_kernel_is_unsupported():
    from glasstorch._subclasses.fake_tensor import UnsupportedOperatorException
    with gt.library._scoped_library("fakeonly", "DEF") as lib:
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CPU")
        with gt._subclasses.FakeTensorMode():
            x = gt.ones(2)
            with pytest.raises(UnsupportedOperatorException, match="fakeonly.twice.default"):
                gt.ops.fakeonly.twice(x)


def test_non_fake_inputs_are_refused_unless_allowed(T):
    fake = fake_module(T)
    real = T.ones(2)
    with fake.FakeTensorMode():
        with pytest.raises(AssertionError, match="allow_non_fake_inputs"):
            real + 1
    mode = fake.FakeTensorMode(allow_non_fake_inputs=True)
    with mode:
        out = real + 1
    assert isinstance(out, fake.FakeTensor) and out.fake_mode is mode


def test_a_real_tensor_beside_a_fake_one_is_refused_by_the_mode(T):
    """A real CPU tensor and a fake one hold two backends but one device: the mode, not a
    device check, answers (PyTorch's error, not a bare StopIteration)."""
    fake = fake_module(T)
    weight = T.randn(10, 4)
    with fake.FakeTensorMode():
        index = T.tensor([1, 2])
        with pytest.raises(AssertionError, match="allow_non_fake_inputs"):
            T.nn.functional.embedding(index, weight)
        with pytest.raises(AssertionError, match="allow_non_fake_inputs"):
            weight + T.ones(10, 4)
    with fake.FakeTensorMode(allow_non_fake_inputs=True):
        assert tuple(T.nn.functional.embedding(T.tensor([1, 2]), weight).shape) == (2, 4)


def test_inplace_ops_keep_the_fake_and_bump_its_version(T):
    with fake_module(T).FakeTensorMode():
        x = T.zeros(2, 3, device="cuda")
        v = x._version
        y = x.add_(1)
        assert y is x and x._version == v + 1
        x.resize_(4, 5)
        assert tuple(x.shape) == (4, 5) and str(x.device) == "cuda:0"


def test_constants_from_data_become_fakes(T):
    fake = fake_module(T)
    with fake.FakeTensorMode() as mode:
        target = T.tensor([1, 7])
        moved = T.tensor([[1.0, 2.0]], device="cuda")
        assert isinstance(target, fake.FakeTensor) and target.fake_mode is mode
        assert str(moved.device) == "cuda:0" and tuple(moved.shape) == (1, 2)
        assert tuple((T.ones(2, 2) + target).shape) == (2, 2)
