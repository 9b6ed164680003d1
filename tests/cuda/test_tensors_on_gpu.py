"""Tensors on the GPU: copies both ways for every dtype and layout, ops through the shared,
bfloat16 and host paths, autograd, pinned memory, and device-mismatch errors. The CPU
result of the same call is the reference (itself tested against PyTorch elsewhere)."""
import warnings

import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same

DTYPES = [gt.float32, gt.float64, gt.float16, gt.bfloat16, gt.int64, gt.int32, gt.int16,
          gt.int8, gt.uint8, gt.bool, gt.complex64, gt.complex128]


def _sample(dtype, shape=(3, 5)):
    values = np.random.default_rng(0).normal(size=shape) * 4
    return gt.tensor(values).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_round_trip_keeps_values_dtype_shape_and_strides(dtype):
    host = _sample(dtype)
    gpu = host.to("cuda")
    assert gpu.device.type == "cuda" and gpu.dtype is dtype and gpu.stride() == host.stride()
    back = gpu.cpu()
    assert_same(back, host.numpy())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_strided_views_copy_by_position(dtype):
    host = _sample(dtype, (4, 6))
    for view in (host.t(), host[::2, 1::2], host[1], host.expand(2, 4, 6)[1]):
        assert_same(view.cuda().cpu(), view.contiguous().numpy())
    gpu = host.cuda()
    for view in (gpu.t(), gpu[::2, 1::2], gpu[:, 3]):
        expected = host.t() if view.dim() == 2 and view.shape == (6, 4) else None
        if expected is not None:
            assert_same(view.cpu(), expected.contiguous().numpy())


@pytest.mark.parametrize("src", DTYPES, ids=str)
@pytest.mark.parametrize("dst", [gt.float32, gt.bfloat16, gt.int32, gt.bool, gt.float16],
                         ids=str)
def test_casts_on_the_gpu_match_casts_on_the_cpu(src, dst):
    host = _sample(src)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")           # complex -> real warns on both
        expected = host.to(dst)
        assert_same(host.cuda().to(dst).cpu(), expected.numpy())
        assert_same(host.to("cuda", dst).cpu(), expected.numpy())


def test_copy_into_a_strided_gpu_tensor_broadcasts():
    gpu = gt.zeros(4, 6, device="cuda").t()
    gpu.copy_(gt.arange(4.0))
    assert_same(gpu.cpu(), np.broadcast_to(np.arange(4.0, dtype=np.float32), (6, 4)).copy())
    host = gt.zeros(6, 4)
    host.copy_(gpu)
    assert_same(host, np.broadcast_to(np.arange(4.0, dtype=np.float32), (6, 4)).copy())


def test_factories_on_the_gpu():
    assert_same(gt.zeros(2, 3, device="cuda").cpu(), np.zeros((2, 3), np.float32))
    assert_same(gt.full((2,), 7, device="cuda").cpu(), np.full(2, 7, np.int64))
    assert_same(gt.arange(5, device="cuda").cpu(), np.arange(5))
    assert_same(gt.eye(3, device="cuda").cpu(), np.eye(3, dtype=np.float32))
    assert_same(gt.tensor([[1.5, 2]], device="cuda").cpu(), np.array([[1.5, 2]], np.float32))
    assert gt.ones(2, dtype=gt.bfloat16, device="cuda").tolist() == [1.0, 1.0]


