"""gather/scatter/index_*/put/take_along_dim/masked_scatter against PyTorch: values, dtypes,
shapes, strides, in-place and out= forms, errors, and gradients (vs torch and gradcheck)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import glasstorch as gt
from tests.oracle import assert_same, oracle_torch

torch = oracle_torch()
rng = np.random.default_rng(1234)

X = rng.standard_normal((3, 4))
IDX = np.array([[0, 1, 2], [2, 0, 0]])


def _pair(a):
    return gt.tensor(a), torch.tensor(a)


def check(fn, *arrays, **kw):
    """fn(module, *tensors) on glasstorch and on torch, compared (values, dtype, strides)."""
    g_args, t_args = zip(*(_pair(a) for a in arrays)) if arrays else ((), ())
    expected = fn(torch, *t_args)
    actual = fn(gt, *g_args)
    if isinstance(expected, tuple):
        for a, e in zip(actual, expected):
            assert_same(a, e, **kw)
    else:
        assert_same(actual, expected, **kw)
    return actual


# ---- forward values ----------------------------------------------------------------------

FORWARD = {
    "gather": lambda m, x: x.gather(1, m.tensor(IDX)[:, :2]),
    "gather_dim0_int32": lambda m, x: m.gather(x, 0, m.tensor(IDX, dtype=m.int32)),
    "gather_neg_dim": lambda m, x: x.gather(-1, m.tensor([[3], [0], [1]])),
    "gather_transposed": lambda m, x: x.t().gather(0, m.tensor(IDX).t()),
    "gather_strided_index": lambda m, x: x.gather(0, m.tensor(np.tile(IDX, (2, 2)))[::2, ::3]),
    "gather_empty": lambda m, x: x.gather(0, m.zeros(0, 7, dtype=m.int64)),
    "gather_0dim": lambda m, x: x[0, 0].gather(0, m.tensor([0, 0])),
    "gather_0dim_index": lambda m, x: x[0, 0].gather(0, m.tensor(0)),
    "gather_bf16_sparse_grad": lambda m, x: x.bfloat16().gather(1, m.tensor(IDX),
                                                                sparse_grad=True),
    "scatter_src": lambda m, x: x.scatter(0, m.tensor([[0, 1, 2], [2, 0, 1]]), x * 10),
    "scatter_value": lambda m, x: x.scatter(1, m.tensor(IDX), 2.5),
    "scatter_value_kw": lambda m, x: m.scatter(x, 1, m.tensor(IDX), value=-1.0),
    "scatter_int_value": lambda m, x: (x * 10).long().scatter(1, m.tensor(IDX), 2.7),
    "scatter_add_value": lambda m, x: x.scatter(0, m.tensor(IDX), 2.0, reduce="add"),
    "scatter_mul_value": lambda m, x: x.scatter(0, m.tensor(IDX), 3.0, reduce="multiply"),
    "scatter_transposed": lambda m, x: x.t().scatter(1, m.tensor(IDX).t(), x.t() + 1),
    "scatter_0dim": lambda m, x: x[1, 1].scatter(0, m.tensor(0), x[0, 0]),
    "scatter_empty_index": lambda m, x: x.scatter(0, m.zeros(0, 9, dtype=m.int64), 1.0),
    "scatter_add": lambda m, x: x.scatter_add(0, m.tensor(IDX), x[::2, 1:]),
    "scatter_add_int": lambda m, x: (x * 10).long().scatter_add(1, m.tensor(IDX),
                                                                (x * 3).long()),
    "scatter_add_bool": lambda m, x: (x > 0).scatter_add(0, m.tensor(IDX), x < 0),
    "scatter_add_half": lambda m, x: x.half().scatter_add(0, m.tensor(IDX), x.half()),
    "scatter_add_int32_index": lambda m, x: x.scatter_add(0, m.tensor(IDX, dtype=m.int32), x),
    "index_add": lambda m, x: x.index_add(0, m.tensor([2, 0, 2]), x[[1, 1, 0]] * 3),
    "index_add_alpha": lambda m, x: x.index_add(1, m.tensor([0, 0]), x[:, :2], alpha=-2.5),
    "index_add_int_alpha": lambda m, x: (x * 10).long().index_add(
        0, m.tensor([1]), m.ones(1, 4, dtype=m.int64), alpha=2.5),
    "index_add_bf16": lambda m, x: x.bfloat16().index_add(0, m.tensor([1, 1]),
                                                          x[:2].bfloat16()),
    "index_add_int32": lambda m, x: x.index_add(0, m.tensor([1, 1], dtype=m.int32), x[:2]),
    "index_add_transposed": lambda m, x: x.t().index_add(1, m.tensor([2, 0]), x.t()[:, :2]),
    "index_add_0dim": lambda m, x: x[0, 1].index_add(0, m.tensor([0]), x[2, 2]),
    "index_add_empty": lambda m, x: x.index_add(0, m.tensor([], dtype=m.int64), x[:0]),
    "index_copy": lambda m, x: x.index_copy(1, m.tensor([3, 0]), x[:, :2] * 2),
    "index_copy_0dim": lambda m, x: x[1, 1].index_copy(0, m.tensor(0), x[2, 2]),
    "index_copy_transposed": lambda m, x: x.t().index_copy(0, m.tensor([1]), x.t()[2:3] * 2),
    "index_fill": lambda m, x: x.index_fill(1, m.tensor([3, -1, 0]), -7.0),
    "index_fill_tensor": lambda m, x: x.index_fill(0, m.tensor([1]), m.tensor(5.0)),
    "index_fill_long_value": lambda m, x: x.index_fill(0, m.tensor(2), m.tensor(5)),
    "index_fill_int": lambda m, x: (x * 10).long().index_fill(1, m.tensor([1]), 2.5),
    "index_fill_transposed": lambda m, x: x.t().index_fill(0, m.tensor([1, 2]), 0.5),
    "index_fill_0dim": lambda m, x: x[0, 0].index_fill(0, m.tensor([0, 0]), 1.0),
    "take_along_dim": lambda m, x: m.take_along_dim(x, m.tensor([[1], [3], [-1]]), 1),
    "take_along_dim_broadcast": lambda m, x: m.take_along_dim(x, m.tensor([[2, 0, 1, 1]]), 0),
    "take_along_dim_neg_dim": lambda m, x: m.take_along_dim(x, m.tensor([[1, 0, 2]]).t(), -1),
    "take_along_dim_flat": lambda m, x: m.take_along_dim(x, m.tensor([[1, 0], [11, 5]])),
    "take_along_dim_method": lambda m, x: x.t().take_along_dim(m.tensor([[2, 0, 1]]), 1),
    "take_along_dim_0dim": lambda m, x: m.take_along_dim(x[0, 0], m.tensor(0)),
    "put": lambda m, x: x.put(m.tensor([[0, -1], [5, 3]]), x[:2, :2] * 10),
    "put_accumulate": lambda m, x: x.put(m.tensor([0, 0, -12]), x[0, :3], accumulate=True),
    "put_transposed": lambda m, x: x.t().put(m.tensor([1, 4]), m.tensor([9.0, 8.0],
                                                                       dtype=m.float64)),
    "put_empty": lambda m, x: x.put(m.tensor([], dtype=m.int64), x[:0, 0]),
    "masked_fill_tensor": lambda m, x: x.masked_fill(x > 0, m.tensor(-3.0)),
    "masked_fill_tensor_cast": lambda m, x: (x * 10).long().masked_fill(x > 0, m.tensor(2.7)),
    "masked_fill_tensor_bcast": lambda m, x: x[0].masked_fill(x > 0, m.tensor(1.0)),
    "masked_fill_scalar": lambda m, x: x.masked_fill(x > 0, 4),
    "masked_scatter": lambda m, x: x.masked_scatter(x > 0, m.arange(20.0,
                                                                     dtype=m.float64)[::2]),
    "masked_scatter_bcast_mask": lambda m, x: x.masked_scatter(m.tensor([True, False, True,
                                                                         True]),
                                                               -m.ones(3, 4, dtype=m.float64)),
    "masked_scatter_transposed": lambda m, x: x.t().masked_scatter(x.t() < 0, x.t() * 10),
    "masked_scatter_none": lambda m, x: x.masked_scatter(x > 100, m.ones(0, dtype=m.float64)),
    "argwhere": lambda m, x: m.argwhere(x > 0),
    "argwhere_0dim": lambda m, x: m.argwhere(x[0, 0] * 0 + 1),
    "nonzero_tuple": lambda m, x: m.nonzero(x.t() > 0, as_tuple=True),
    "nonzero_tuple_0dim": lambda m, x: (x[0, 0] * 0 + 1).nonzero(as_tuple=True),
}


@pytest.mark.parametrize("name", sorted(FORWARD))
def test_forward(name):
    check(FORWARD[name], X)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "float16"])
def test_scatter_reduce(reduce, include_self, dtype):
    x = np.round(X * 3)                              # ties, negatives and zeros
    index = np.array([[0, 1, 2, 2], [2, 0, 0, 2], [0, 0, 0, 0]])

    def fn(m, x):
        d = getattr(m, dtype)
        return x.to(d).scatter_reduce(0, m.tensor(index), (x * 2 - 1).to(d), reduce,
                                      include_self=include_self)
    check(fn, x, rtol=1e-3 if dtype == "float16" else 1e-6)


def test_scatter_reduce_transposed_and_nan():
    x = X.copy()
    x[0, 1] = np.nan
    check(lambda m, x: x.t().scatter_reduce(1, m.tensor(IDX).t(), x.t()[:, ::2], "amax"), x)
    check(lambda m, x: x.t().scatter_reduce(1, m.tensor(IDX).t(), x.t(), "amin",
                                            include_self=False), x)


def test_scatter_src_reduce_multiply():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda m, x: (x * 10).long().scatter(0, m.tensor(IDX), x.long() + 2,
                                                   reduce="multiply"), X)


def test_scatter_src_reduce_warns():
    x, i = gt.tensor(X), gt.tensor(IDX)
    with pytest.warns(UserWarning, match="scatter_reduce instead") as record:
        out = x.scatter(0, i, x, reduce="add")
    assert record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.tensor(X).scatter(0, torch.tensor(IDX), torch.tensor(X), reduce="add")
    assert_same(out, expected)


def test_duplicates_accumulate():
    index = np.zeros((50, 4), np.int64)
    check(lambda m, x: m.zeros(3, 4, dtype=m.float64).scatter_add(0, m.tensor(index), x),
          rng.standard_normal((50, 4)))
    check(lambda m, x: m.zeros(2, 5, dtype=m.float64).index_add(1, m.tensor([4] * 30), x),
          rng.standard_normal((2, 30)))
    check(lambda m, x: m.zeros(5, dtype=m.float64).put(m.tensor([2] * 30), x, accumulate=True),
          rng.standard_normal(30))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_accumulates_like_torch(dtype):
    """scatter_add/index_add/scatter_reduce sum in float32 and round once; put rounds at
    every step (PyTorch's kernels)."""
    src = rng.standard_normal((40, 3))
    index = np.zeros((40, 3), np.int64)

    def fn(m, s):
        d = getattr(m, dtype)
        z, s = m.zeros(2, 3, dtype=d), s.to(d)
        return (z.scatter_add(0, m.tensor(index), s), z.index_add(0, m.tensor(index[:, 0]), s),
                z.scatter_reduce(0, m.tensor(index), s, "mean"),
                z[0].put(m.tensor(index[:, 0]), s[:, 0], accumulate=True))
    check(fn, src, rtol=0, atol=0)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_gather_scatter_add_shapes(data):
    ndim = data.draw(st.integers(1, 3))
    shape = data.draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
    dim = data.draw(st.integers(-ndim, ndim - 1))
    ishape = [data.draw(st.integers(0, s)) if k != dim % ndim else data.draw(st.integers(0, 5))
              for k, s in enumerate(shape)]
    index = rng.integers(0, shape[dim], size=ishape)
    x = rng.standard_normal(shape)
    src = rng.standard_normal([s + data.draw(st.integers(0, 1)) for s in ishape])
    check(lambda m, x: x.gather(dim, m.tensor(index)), x)
    check(lambda m, x, s: x.scatter_add(dim, m.tensor(index), s), x, src)
    check(lambda m, x, s: x.scatter_reduce(dim, m.tensor(index), s, "amax"), x, src)


# ---- in-place and out= forms -------------------------------------------------------------

INPLACE = {
    "scatter_": lambda m, y: y.scatter_(0, m.tensor(IDX), y * 2),
    "scatter_value_": lambda m, y: y.scatter_(1, m.tensor(IDX), 9.0),
    "scatter_reduce_value_": lambda m, y: y.scatter_(1, m.tensor(IDX), 9.0, reduce="add"),
    "scatter_add_": lambda m, y: y.scatter_add_(0, m.tensor(IDX), y + 1),
    "scatter_reduce_": lambda m, y: y.scatter_reduce_(0, m.tensor(IDX), y + 1, "prod"),
    "index_add_": lambda m, y: y.index_add_(1, m.tensor([0, 3, 0]), y[:, :3] * 1, alpha=2),
    "index_copy_": lambda m, y: y.index_copy_(0, m.tensor([2, 0]), y[:2] + 5),
    "index_fill_": lambda m, y: y.index_fill_(1, m.tensor([0, 2]), -1.0),
    "index_fill_tensor_": lambda m, y: y.index_fill_(1, m.tensor([0, 2]), m.tensor(3.0)),
    "put_": lambda m, y: y.put_(m.tensor([0, 11]), m.tensor([7.0, 8.0], dtype=m.float64)),
    "masked_fill_tensor_": lambda m, y: y.masked_fill_(y > 0, m.tensor(0.0)),
    "masked_scatter_": lambda m, y: y.masked_scatter_(y > 0, y * 100),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_inplace(name, layout):
    base = X if layout == "contiguous" else np.ascontiguousarray(X.T)

    def fn(m, x):
        y = x.clone() if layout == "contiguous" else x.clone().t()
        version = y._version
        result = INPLACE[name](m, y)
        assert result is y and y._version > version
        return y
    check(fn, base)


OUT = {
    "gather": lambda m, x, out: m.gather(x, 1, m.tensor(IDX), out=out),
    "scatter": lambda m, x, out: m.scatter(x, 0, m.tensor(IDX), x, out=out),
    "scatter_value": lambda m, x, out: m.scatter(x, 0, m.tensor(IDX), 1.5, out=out),
    "scatter_add": lambda m, x, out: m.scatter_add(x, 0, m.tensor(IDX), x, out=out),
    "scatter_reduce": lambda m, x, out: m.scatter_reduce(x, 0, m.tensor(IDX), x, "mean",
                                                         out=out),
    "index_add": lambda m, x, out: m.index_add(x, 0, m.tensor([1]), x[:1], alpha=3, out=out),
    "index_copy": lambda m, x, out: m.index_copy(x, 0, m.tensor([1]), x[:1], out=out),
    "take_along_dim": lambda m, x, out: m.take_along_dim(x, m.tensor([[1]]), 1, out=out),
}


@pytest.mark.parametrize("name", sorted(OUT))
def test_out(name):
    def fn(m, x):
        out = m.empty(0, dtype=m.float64)
        assert OUT[name](m, x, out) is out
        return out
    check(fn, X)


def test_meta_shapes():
    x = gt.empty(3, 4, device="meta")
    i = gt.empty(2, 3, dtype=gt.int64, device="meta")
    assert x.gather(1, i).shape == (2, 3) and x.gather(1, i).device.type == "meta"
    assert x.scatter_add(0, i, x).shape == (3, 4)
    assert x.index_add(0, gt.empty(2, dtype=gt.int64, device="meta"),
                       gt.empty(2, 4, device="meta")).shape == (3, 4)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        x.gather(0, gt.empty(2, dtype=gt.int64, device="meta"))


# ---- errors ------------------------------------------------------------------------------

ERRORS = {
    "gather_oob": lambda m, x: x.gather(0, m.tensor([[5]])),
    "gather_negative": lambda m, x: x.gather(1, m.tensor([[-1]])),
    "gather_index_dtype": lambda m, x: x.gather(0, m.tensor([[0.0]])),
    "gather_ndim": lambda m, x: x.gather(0, m.tensor([0])),
    "gather_size": lambda m, x: x.gather(0, m.zeros(1, 5, dtype=m.int64)),
    "gather_dim": lambda m, x: x.gather(2, m.tensor([[0]])),
    "scatter_oob": lambda m, x: x.scatter(0, m.tensor([[3]]), 1.0),
    "scatter_src_oob": lambda m, x: x.scatter(1, m.tensor([[4]]), x),
    "scatter_dtype": lambda m, x: x.scatter(0, m.tensor([[0]]), x.float()),
    "scatter_index_dtype": lambda m, x: x.scatter(0, m.tensor([[0.0]]), 1.0),
    "scatter_src_size": lambda m, x: x.scatter(0, m.tensor(IDX), m.ones(1, 1,
                                                                        dtype=m.float64)),
    "scatter_self_size": lambda m, x: x.scatter(0, m.zeros(1, 5, dtype=m.int64), 1.0),
    "scatter_0dim_src": lambda m, x: x.scatter(0, m.tensor([[0]]), m.tensor(1.0,
                                                                           dtype=m.float64)),
    "scatter_ndim": lambda m, x: x.scatter(0, m.tensor(1), m.tensor(1.0, dtype=m.float64)),
    "scatter_bad_reduce": lambda m, x: x.scatter(0, m.tensor([[0]]), 1.0, reduce="mean"),
    "scatter_value_overflow": lambda m, x: x.byte().scatter(0, m.tensor([[0]]), 300),
    "scatter_add_oob": lambda m, x: x.scatter_add(0, m.tensor([[-1]]), x),
    "scatter_add_dtype": lambda m, x: x.scatter_add(0, m.tensor([[0]]), x.float()),
    "scatter_add_size": lambda m, x: x.scatter_add(0, m.zeros(1, 5, dtype=m.int64), x),
    "scatter_reduce_dtype": lambda m, x: x.scatter_reduce(0, m.tensor([[0]]), x.float(), "sum"),
    "scatter_reduce_index_dtype": lambda m, x: x.scatter_reduce(0, m.tensor([[0.0]]), x, "sum"),
    "index_add_oob": lambda m, x: x.index_add(0, m.tensor([0, 5]), x[:2]),
    "index_add_negative": lambda m, x: x.index_add(0, m.tensor([0, -1]), x[:2]),
    "index_add_count": lambda m, x: x.index_add(0, m.tensor([0, 1]), x),
    "index_add_shape": lambda m, x: x.index_add(0, m.tensor([0, 1]), x[:2, :3]),
    "index_add_ndim": lambda m, x: x.index_add(0, m.tensor([0]), x[:1].unsqueeze(2)),
    "index_add_index_dtype": lambda m, x: x.index_add(0, m.tensor([0.0]), x[:1]),
    "index_add_dtype": lambda m, x: x.index_add(0, m.tensor([0]), x[:1].float()),
    "index_add_vector": lambda m, x: x.index_add(0, m.tensor([[0, 1]]), x[:2]),
    "index_add_0dim_source": lambda m, x: x[0, 0].index_add(0, m.tensor(0), x[0, :1]),
    "index_copy_oob": lambda m, x: x.index_copy(0, m.tensor([0, 5]), x[:2]),
    "index_copy_negative": lambda m, x: x.index_copy(0, m.tensor([-1]), x[:1]),
    "index_copy_index_dtype": lambda m, x: x.index_copy(0, m.tensor([0], dtype=m.int32),
                                                        x[:1]),
    "index_copy_dtype": lambda m, x: x.index_copy(0, m.tensor([0]), x[:1].float()),
    "index_copy_count": lambda m, x: x.index_copy(0, m.tensor([0, 1]), x),
    "index_copy_ndim": lambda m, x: x.index_copy(0, m.tensor([0]), x[0]),
    "index_copy_slice": lambda m, x: x.index_copy(0, m.tensor([0]), x[:1, :3]),
    "index_copy_vector": lambda m, x: x.index_copy(0, m.tensor([[0]]), x[:1]),
    "index_fill_oob": lambda m, x: x.index_fill(0, m.tensor([0, 5]), 1.0),
    "index_fill_negative_oob": lambda m, x: x.index_fill(0, m.tensor(-4), 1.0),
    "index_fill_index_dtype": lambda m, x: x.index_fill(0, m.tensor([0], dtype=m.int32), 1.0),
    "index_fill_value_dim": lambda m, x: x.index_fill(0, m.tensor([0]), m.tensor([1.0])),
    "index_fill_vector": lambda m, x: x.index_fill(0, m.tensor([[0]]), 1.0),
    "index_fill_overflow": lambda m, x: x.byte().index_fill(0, m.tensor([0]), 300),
    "take_along_dim_dtype": lambda m, x: m.take_along_dim(x, m.tensor([[0]], dtype=m.int32), 1),
    "take_along_dim_ndim": lambda m, x: m.take_along_dim(x, m.tensor([0, 1]), 1),
    "take_along_dim_flat_oob": lambda m, x: m.take_along_dim(x, m.tensor([0, 12])),
    "take_along_dim_broadcast": lambda m, x: m.take_along_dim(x, m.tensor([[0, 1]]), 0),
    "take_along_dim_0dim": lambda m, x: m.take_along_dim(x[0, 0], m.tensor(0), 0),
    "put_oob": lambda m, x: x.put(m.tensor([0, 12]), x[0, :2]),
    "put_negative_oob": lambda m, x: x.put(m.tensor([-13]), x[0, :1]),
    "put_count": lambda m, x: x.put(m.tensor([0, 1]), x[0, :3]),
    "put_index_dtype": lambda m, x: x.put(m.tensor([0], dtype=m.int32), x[0, :1]),
    "put_dtype": lambda m, x: x.put(m.tensor([0]), x[0, :1].float()),
    "put_empty_self": lambda m, x: x[:0].put(m.tensor([0]), x[0, :1]),
    "masked_fill_value_dim": lambda m, x: x.masked_fill(x > 0, m.tensor([1.0])),
    "masked_fill_overflow": lambda m, x: x.byte().masked_fill(x > 0, m.tensor(300)),
    "masked_scatter_short": lambda m, x: x.masked_scatter(x > -100, x[0]),
    "masked_scatter_mask_dtype": lambda m, x: x.masked_scatter((x > 0).long(), x),
    "masked_scatter_dtype": lambda m, x: x.masked_scatter(x > 0, x.float()),
    "index_add_overlap": lambda m, x: x.index_add_(0, m.tensor([0]), x[1:2]),
    "scatter_overlap": lambda m, x: x.scatter_(0, m.tensor([[0]]), x[1:]),
    "gather_out_overlap": lambda m, x: m.gather(x, 0, m.tensor([[0, 1]]), out=x[0:1, :2]),
}


def _error(fn, module):
    x = module.tensor(X)
    before = x.clone()
    with pytest.raises(Exception) as info:
        fn(module, x)
    assert bool((x == before).all())          # nothing half-written
    return info.value


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    expected = _error(ERRORS[name], torch)
    actual = _error(ERRORS[name], gt)
    assert type(actual) is type(expected), (actual, expected)
    assert str(actual).split("\n")[0] == str(expected).split("\n")[0]


def test_errors_where_glasstorch_is_stricter():
    x = gt.tensor(X)
    # torch wraps indices >= size modulo size here; glasstorch refuses to guess
    with pytest.raises(RuntimeError, match="index 4 is out of bounds for dimension 1 with "
                                           "size 4"):
        gt.take_along_dim(x, gt.tensor([[4]]), 1)
    # torch's message comes from the internal expand; the out-of-place form broadcasts
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        gt.ones(4).masked_scatter_(gt.ones(3, 4, dtype=gt.bool), gt.arange(12.0))
    assert gt.ones(4).masked_scatter(gt.ones(3, 4, dtype=gt.bool), gt.arange(12.0)).shape == (3, 4)
    with pytest.raises(RuntimeError, match="add or multiply"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x.scatter(0, gt.tensor([[0]]), x, reduce="sum")
    with pytest.raises(TypeError):
        x.scatter(0, gt.tensor([[0]]))


# ---- gradients ---------------------------------------------------------------------------

S = rng.standard_normal((3, 5))
GRADS = {
    "gather": (lambda m, x: x.gather(1, m.tensor(IDX)), (X,)),
    "gather_0dim": (lambda m, x: x.gather(0, m.tensor([0, 0])), (np.array(1.5),)),
    "gather_transposed": (lambda m, x: x.t().gather(0, m.tensor([[1, 0, 2], [1, 1, 1]])), (X,)),
    "scatter_src": (lambda m, x, s: x.scatter(0, m.tensor([[0, 1, 2], [2, 0, 1]]), s[:2, :3]),
                    (X, S)),
    "scatter_value": (lambda m, x: x.scatter(1, m.tensor(IDX), 2.0), (X,)),
    "scatter_add": (lambda m, x, s: x.scatter_add(0, m.tensor(IDX), s[:2, ::2]), (X, S)),
    "index_add": (lambda m, x, s: x.index_add(1, m.tensor([0, 3, 0]), s[:, :3], alpha=-2),
                  (X, S)),
    "index_add_0dim": (lambda m, x, s: x.index_add(0, m.tensor(0), s), (np.array(1.0),
                                                                        np.array(2.0))),
    "index_copy": (lambda m, x, s: x.t().index_copy(0, m.tensor([3, 0]), s[:2, :3]), (X, S)),
    "index_fill": (lambda m, x: x.index_fill(0, m.tensor([-1, 0]), 3.0), (X,)),
    "index_fill_tensor": (lambda m, x, v: x.index_fill(1, m.tensor([1, 1, 3]), v),
                          (X, np.array(0.5))),
    "take_along_dim": (lambda m, x: m.take_along_dim(x, m.tensor([[1], [0], [3]]), 1), (X,)),
    "take_along_dim_broadcast": (lambda m, x: m.take_along_dim(x, m.tensor([[2, 0, 2, 1]]), 0),
                                 (X,)),
    "take_along_dim_flat": (lambda m, x: m.take_along_dim(x, m.tensor([3, 3, 0])), (X,)),
    "put": (lambda m, x, s: x.put(m.tensor([1, 5, -1]), s[0, :3]), (X, S)),
    "put_accumulate": (lambda m, x, s: x.put(m.tensor([1, 1, -1]), s[0, :3], accumulate=True),
                       (X, S)),
    "masked_fill_tensor": (lambda m, x, v: x.masked_fill(x > 0, v), (X, np.array(0.5))),
    "masked_fill_tensor_bcast": (lambda m, x, v: x[0].masked_fill(m.tensor(X > 0), v),
                                 (X, np.array(0.5))),
    "masked_scatter": (lambda m, x, s: x.masked_scatter(m.tensor(X > 0), s), (X, S)),
}


def _reduce_case(reduce, include_self):
    x, s = np.round(X * 2), np.round(S * 2)
    if reduce == "prod":                 # a zero in self, a lone zero and a pair of zeros
        x[0, 0], s[0, 1], s[1, 0], s[1, 1] = 0, 0, 0, 0
    index = [[0, 1, 2, 0], [2, 0, 0, 2], [0, 1, 1, 2]]
    return (lambda m, x, s: x.scatter_reduce(0, m.tensor(index), s[:, :4], reduce,
                                             include_self=include_self), (x, s))


for _r in ("sum", "mean", "prod", "amax", "amin"):
    for _inc in (True, False):
        GRADS[f"scatter_reduce_{_r}_{_inc}"] = _reduce_case(_r, _inc)


def _run_grad(module, fn, arrays, weight):
    leaves = [module.tensor(a, requires_grad=True) for a in arrays]
    out = fn(module, *leaves)
    (out * module.tensor(weight)).sum().backward()
    return out, [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_torch(name):
    fn, arrays = GRADS[name]
    shape = tuple(fn(torch, *(torch.tensor(a) for a in arrays)).shape)
    weight = rng.standard_normal(shape)
    t_out, t_grads = _run_grad(torch, fn, arrays, weight)
    g_out, g_grads = _run_grad(gt, fn, arrays, weight)
    assert g_out.grad_fn.name() == t_out.grad_fn.name()
    for g, t in zip(g_grads, t_grads):
        assert_same(g, t, check_stride=False)


@pytest.mark.parametrize("name", sorted(n for n in GRADS if "amax" not in n and "amin" not in n))
def test_gradcheck(name):
    fn, arrays = GRADS[name]
    inputs = tuple(gt.tensor(a, requires_grad=True) for a in arrays)
    assert gt.autograd.gradcheck(lambda *t: fn(gt, *t), inputs)


def test_src_larger_than_index_gets_zero_gradient():
    x = gt.zeros(3, 4, dtype=gt.float64, requires_grad=True)
    s = gt.tensor(S, requires_grad=True)
    x.scatter_add(0, gt.tensor(IDX), s).sum().backward()
    expected = np.zeros_like(S)
    expected[:2, :3] = 1
    assert_same(s.grad, expected)


def test_double_backward():
    for fn, arrays in (GRADS["gather"], GRADS["scatter_add"], GRADS["index_add"],
                       GRADS["scatter_reduce_mean_True"]):
        inputs = tuple(gt.tensor(a, requires_grad=True) for a in arrays)
        assert gt.autograd.gradgradcheck(lambda *t: fn(gt, *t) ** 2, inputs)


def test_inplace_records_functional_node():
    for m in (torch, gt):
        w = m.tensor(S, requires_grad=True)
        y = m.tensor(X) * 1
        y.scatter_(0, m.tensor(IDX), w[:2, :3])
        assert y.grad_fn.name() == "ScatterBackward0"
        v = m.tensor(0.5, requires_grad=True)
        y.index_fill_(1, m.tensor([1]), v)
        assert y.grad_fn.name() == "IndexFillBackward1"
        y.sum().backward()
        assert float(v.grad) == 3.0


def test_scatter_with_reduce_has_no_derivative():
    x = gt.tensor(X, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = x.scatter(0, gt.tensor(IDX), x, reduce="multiply")
    with pytest.raises(RuntimeError, match="not implemented"):
        y.sum().backward()
