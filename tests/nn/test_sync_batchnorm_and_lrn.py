"""SyncBatchNorm (a world of one and no process group: BatchNorm; two ranks: the whole
batch's statistics), CrossMapLRN2d, nn.grad, nn.factory_kwargs and the functional helpers,
against PyTorch."""
import numpy as np
import pytest

import glasstorch as gt
import glasstorch.nn.functional as F

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)


def test_sync_batchnorm_without_a_process_group_is_batchnorm_as_torch():
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    for lib in (gt, torch):
        sync, plain = lib.nn.SyncBatchNorm(3), lib.nn.BatchNorm1d(3)
        for training in (True, False):
            sync.train(training), plain.train(training)
            np.testing.assert_allclose(sync(lib.tensor(x)).detach().numpy(),
                                       plain(lib.tensor(x)).detach().numpy(), rtol=1e-6)
        assert sync.num_batches_tracked.item() == 1
        with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
            sync(lib.ones(3))
        with pytest.raises(ValueError, match="number of input channels should be non-zero"):
            lib.nn.SyncBatchNorm(0)(lib.ones(2, 0))
    assert repr(gt.nn.SyncBatchNorm(3)) == repr(torch.nn.SyncBatchNorm(3))


def test_convert_sync_batchnorm_keeps_parameters_and_statistics():
    model = gt.nn.Sequential(gt.nn.Conv2d(2, 3, 1), gt.nn.BatchNorm2d(3), gt.nn.ReLU())
    model[1].running_mean.fill_(0.5)
    converted = gt.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(converted[1]) is gt.nn.SyncBatchNorm and converted[1].weight is model[1].weight
    assert converted[1].running_mean.tolist() == [0.5] * 3
    theirs = torch.nn.SyncBatchNorm.convert_sync_batchnorm(
        torch.nn.Sequential(torch.nn.Conv2d(2, 3, 1), torch.nn.BatchNorm2d(3), torch.nn.ReLU()))
    assert repr(converted) == repr(theirs)


def test_synchronized_statistics_in_a_world_of_one_equal_batchnorm():
    """The all-reducing Function itself (a world of one reduces to the identity) gives
    BatchNorm's training outputs, gradients and running statistics."""
    from glasstorch import distributed as dist
    from glasstorch.nn.modules.batchnorm import _SyncBatchNormFunction
    x, g = rng.standard_normal((6, 3, 4)), rng.standard_normal((6, 3, 4))
    plain = torch.nn.BatchNorm1d(3).double()
    mean, var = gt.zeros(3, dtype=gt.float64), gt.ones(3, dtype=gt.float64)
    weight = gt.tensor([0.5, 1.5, -1.0], dtype=gt.float64, requires_grad=True)
    bias = gt.tensor([0.1, 0.0, -0.2], dtype=gt.float64, requires_grad=True)
    with torch.no_grad():
        plain.weight.copy_(torch.tensor([0.5, 1.5, -1.0], dtype=torch.float64))
        plain.bias.copy_(torch.tensor([0.1, 0.0, -0.2], dtype=torch.float64))
    dist.init_process_group("gloo")
    try:
        ours_x = gt.tensor(x, requires_grad=True)
        out = _SyncBatchNormFunction.apply(ours_x, weight, bias, mean, var, 1e-5, 0.1, None)
        out.backward(gt.tensor(g))
    finally:
        dist.destroy_process_group()
    theirs_x = torch.tensor(x, requires_grad=True)
    expected = plain(theirs_x)
    expected.backward(torch.tensor(g))
    for ours, theirs in ((out, expected), (ours_x.grad, theirs_x.grad),
                         (weight.grad, plain.weight.grad), (bias.grad, plain.bias.grad),
                         (mean, plain.running_mean), (var, plain.running_var)):
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(),
                                   rtol=1e-10, atol=1e-12)


def test_sync_batchnorm_on_two_ranks_equals_batchnorm_on_the_whole_batch():
    from tests.distributed.test_distributed import HERE, _launch
    result = _launch(HERE / "two_ranks_sync_batchnorm.py")
    if "needs Open MPI's mpirun" in result.stderr:
        pytest.skip("two ranks need Open MPI's mpirun")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rank 0 syncbn ok" in result.stdout and "rank 1 syncbn ok" in result.stdout


