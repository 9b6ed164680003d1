"""Behaviours found different from PyTorch by running PyTorch programs, each against PyTorch."""
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")


def test_autocast_has_device_and_fast_dtype():
    for lib in (gt, torch):
        a = lib.autocast("cpu")
        assert a.device == "cpu" and a.fast_dtype == lib.bfloat16
        assert lib.autocast("cpu", dtype=lib.float16).fast_dtype == lib.float16


def test_retain_grad_without_requires_grad_raises():
    for lib in (gt, torch):
        with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has "
                                               "requires_grad=False"):
            lib.ones(2).retain_grad()
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.sum().backward()
        assert y.grad.tolist() == [1.0, 1.0]


def test_views_taken_under_no_grad_keep_requires_grad():
    results = []
    for lib in (gt, torch):
        x = lib.ones(2, 3, requires_grad=True)
        with lib.no_grad():
            views = (x.view(3, 2), x[0], x.t(), x.unbind(0)[1])
        results.append([(v.requires_grad, v.is_leaf, v.grad_fn is None) for v in views])
        with lib.no_grad():
            y = x.view(6)
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
            y.mul_(2)
    assert results[0] == results[1]


@pytest.mark.parametrize("make", [
    lambda lib: lib.zeros(2, dtype=lib.long, requires_grad=True),
    lambda lib: lib.tensor([1, 2], requires_grad=True),
    lambda lib: lib.arange(3, requires_grad=True),
    lambda lib: lib.full((2,), 3, requires_grad=True),
    lambda lib: lib.randint(0, 3, (2,), requires_grad=True)])
def test_integer_factories_refuse_requires_grad(make):
    for lib in (gt, torch):
        with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex "
                                               "dtype can require gradients$"):
            make(lib)


def test_distributed_sampler_needs_a_process_group():
    for lib in (gt, torch):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            lib.utils.data.DistributedSampler(list(range(10)))
        sampler = lib.utils.data.DistributedSampler(list(range(10)), num_replicas=2, rank=0,
                                                   shuffle=False)
        assert list(sampler) == [0, 2, 4, 6, 8]
