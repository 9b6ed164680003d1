"""torch.autograd.Variable / variable and the engine's flag context managers, as PyTorch's."""
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")


def test_variable_as_torch():
    for lib in (gt, torch):
        t = lib.ones(2)
        v = lib.autograd.Variable(t, requires_grad=True)
        assert v is not t and v.requires_grad and not t.requires_grad
        assert isinstance(t, lib.autograd.Variable) and type(v) is lib.Tensor
        v.detach()[0] = 5
        assert t[0].item() == 5                      # the same memory
        assert not isinstance(3, lib.autograd.Variable)
        with pytest.raises(RuntimeError, match=r"torch.autograd.variable\(...\) is deprecated"):
            lib.autograd.variable(1)


@pytest.mark.parametrize("name", ["set_multithreading_enabled", "enforce_grad_layout_policy"])
def test_engine_flags_are_context_managers_and_decorators(name):
    from glasstorch.autograd.grad_mode import engine_flags
    attribute = {"set_multithreading_enabled": "multithreading",
                 "enforce_grad_layout_policy": "grad_layout_enforced"}[name]
    manager = getattr(gt.autograd, name)
    with manager(False):
        assert getattr(engine_flags, attribute) is False
        x = gt.ones(2, requires_grad=True)
        (x * 2).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]
    assert getattr(engine_flags, attribute) is True
    manager(False)                       # called, not entered: set now, as PyTorch's
    assert getattr(engine_flags, attribute) is False
    manager(True)
    assert getattr(engine_flags, attribute) is True
    with getattr(torch.autograd, name)(False):
        pass
