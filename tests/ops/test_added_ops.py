"""Ops added for PyTorch's operator database, against PyTorch beyond OpInfo's samples:
gradient's spacings and errors, segment_reduce's empty segments and batched lengths,
_chunk_cat, conv_tbc and slice_inverse (values, gradients, errors)."""
import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)


def _close(ours, theirs):
    assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10,
                               atol=1e-12, equal_nan=True)


def _run(f, *arrays, grad=True):
    """f in both libraries on float64 copies of arrays; outputs and input gradients agree."""
    ours = [gt.tensor(a, requires_grad=grad) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad) for a in arrays]
    a, b = f(gt, *ours), f(torch, *theirs)
    a, b = (a if isinstance(a, tuple) else (a,)), (b if isinstance(b, tuple) else (b,))
    for x, y in zip(a, b):
        _close(x, y)
    if grad:
        w = [RNG.standard_normal(tuple(y.shape)) for y in b]
        sum((x * gt.tensor(v)).sum() for x, v in zip(a, w)).backward()
        sum((y * torch.tensor(v)).sum() for y, v in zip(b, w)).backward()
        for x, y in zip(ours, theirs):
            _close(x.grad, y.grad)


COORDS = np.array([0.0, 0.5, 2.0, 2.5, 4.0])


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("kw", [{}, {"spacing": 0.25}, {"dim": 1, "coords": True},
                                {"dim": (0, 1), "spacing": [2.0, 3.0]}, {"dim": -1}])
def test_gradient(kw, edge_order):
    kw = dict(kw)
    coords = kw.pop("coords", False)

    def f(L, x):
        extra = {"spacing": (L.tensor(COORDS),)} if coords else {}
        return L.gradient(x, edge_order=edge_order, **kw, **extra)
    _run(f, RNG.standard_normal((4, 5)))


def test_gradient_errors():
    for lib in (gt, torch):
        x = lib.ones(2, 3)
        for call, message in [
                (lambda: lib.gradient(lib.ones(2), edge_order=2), "at least edge_order\\+1"),
                (lambda: lib.gradient(x, edge_order=3), "only supports edge_order=1 and"),
                (lambda: lib.gradient(x, spacing=[1, 2, 3]), "a list of length equal to"),
                (lambda: lib.gradient(x, dim=(0, 0)), "appears multiple times")]:
            with pytest.raises(RuntimeError, match=message):
                call()
    assert gt.gradient(gt.tensor([1, 2, 4]))[0].dtype == gt.float32     # integers: floats


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("initial", [None, 1.5])
def test_segment_reduce(reduce, initial):
    lengths = [1, 0, 3, 2]
    _run(lambda L, d: L.segment_reduce(d, reduce, lengths=L.tensor(lengths), initial=initial),
         RNG.standard_normal((6, 2)), grad=reduce in ("sum", "mean"))
    offsets = [[0, 2, 2, 6], [0, 1, 4, 6]]                 # batched along axis=1
    _run(lambda L, d: L.segment_reduce(d, reduce, offsets=L.tensor(offsets), axis=1,
                                       initial=initial),
         RNG.standard_normal((2, 6, 3)), grad=reduce in ("sum", "mean"))


def test_segment_reduce_errors():
    for lib in (gt, torch):
        d = lib.ones(5)
        with pytest.raises(RuntimeError, match="to sum to data.size"):
            lib.segment_reduce(d, "sum", lengths=lib.tensor([1, 1]))
        with pytest.raises(RuntimeError, match="reduce argument must be either"):
            lib.segment_reduce(d, "foo", lengths=lib.tensor([5]))


