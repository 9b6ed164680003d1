"""torch.autograd.graph.saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks,
against PyTorch: which tensors are packed, in which grad mode, what backward gets."""
import pytest

import glasstorch

torch = pytest.importorskip("torch")


def _packing_log(lib):
    a = lib.tensor([0.5, 1.0, 2.0], requires_grad=True)
    b = lib.tensor([1.5, -1.0, 3.0], requires_grad=True)
    log = []

    def pack(x):
        log.append(("pack", tuple(x.shape), x.requires_grad, lib.is_grad_enabled()))
        return ("boxed", x.clone())

    def unpack(packed):
        log.append(("unpack", packed[0]))
        return packed[1]

    with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (a * b).sin().sum()
    y.backward()
    return log, a.grad.tolist(), b.grad.tolist()


def test_every_saved_tensor_goes_through_pack_and_unpack_as_in_pytorch():
    ours, theirs = _packing_log(glasstorch), _packing_log(torch)
    assert ours[0] == theirs[0]
    assert ours[1] == pytest.approx(theirs[1]) and ours[2] == pytest.approx(theirs[2])


def test_what_unpack_returns_is_what_backward_uses():
    x = glasstorch.tensor([1.0, 2.0], requires_grad=True)
    with glasstorch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 0 + 10):
        y = (x * x).sum()                    # d/dx = 2x, computed from the unpacked x = 10
    y.backward()
    assert x.grad.tolist() == [20.0, 20.0]


def test_unpack_must_give_a_tensor_and_hooks_can_be_disabled():
    for lib in (glasstorch, torch):
        x = lib.ones(2, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: 1, lambda p: p):
            y = x.exp().sum()
        with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
            y.backward()
        with lib.autograd.graph.disable_saved_tensors_hooks("not while exporting"):
            with pytest.raises(RuntimeError, match="not while exporting"):
                with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass


def test_a_hooked_tensor_changed_in_place_still_fails_backward():
    x = glasstorch.ones(3, requires_grad=True)
    h = x * 2
    with glasstorch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = (h * h).sum()
    with glasstorch.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_save_on_cpu_gives_eager_gradients():
    glasstorch.manual_seed(0)
    lin = glasstorch.nn.Linear(4, 3)
    x = glasstorch.randn(5, 4)
    with glasstorch.autograd.graph.save_on_cpu():
        lin(x).tanh().sum().backward()
    hooked = lin.weight.grad.clone()
    lin.weight.grad = None
    lin(x).tanh().sum().backward()
    assert glasstorch.equal(hooked, lin.weight.grad)
