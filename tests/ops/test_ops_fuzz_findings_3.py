"""Differences from PyTorch the third differential campaign (tests/fuzz) found in operators,
each checked against PyTorch on the smallest program that showed it."""
import warnings

import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch, to_numpy


def _both(fn):
    """fn(T) for T = glasstorch and T = torch, with the warnings each raised."""
    torch = oracle_torch()
    results = []
    for T in (gt, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn(T)
        results.append((out, [str(w.message).split(" (Triggered")[0] for w in caught]))
    return results


def _same_values(a, b):
    assert str(a.dtype) == str(b.dtype) and tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fill", [
    lambda x, T: x.masked_fill_(T.tensor([[True, False, False], [False, False, True]]), 7),
    lambda x, T: x.masked_fill_(T.tensor([True, False, False]), T.tensor(7.)),
    lambda x, T: x.index_fill_(1, T.tensor([1]), 7),
    lambda x, T: x.index_fill_(0, T.tensor([1]), T.tensor(7.)),
])
def test_masked_and_index_fill_on_an_expanded_tensor_warn_and_write(fill):
    """PyTorch deprecates these on expanded tensors (a warning) but still writes the memory
    every selected element refers to; other in-place ops refuse."""
    def f(T):
        base = T.tensor([1., 2., 3.])
        fill(base.expand(2, 3), T)
        return base
    (ours, our_warnings), (theirs, their_warnings) = _both(f)
    _same_values(ours, theirs)
    assert our_warnings == their_warnings


def test_other_inplace_ops_on_an_expanded_tensor_still_refuse():
    with pytest.raises(RuntimeError, match="more than one element of the written-to"):
        gt.tensor([1., 2.]).expand(3, 2).add_(1)


def _outcome(fn, T):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(T)
        except (RuntimeError, IndexError) as e:
            return type(e).__name__, str(e)


@pytest.mark.parametrize("call", [
    lambda T, x: T.neg(x[1:3], out=x),                    # overlaps before the resize
    lambda T, x: T.add(x[:2], 1, out=x[:1].expand(3)),    # an expanded out of another shape
    lambda T, x: T.mul(x[2:], 2, out=x[:1]),
])
def test_pointwise_out_overlap_is_refused_before_out_is_resized(call):
    """TensorIterator checks out= against its inputs as they are, then resizes: a refused
    call leaves out's shape alone."""
    def f(T):
        x = T.arange(4.)
        outcome = _outcome(lambda T: call(T, x).tolist(), T)
        return outcome, tuple(x.shape), x.tolist()
    assert f(gt) == f(oracle_torch())


@pytest.mark.parametrize("inputs, out", [
    (lambda x: [x.unsqueeze(-2)] * 2, lambda x: x),       # the same elements, to be resized
    (lambda x: [x[..., :1]] * 2, lambda x: x),
    (lambda x: [x.flatten()[:1], x.flatten()[1:]], lambda x: x.flatten()),
    (lambda x: [x.clone()] * 2, lambda x: x),             # no shared memory: resized, written
    (lambda x: [x[..., :1], x[..., 1:]], lambda x: x.flatten()[:0]),
])
def test_cat_out_sharing_memory_with_an_input(inputs, out):
    """cat(out=) refuses an input sharing memory with out as out will be after its resize;
    glasstorch decides that without resizing out first (PyTorch leaves it resized)."""
    def f(T):
        x = T.tensor([6, 7], dtype=T.int32).reshape(1, 1, 2)
        outcome = _outcome(lambda T: T.cat(inputs(x), out=out(x)).tolist(), T)
        return outcome, x
    (ours, x), (theirs, _) = f(gt), f(oracle_torch())
    assert ours == theirs
    if ours[0] == "RuntimeError":
        assert x.shape == (1, 1, 2) and x.flatten().tolist() == [6, 7]


@pytest.mark.parametrize("shape, dim", [((2, 0), 1), ((0, 3), 0), ((0, 0), 1), ((1, 0), 1)])
@pytest.mark.parametrize("storage", ["fresh", "room", "offset"])
def test_index_fill_on_an_empty_tensor(shape, dim, storage):
    """PyTorch fills through a view of self with the filled dim of size 1: over a storage
    too small it fails (RuntimeError), else the index is checked (IndexError)."""
    def f(T):
        x = {"fresh": lambda: T.zeros(shape), "room": lambda: T.zeros(6)[:0].reshape(shape),
             "offset": lambda: T.zeros(6)[5:5].reshape(shape)}[storage]()
        return _outcome(lambda T: x.index_fill_(dim, T.tensor([-1]), 1.).shape, T)
    assert f(gt) == f(oracle_torch())


@pytest.mark.parametrize("value", [-1.0, -0.5, 255.5, -1, -128.0, float("nan")])
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_fill_checks_a_float_against_the_integer_range(dtype, value):
    """A float never wraps into an unsigned type (c10's checked conversion); an int does."""
    def f(T):
        return _outcome(lambda T: T.zeros(2, dtype=getattr(T, dtype)).fill_(value).tolist(), T)
    assert f(gt) == f(oracle_torch())


@pytest.mark.parametrize("make", [
    lambda T: T.tensor(True), lambda T: T.tensor(1 + 1j), lambda T: T.tensor([1 + 1j]),
    lambda T: T.tensor([], dtype=T.complex64), lambda T: T.tensor([[]], dtype=T.complex64),
    lambda T: T.tensor([], dtype=T.bool)])
@pytest.mark.parametrize("op", ["kthvalue", "mode", "cummax", "cummin", "median"])
def test_selections_check_emptiness_before_dtype_and_take_any_0d(make, op):
    """A 0-dim tensor is its own kthvalue/mode/running max whatever its dtype, and an empty
    reduction dim is reported before an unsupported dtype, as in PyTorch."""
    args = (1, 0) if op == "kthvalue" else (0,)

    def f(T):
        def run(T):
            values, indices = getattr(T, op)(make(T), *args)
            return str(values.dtype), tuple(values.shape), indices.tolist()
        try:
            return run(T)
        except (RuntimeError, IndexError, NotImplementedError) as e:
            return type(e).__name__, str(e)
    assert f(gt) == f(oracle_torch())


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "uint8", "int8"])
def test_bfloat16_to_integer_converts_as_float(dtype):
    """bfloat16 into an integer type goes through float, as c10 converts: negatives wrap into
    unsigned types and NaN/inf give what float's conversion gives (NumPy's cast gives 0)."""
    def f(T):
        x = T.tensor([float("nan"), float("inf"), -float("inf"), 2.5, -3.7, -300.])
        x = x.to(T.bfloat16)
        y = T.zeros(6, dtype=getattr(T, dtype))
        y.copy_(x)
        return x.to(getattr(T, dtype)).tolist(), y.tolist()
    assert f(gt) == f(oracle_torch())