def test_chunk_cat():
    shapes = [(3, 3, 2, 1), (1, 4, 2, 2), (2, 1, 3, 3)]
    _run(lambda L, *ts: L._chunk_cat(list(ts), 0, 2), *[RNG.standard_normal(s) for s in shapes],
         grad=False)                                    # PyTorch has no derivative for it
    _run(lambda L, a, b: L._chunk_cat([a, b], -1, 5), RNG.standard_normal((2, 7)),
         RNG.standard_normal((2, 3)), grad=False)
    for lib in (gt, torch):
        with pytest.raises(RuntimeError, match="expects positive num_chunks"):
            lib._chunk_cat([lib.ones(2)], 0, 0)
        with pytest.raises(RuntimeError, match="same sizes of 0,...,dim-1"):
            lib._chunk_cat([lib.ones(2, 3), lib.ones(3, 3)], 1, 2)


def test_conv_tbc():
    _run(lambda L, x, w, b: L.conv_tbc(x, w, b, 1), RNG.standard_normal((6, 2, 3)),
         RNG.standard_normal((3, 3, 4)), RNG.standard_normal(4))
    for lib in (gt, torch):
        with pytest.raises(RuntimeError, match="Input dim 2 \\(input channels\\) is not =="):
            lib.conv_tbc(lib.ones(5, 2, 3), lib.ones(2, 4, 4), lib.ones(4))
        with pytest.raises(RuntimeError, match="Input must have 3 dims"):
            lib.conv_tbc(lib.ones(5, 2), lib.ones(2, 4, 4), lib.ones(4))


def test_slice_inverse_is_a_view_of_the_base():
    base = gt.arange(10.0)
    whole = gt.slice_inverse(base[2:5], base, 0, 2, 5)
    assert whole._base is base and whole.tolist() == base.tolist()
    _run(lambda L, x: L.slice_inverse(x[1:3], x, 0, 1, 3), RNG.standard_normal((4, 3)),
         grad=False)       # glasstorch's gradient reaches only the slice (see docs/25)


def test_binomial():
    count, prob = gt.full((4000,), 30.0), gt.full((4000,), 0.3)
    gt.manual_seed(1)
    draws = gt.binomial(count, prob)
    gt.manual_seed(1)
    assert gt.equal(draws, gt.binomial(count, prob))          # a seeded run repeats
    assert abs(draws.mean().item() - 9.0) < 0.25 and abs(draws.var().item() - 6.3) < 0.7
    assert bool((draws == draws.round()).all()) and draws.min() >= 0 and draws.max() <= 30
    # PyTorch's rules at the edges, and broadcasting
    for lib in (gt, torch):
        edges = lib.binomial(lib.tensor([10.0, -5.0, 7.0, 3.0]), lib.tensor([1.5, 1.2, 0.0, 1.0]))
        assert edges.tolist() == [10.0, 0.0, 0.0, 3.0]
        assert tuple(lib.binomial(lib.ones(1, 3), lib.full((2, 1), 0.5)).shape) == (2, 3)
        with pytest.raises(ValueError, match="only supports floating-point dtypes for count"):
            lib.binomial(lib.tensor([10]), lib.tensor([0.5]))
        with pytest.raises(RuntimeError, match="Found dtype Float but expected Double"):
            lib.binomial(lib.ones(2, dtype=lib.float64), lib.ones(2))


def test_the_other_namespaces_name_the_same_objects_as_pytorch():
    assert (torch.nn.functional.conv_tbc is torch.conv_tbc) and (torch.fft.Tensor is torch.Tensor)
    assert gt.nn.functional.conv_tbc is gt.conv_tbc
    assert gt.fft.Tensor is gt.Tensor and "Tensor" in gt.fft.__all__


@pytest.mark.parametrize("name", ["empty", "zeros", "ones", "rand", "randn"])
def test_factories_take_size_as_a_keyword(name):
    """pytorch/examples' gat calls torch.empty(size=(...)), as PyTorch allows."""
    assert tuple(getattr(gt, name)(size=(2, 3)).shape) == tuple(getattr(torch, name)(size=(2, 3)).shape)
    with pytest.raises(TypeError):
        getattr(gt, name)(2, size=(3,))