@pytest.mark.parametrize("fn", [
    lambda x, y: x + y * 2, lambda x, y: x @ y.t(), lambda x, y: (x * y).sum(1),
    lambda x, y: x.softmax(-1), lambda x, y: gt.where(x > 0, x, y),
    lambda x, y: x.max(1).values, lambda x, y: x.mean(), lambda x, y: gt.cat([x, y], 1),
    lambda x, y: x[:, 1:3].exp(), lambda x, y: gt.nn.functional.gelu(x),
    lambda x, y: gt.nn.functional.layer_norm(x, (5,)), lambda x, y: x.cumsum(0),
    lambda x, y: x.argmax(1), lambda x, y: (x < y).any(), lambda x, y: x.clamp(-1, 1),
])
@pytest.mark.parametrize("dtype", [gt.float32, gt.float64, gt.float16, gt.bfloat16], ids=str)
def test_ops_on_the_gpu_match_the_cpu(fn, dtype):
    x, y = _sample(dtype), _sample(dtype, (3, 5)).flip(0)
    expected = fn(x, y)
    got = fn(x.cuda(), y.cuda())
    assert got.device.type == "cuda" and got.dtype is expected.dtype
    assert got.shape == expected.shape
    tol = {gt.float16: 2e-3, gt.bfloat16: 1e-2}.get(dtype, 1e-5)
    np.testing.assert_allclose(got.cpu().double().numpy(), expected.double().numpy(),
                               rtol=tol, atol=tol)


def test_ops_without_a_gpu_kernel_run_on_the_host_and_say_so():
    from glasstorch.ops import gpu_kernels
    assert "linalg_qr" in gpu_kernels.host_fallback_ops()       # LAPACK stays on the host
    x = _sample(gt.float32)
    gpu_kernels._warned.discard("linalg_qr")
    with pytest.warns(UserWarning, match="'linalg_qr' has no CUDA kernel"):
        q, r = gt.linalg.qr(x.cuda())
    assert q.device.type == "cuda" and r.device.type == "cuda"
    assert type(gt.linalg.qr(x.cuda())) is type(gt.linalg.qr(x))    # a return_types tuple
    expected = gt.linalg.qr(x)
    assert_same(q.cpu(), expected.Q.numpy())
    assert_same(r.cpu(), expected.R.numpy())


