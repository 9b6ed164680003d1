"""The elementwise, activation, loss, normalization and special-function kernels on CuPy
arrays (the "shared" path): what the OpInfo walk in test_op_db_cuda.py does not reach.
Kernels that make their own outputs, GPU-only code paths (scans and scatter rounds where
CuPy lacks a ufunc method), CPU scalar tensors beside GPU tensors, and that large GPU
arrays are never split across CPU threads. The CPU result of the same call is the
reference (itself tested against PyTorch elsewhere)."""
import warnings

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.backends.cpu import parallel
from glasstorch.ops import gpu_kernels
from glasstorch.ops.nn.activation import threshold_backward
from oracle import assert_same


def _no_host_path():
    """Turn the host path's "ran on the CPU" notice into an error."""
    warnings.filterwarnings("error", message=".*has no CUDA kernel.*")


def test_one_hot_runs_on_the_gpu():
    labels = gt.tensor([[0, 3, 1], [2, 2, 0]])
    with warnings.catch_warnings():
        _no_host_path()
        got = gt.nn.functional.one_hot(labels.cuda(), 5)
    assert got.device.type == "cuda"
    assert_same(got.cpu(), gt.nn.functional.one_hot(labels, 5).numpy())


def test_native_dropout_runs_on_the_gpu():
    x = gt.arange(1.0, 201.0).reshape(10, 20)
    with warnings.catch_warnings():
        _no_host_path()
        out, mask = gt.native_dropout(x.cuda(), 0.25, True)
    assert out.device.type == mask.device.type == "cuda" and mask.dtype is gt.bool
    m = mask.cpu().numpy()
    assert 0 < m.sum() < m.size
    assert_same(out.cpu(), np.where(m, x.numpy() / np.float32(0.75), 0).astype(np.float32))
    out, mask = gt.native_dropout(x.cuda(), 0.25, False)
    assert_same(out.cpu(), x.numpy())
    assert bool(mask.all())


def test_embedding_max_norm_renormalizes_the_gpu_weight_in_place():
    weight = gt.tensor(np.random.default_rng(1).normal(size=(6, 3)) * 3, dtype=gt.float32)
    indices = gt.tensor([4, 1, 4, 0])
    gpu_weight = weight.cuda()
    with warnings.catch_warnings():
        _no_host_path()
        got = gt.nn.functional.embedding(indices.cuda(), gpu_weight, max_norm=1.5)
    expected = gt.nn.functional.embedding(indices, weight, max_norm=1.5)
    assert_same(got.cpu(), expected.numpy())
    assert_same(gpu_weight.cpu(), weight.numpy())       # both renormed rows 0, 1 and 4


@pytest.mark.parametrize("n", [1, 2, 37])
def test_cummax_cummin_scan_on_the_gpu(n):
    rng = np.random.default_rng(n)
    values = rng.integers(-3, 4, size=(3, n)).astype(np.float32)
    if n > 2:
        values[1, n // 2] = np.nan
    x = gt.tensor(values)
    for op in (gt.cummax, gt.cummin):
        for dim in (0, 1):
            got, expected = op(x.cuda(), dim), op(x, dim)
            assert_same(got.values.cpu(), expected.values.numpy())
            assert_same(got.indices.cpu(), expected.indices.numpy())


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_with_repeated_indices_on_the_gpu(reduce, include_self):
    rng = np.random.default_rng(2)
    x = gt.tensor(rng.normal(size=(5, 3)), dtype=gt.float32)
    source = gt.tensor(rng.normal(size=(7, 3)), dtype=gt.float32)
    index = gt.tensor([1, 3, 1, 1, 0, 3, 1])
    got = x.cuda().index_reduce(0, index.cuda(), source.cuda(), reduce,
                                include_self=include_self)
    expected = x.index_reduce(0, index, source, reduce, include_self=include_self)
    np.testing.assert_allclose(got.cpu().numpy(), expected.numpy(), rtol=1e-6)


def test_cpu_scalar_tensors_beside_gpu_tensors():
    """A 0-dim CPU tensor may join GPU operands; kernels hand it to CuPy as a NumPy scalar."""
    x = gt.tensor([[-2.5, 0.5, 3.0], [1.0, -0.25, 7.0]])
    lo, hi, d = gt.tensor(-1.0), gt.tensor(2.0), gt.tensor(0.75)
    for fn in (lambda a: gt.clamp(a, lo, hi), lambda a: gt.remainder(a, d),
               lambda a: gt.xlogy(a, d), lambda a: gt.addcmul(a, a, d),
               lambda a: gt.special.zeta(a.abs() + 1.5, d + 1)):
        got = fn(x.cuda())
        assert got.device.type == "cuda"
        assert_same(got.cpu(), fn(x).numpy())


def test_large_gpu_arrays_are_one_call_not_split_across_threads(monkeypatch):
    x = gt.arange(-32.0, 32.0).reshape(8, 8)
    fns = (lambda a: a + a.t(), gt.nn.functional.gelu, lambda a: gt.softmax(a, 1),
           lambda a: threshold_backward.function(a, a.t(), 0.5))
    expected = [fn(x).numpy() for fn in fns]

    def split(*args, **kwargs):
        raise AssertionError("a GPU array went through the CPU thread pool")
    monkeypatch.setattr(parallel, "GRAIN", 4)
    monkeypatch.setattr(parallel, "parallel_for", split)
    for fn, e in zip(fns, expected):
        assert_same(fn(x.cuda()).cpu(), e)


def test_special_functions_of_broadcast_gpu_operands():
    """Broadcast temporaries of several arrays (from the caching allocator) stay alive."""
    x = gt.tensor([[-1.5], [0.25], [3.0]])
    n = gt.tensor([0.0, 2.0, 5.0, 9.0])
    got = gt.special.legendre_polynomial_p(x.cuda(), n.cuda())
    assert_same(got.cpu(), gt.special.legendre_polynomial_p(x, n).numpy())
    a = gt.tensor([[0.5], [2.0], [7.5]])
    assert_same(gt.igamma(a.cuda(), n.cuda() + 0.5).cpu(), gt.igamma(a, n + 0.5).numpy())


def test_ops_left_on_the_host_say_why_in_their_declarations():
    host = set(gpu_kernels.host_fallback_ops())
    for name in ("special_airy_ai", "nextafter", "_ctc_loss", "_ctc_loss_backward",
                 "_embedding_bag"):
        assert name in host
    for name in ("native_dropout", "one_hot", "embedding_renorm_", "cummax", "index_reduce",
                 "special_zeta", "igamma", "erfinv", "lgamma"):
        assert name not in host