@pytest.mark.parametrize("size, channels", [(2, 3), (3, 6), (5, 4), (4, 1)])
def test_cross_map_lrn2d_as_torch(size, channels):
    x, g = rng.standard_normal((2, channels, 3, 2)), rng.standard_normal((2, channels, 3, 2))
    results = []
    for lib in (gt, torch):
        t = lib.tensor(x, requires_grad=True)
        out = lib.nn.CrossMapLRN2d(size, 0.1, 0.75, 2)(t)
        out.backward(lib.tensor(g))
        results.append((out.detach().numpy(), t.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    assert repr(gt.nn.CrossMapLRN2d(3, 0.01)) == repr(torch.nn.CrossMapLRN2d(3, 0.01))
    for lib in (gt, torch):
        with pytest.raises(ValueError, match="Expected input to be 4D, got 3D instead"):
            lib.nn.CrossMapLRN2d(3)(lib.ones(2, 3, 4))


@pytest.mark.parametrize("dim, kwargs", [(1, dict(stride=2, padding=1)),
                                         (2, dict(dilation=2, groups=2)), (3, {})])
def test_nn_grad_matches_torch(dim, kwargs):
    groups = kwargs.get("groups", 1)
    x = rng.standard_normal((2, 4) + (7,) * dim)
    w = rng.standard_normal((6, 4 // groups) + (3,) * dim)
    out_shape = getattr(torch.nn.functional, f"conv{dim}d")(
        torch.tensor(x), torch.tensor(w), **kwargs).shape
    g = rng.standard_normal(tuple(out_shape))
    for kind in ("input", "weight"):
        ours = getattr(gt.nn.grad, f"conv{dim}d_{kind}")(
            x.shape if kind == "input" else gt.tensor(x),
            gt.tensor(w) if kind == "input" else w.shape, gt.tensor(g), **kwargs)
        theirs = getattr(torch.nn.grad, f"conv{dim}d_{kind}")(
            x.shape if kind == "input" else torch.tensor(x),
            torch.tensor(w) if kind == "input" else w.shape, torch.tensor(g), **kwargs)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-10)
    assert F.grad is gt.nn.grad


def test_factory_kwargs_and_functional_helpers_as_torch():
    for kwargs in (None, {"device": "cpu"}, {"dtype": 1, "factory_kwargs": {"device": "x"}}):
        assert gt.nn.factory_kwargs(kwargs) == torch.nn.factory_kwargs(kwargs)
    for bad, message in (({"size": 3}, "unexpected kwargs"),
                         ({"dtype": 1, "factory_kwargs": {"dtype": 2}}, "specified twice")):
        for lib in (gt, torch):
            with pytest.raises(TypeError, match=message):
                lib.nn.factory_kwargs(bad)
    for lib in (F, torch.nn.functional):
        pick = lib.boolean_dispatch("flag", 1, False, lambda a, flag=False: ("T", a),
                                    lambda a, flag=False: ("F", a), "mod", "pick")
        assert (pick(1), pick(1, True), pick(1, flag=True)) == (("F", 1), ("T", 1), ("T", 1))
        assert (pick.__name__, pick.__module__) == ("pick", "mod")
        lib.assert_int_or_pair(3, "k", "{} bad")
        lib.assert_int_or_pair((1, 2), "k", "{} bad")
        with pytest.raises(AssertionError, match="kernel_size must be int or pair"):
            lib.assert_int_or_pair([1, 2, 3], "kernel_size", "{} must be int or pair")
    t = gt.ones(2)
    assert not F.has_torch_function((t,)) and not F.has_torch_function_unary(t)
    assert not F.has_torch_function_variadic(t, t) and F.Tensor is gt.Tensor

    class Logged(gt.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return "handled"

    logged = t.as_subclass(Logged)
    assert F.has_torch_function_unary(logged)
    assert F.handle_torch_function(F.relu, (logged,), logged) == "handled"