def test_in_place_ops_through_the_host_path_write_the_gpu_tensor():
    # every in-place op has a GPU kernel by now: index_put_'s CPU kernel is sent down the
    # host path by hand
    from glasstorch.dispatch.keys import DispatchKey
    from glasstorch.ops import gpu_kernels
    from glasstorch.ops.indexing.subscripts import index_put_op
    op = index_put_op.functional
    host = gpu_kernels._host_operator(op, op.kernels[DispatchKey.CPU], "index_put_")
    x = _sample(gt.float32).cuda()
    index, values = gt.tensor([0, 2, 0]), gt.tensor([1.0, 2.0, 3.0])
    expected = x.cpu().index_put_((index,), values.reshape(3, 1), accumulate=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = host(x, (index.cuda(),), values.reshape(3, 1).cuda(), True)
    assert result is x
    assert_same(x.cpu(), expected.numpy())


def test_mixing_devices_raises_torchs_error():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        gt.ones(3, device="cuda") + gt.ones(3)
    # a CPU 0-dim tensor may join a GPU op, as in PyTorch
    assert_same((gt.ones(3, device="cuda") + gt.tensor(2.0)).cpu(), np.full(3, 3, np.float32))


def test_autograd_on_the_gpu_matches_the_cpu():
    gt.manual_seed(0)
    model = gt.nn.Sequential(gt.nn.Linear(5, 8), gt.nn.ReLU(), gt.nn.Linear(8, 3))
    x, target = _sample(gt.float32), gt.tensor([0, 2, 1])
    loss = gt.nn.functional.cross_entropy(model(x), target)
    loss.backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model.cuda()
    assert all(p.device.type == "cuda" for p in model.parameters())
    loss_gpu = gt.nn.functional.cross_entropy(model(x.cuda()), target.cuda())
    loss_gpu.backward()
    np.testing.assert_allclose(loss_gpu.item(), loss.item(), rtol=1e-5)
    for p, g in zip(model.parameters(), expected):
        assert p.grad.device.type == "cuda"
        np.testing.assert_allclose(p.grad.cpu().numpy(), g.numpy(), rtol=1e-4, atol=1e-6)


def test_an_optimizer_step_on_the_gpu_matches_the_cpu():
    gt.manual_seed(0)
    w = gt.randn(4, 3)
    results = []
    for device in ("cpu", "cuda"):
        p = gt.nn.Parameter(w.clone().to(device))
        opt = gt.optim.AdamW([p], lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
        results.append(p.detach().cpu().numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6, atol=1e-7)


def test_pinned_memory_and_non_blocking_copies():
    host = _sample(gt.float32)
    assert not host.is_pinned()
    pinned = host.pin_memory()
    assert pinned.is_pinned() and pinned.pin_memory() is pinned
    assert_same(pinned, host.numpy())
    gpu = pinned.to("cuda", non_blocking=True)
    back = gt.empty(3, 5).pin_memory()
    back.copy_(gpu, non_blocking=True)
    gt.cuda.synchronize()
    assert_same(back, host.numpy())
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        gpu.pin_memory()


def test_a_gpu_tensor_refuses_numpy():
    with pytest.raises(TypeError, match="Use Tensor.cpu"):
        gt.ones(2, device="cuda").numpy()


def test_save_and_load_a_gpu_tensor(tmp_path):
    x = _sample(gt.float32).cuda()
    gt.save(x, tmp_path / "x.pt")
    y = gt.load(tmp_path / "x.pt")
    assert_same(y.cpu(), x.cpu().numpy())


def test_autocast_and_grad_scaler_on_the_gpu():
    gt.manual_seed(0)
    model = gt.nn.Linear(8, 4).cuda()
    opt = gt.optim.SGD(model.parameters(), lr=0.1)
    scaler = gt.amp.GradScaler("cuda", init_scale=2.0 ** 8)
    x = gt.randn(16, 8, device="cuda")
    with gt.autocast("cuda"):
        y = model(x)
        loss = y.float().pow(2).mean()
    assert y.dtype is gt.float16 and y.device.type == "cuda"
    before = model.weight.detach().clone()
    scaler.scale(loss).backward()
    assert model.weight.grad.dtype is gt.float32
    scaler.step(opt)
    scaler.update()
    assert scaler.step_skipped is False
    assert not gt.equal(model.weight.detach(), before)
    # an inf gradient makes the scaler skip the step and halve the scale
    model.weight.grad = gt.full_like(model.weight, float("inf"))
    weight = model.weight.detach().clone()
    scale = scaler.get_scale()
    scaler.step(opt)
    scaler.update()
    assert scaler.step_skipped is True and scaler.get_scale() == scale / 2
    assert gt.equal(model.weight.detach(), weight)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gpu_tensors_print_like_cpu_tensors_with_their_device(dtype):
    host = _sample(dtype, (2, 3))
    shown = repr(host.cuda())
    assert "device='cuda:0'" in shown
    # the suffix may push `dtype=` onto the next line, as in PyTorch: compare words
    assert shown.replace(", device='cuda:0'", "").split() == repr(host).split()


def test_gradcheck_and_gradgradcheck_take_gpu_inputs():
    x = gt.randn(3, 4, dtype=gt.float64, device="cuda", requires_grad=True)
    w = gt.randn(4, 2, dtype=gt.float64, device="cuda", requires_grad=True)
    fn = lambda x, w: (x @ w).tanh().sum(0)       # noqa: E731
    assert gt.autograd.gradcheck(fn, (x, w))
    assert gt.autograd.gradgradcheck(fn, (x, w))


def test_non_blocking_copies_are_asynchronous_only_from_the_pinned_bytes(monkeypatch):
    # a copy that converts the dtype reads a temporary in pageable memory: it must not be
    # handed to the stream, which could read it after it is freed
    from glasstorch.backends.cuda import pinned
    uses = []
    monkeypatch.setattr(pinned, "record_use", lambda t, stream: uses.append(t))
    host = _sample(gt.float32).pin_memory()
    converted = host.to("cuda", gt.float64, non_blocking=True)
    assert uses == []
    same = host.to("cuda", non_blocking=True)
    assert len(uses) == 1
    gt.cuda.synchronize()
    assert_same(converted.cpu(), host.double().numpy())
    assert_same(same.cpu(), host.numpy())
