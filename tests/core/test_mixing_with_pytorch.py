"""A tensor of the real PyTorch handed to glasstorch (or the reverse) gets a TypeError that
says how to convert it, instead of the two __torch_function__ handlers bouncing the call
between them until RecursionError."""
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")

GLASSTORCH_CALLS = [lambda: gt.add(torch.ones(2), torch.ones(2)),
                    lambda: gt.ones(2) + torch.ones(2),
                    lambda: torch.ones(2) * gt.ones(2),
                    lambda: gt.nn.functional.relu(torch.ones(2)),
                    lambda: gt.nn.Linear(2, 2)(torch.ones(2)),
                    lambda: gt.cat([gt.ones(2), torch.ones(2)])]
PYTORCH_CALLS = [lambda: torch.add(torch.ones(2), gt.ones(2)),
                 lambda: torch.nn.functional.relu(gt.ones(2)),
                 lambda: torch.nn.Linear(2, 2)(gt.ones(2))]


@pytest.mark.parametrize("call", GLASSTORCH_CALLS)
def test_pytorch_tensors_in_glasstorch_calls_are_refused_clearly(call):
    with pytest.raises(TypeError, match="tensor of the real PyTorch .* glasstorch.from_dlpack"):
        call()


@pytest.mark.parametrize("call", PYTORCH_CALLS)
def test_glasstorch_tensors_in_pytorch_calls_are_refused_clearly(call):
    with pytest.raises(TypeError, match="got a glasstorch tensor.*torch.from_dlpack"):
        call()


def test_converted_tensors_work_both_ways():
    t = torch.arange(3.0)
    g = gt.from_dlpack(t) * 2
    assert g.tolist() == [0.0, 2.0, 4.0]
    assert torch.from_dlpack(g).tolist() == [0.0, 2.0, 4.0]
