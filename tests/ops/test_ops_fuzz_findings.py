"""Wrong answers the differential campaign (tests/fuzz) found in operators, each checked
against PyTorch on the smallest program that showed it."""
import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch, to_numpy


def _same(fn):
    """Run fn(T) with T = glasstorch and T = torch; compare values, dtypes and shapes."""
    torch = oracle_torch()
    ours, theirs = fn(gt), fn(torch)
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for a, b in zip(ours, theirs, strict=True):
        assert str(a.dtype) == str(b.dtype)
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("step", [2, 4, 8])
def test_neg_inplace_on_strided_view(dtype, step):
    def f(T):
        x = T.arange(16).to(getattr(T, dtype))
        x[::step].neg_()
        return x
    _same(f)


def test_neg_inplace_on_diagonal():
    def f(T):
        y = T.arange(9.).reshape(3, 3)
        y.diagonal().neg_()
        return y
    _same(f)


def _raises_same(fn):
    """fn(T) raises the same exception class in glasstorch and in torch."""
    torch = oracle_torch()
    with pytest.raises(Exception) as theirs:
        fn(torch)
    with pytest.raises(theirs.type):
        fn(gt)


def test_index_select_refuses_negative_index():
    _raises_same(lambda T: T.index_select(T.arange(3.), 0, T.tensor([-1])))
    _same(lambda T: T.index_select(T.arange(3.), 0, T.tensor([2, 0])))


@pytest.mark.parametrize("op", ["remainder", "fmod", "floor_divide"])
def test_integer_division_by_zero_on_empty(op):
    _same(lambda T: getattr(T, op)(T.zeros(0, dtype=T.int64), 0))
    _raises_same(lambda T: getattr(T, op)(T.ones(2, dtype=T.int64), 0))


def test_as_strided_():
    def f(T):
        x = T.arange(6.)
        x.as_strided_((2, 2), (1, 2))
        b = T.arange(6.)[1:]
        b.as_strided_((2,), (2,))
        return x, b, T.tensor(x.stride()), T.tensor(b.storage_offset())
    _same(f)


def test_as_strided_records_its_view():
    def f(T):
        l = T.arange(6., requires_grad=True)
        y = l * 2
        y.as_strided_((2, 2), (1, 2))
        (y * T.tensor([[1., 2.], [3., 4.]])).sum().backward()
        return y.detach(), l.grad
    _same(f)
    _raises_same(lambda T: T.ones(3, requires_grad=True).as_strided_((2,), (1,)))


@pytest.mark.parametrize("call", [lambda x: x.squeeze_(), lambda x: x.unsqueeze_(1),
                                  lambda x: x.transpose_(0, 2), lambda x: x.t_() if
                                  x.dim() <= 2 else x.squeeze_(1)])
def test_inplace_view_ops(call):
    def f(T):
        x = T.arange(6.).reshape(2, 1, 3)
        call(x)
        return x, T.tensor(x.stride())
    _same(f)


@pytest.mark.parametrize("out_dtype", ["float32", "int64", "int16"])
@pytest.mark.parametrize("call", [lambda T, x, o: T.clamp(x, min=0, out=o),
                                  lambda T, x, o: T.clamp_min(x, 0, out=o),
                                  lambda T, x, o: T.clamp(x, min=T.tensor(0), out=o)])
def test_clamp_out_dtype_rules(call, out_dtype):
    """With number bounds the out= tensor must have the result's dtype exactly; with tensor
    bounds the result is cast into it."""
    torch = oracle_torch()
    x = lambda T: T.tensor([1, -2], dtype=T.int16)
    try:
        expected = call(torch, x(torch), torch.empty(2, dtype=getattr(torch, out_dtype)))
    except RuntimeError:
        with pytest.raises(RuntimeError, match="Found dtype"):
            call(gt, x(gt), gt.empty(2, dtype=getattr(gt, out_dtype)))
        return
    _same(lambda T: call(T, x(T), T.empty(2, dtype=getattr(T, out_dtype))))
    assert str(expected.dtype).endswith(out_dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "complex64"])
@pytest.mark.parametrize("value", [0.92, 3, True, 1 + 2j])
def test_copy_from_a_number(dtype, value):
    def f(T):
        x = T.zeros(2, dtype=getattr(T, dtype))
        x[1:].copy_(value)
        return x
    _same(f)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool", "uint8", "int8",
                                   "complex64"])
@pytest.mark.parametrize("value", [0.3 + 1j, 0.3 + 0j, 1e300, -1, 300, float("inf"), -129])
def test_fill_value_must_fit(dtype, value):
    torch = oracle_torch()
    try:
        torch.zeros(1, dtype=getattr(torch, dtype)).fill_(value)
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=str(e)[:40].replace("(", r"\(")):
            gt.zeros(1, dtype=getattr(gt, dtype)).fill_(value)
        return
    _same(lambda T: T.zeros(1, dtype=getattr(T, dtype)).fill_(value))


@pytest.mark.parametrize("op", ["sum", "prod", "cumsum", "mean", "amax"])
@pytest.mark.parametrize("out_dtype", ["bool", "int32", "float64", "float16"])
def test_reduction_out_dtype(op, out_dtype):
    """Without dtype=, a sum/prod/cumsum casts its input to out's dtype first, a mean
    computes in the input's dtype and casts the result, amax wants the input's dtype."""
    torch = oracle_torch()
    x = lambda T: T.tensor([[1.5, -2.7], [0.2, 3.]])
    call = lambda T: getattr(T, op)(x(T), 0, out=T.empty(2 if op != "cumsum" else (2, 2),
                                                         dtype=getattr(T, out_dtype)))
    try:
        call(torch)
    except RuntimeError:
        _raises_same(call)
        return
    _same(call)


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 4)])
@pytest.mark.parametrize("index", [-1, 5])
def test_index_select_out_of_range_error_class(shape, index):
    for dim in range(-len(shape), len(shape)):
        _raises_same(lambda T: T.index_select(T.zeros(shape), dim, T.tensor([index])))


@pytest.mark.parametrize("bounds", [
    lambda T: dict(min=T.tensor(1.39, dtype=T.float64), max=2),
    lambda T: dict(min=T.tensor(1.39, dtype=T.float16), max=1.69),
    lambda T: dict(min=1, max=T.tensor(3.5, dtype=T.float16)),
    lambda T: dict(min=T.tensor(1.39, dtype=T.float64)),
    lambda T: dict(min=T.tensor(1.39, dtype=T.float64), max=T.tensor(2))])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "float16"])
def test_clamp_with_a_0d_tensor_and_a_number(bounds, dtype):
    """A 0-d tensor bound beside a number bound promotes as a number (clamp.Scalar)."""
    _same(lambda T: T.clamp(T.tensor([0, 3], dtype=getattr(T, dtype)), **bounds(T)))


def test_clamp_with_a_tensor_and_a_number_is_refused():
    _raises_same(lambda T: T.clamp(T.tensor([0]), min=1, max=T.tensor([3.5])))


_OVERLAP_CASES = {
    "expanded out": lambda T, x: T.add(T.ones(3), 1, out=T.zeros(1).expand(3)),
    "partial out": lambda T, x: T.add(x[:3], x[1:], out=x[1:]),
    "partial in-place": lambda T, x: x[1:].add_(x[:3]),
    "same memory, other order": lambda T, x: x.view(2, 2).add_(x.view(2, 2).t()),
    "unary out": lambda T, x: T.neg(x[:3], out=x[1:]),
    "clamp out": lambda T, x: T.clamp(x[:3], min=1, out=x[1:]),
}


@pytest.mark.parametrize("case", sorted(_OVERLAP_CASES))
def test_partial_overlap_is_refused(case):
    _raises_same(lambda T: _OVERLAP_CASES[case](T, T.arange(4.)))


@pytest.mark.parametrize("call", [lambda T, x: x.add_(x), lambda T, x: x[:2].add_(x[2:]),
                                  lambda T, x: x[::2].add_(x[1::2]),
                                  lambda T, x: T.mul(x, 2, out=x)])
def test_full_or_no_overlap_is_allowed(call):
    def f(T):
        x = T.arange(4.)
        call(T, x)
        return x
    _same(f)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_softmax_of_empty_integer_tensor(op, dtype):
    _same(lambda T: getattr(T, op)(T.zeros(2, 0, dtype=getattr(T, dtype)), 0))
    _raises_same(lambda T: getattr(T, op)(T.zeros(2, 1, dtype=getattr(T, dtype)), 0))


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
@pytest.mark.parametrize("call", [lambda T, x: x.clamp_min_(0.9 + 1j),
                                  lambda T, x: T.clamp(x, min=0.9 + 1j),
                                  lambda T, x: T.clamp(x, min=1, max=1j),
                                  lambda T, x: T.clamp_max(x, 1j)])
def test_clamp_with_a_complex_bound_error_class(dtype, call):
    _raises_same(lambda T: call(T, T.ones(2, dtype=getattr(T, dtype))))


@pytest.mark.parametrize("call", [
    lambda T: T.topk(T.ones(1, dtype=T.complex64), 1),
    lambda T: T.topk(T.ones(1, dtype=T.complex64), 2),
    lambda T: T.topk(T.ones(1, dtype=T.bool), 2),
    lambda T: T.cat([T.tensor(1.), T.tensor(1.)], out=T.empty(0, dtype=T.bool)),
    lambda T: T.ones(2, dtype=T.complex64).abs_(),
])
def test_error_class_and_order(call):
    torch = oracle_torch()
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(theirs.type) as ours:
        call(gt)
    assert str(ours.value) == str(theirs.value)


def _maximum_into_an_input(T):
    v = T.ones(())
    return T.maximum(v, T.ones(1, 1), out=v)


_EDGE_CASES = {
    "index_select, empty dim, 2-d": lambda T: T.index_select(T.zeros(0, 4), 0, T.tensor([0])),
    "index_select, empty dim, 1-d": lambda T: T.index_select(T.zeros(0), 0, T.tensor([0])),
    "index_select, empty index": lambda T: T.index_select(T.zeros(0, 4), 0,
                                                          T.tensor([], dtype=T.long)),
    "index_fill_, empty dim": lambda T: T.zeros(1, 0, 1).index_fill_(1, T.tensor([0]), 1.),
    "index_fill_, empty tensor": lambda T: T.zeros(2, 0).index_fill_(0, T.tensor([5]), 1.),
    "bool mv, empty": lambda T: T.zeros(0, 2, dtype=T.bool) @ T.zeros(2, dtype=T.bool),
    "bool mv, k = 0": lambda T: T.zeros(2, 0, dtype=T.bool) @ T.zeros(0, dtype=T.bool),
    "bool mm, empty": lambda T: T.zeros(0, 2, dtype=T.bool) @ T.zeros(2, 3, dtype=T.bool),
    "bool dot": lambda T: T.zeros(2, dtype=T.bool) @ T.zeros(2, dtype=T.bool),
    "out= that is read, resized": _maximum_into_an_input,
}


@pytest.mark.parametrize("case", sorted(_EDGE_CASES))
def test_empty_and_read_write_edge_cases(case):
    call = _EDGE_CASES[case]
    torch = oracle_torch()
    try:
        call(torch)
    except Exception:
        _raises_same(call)
        return
    _same(call)


@pytest.mark.parametrize("index", [slice(None, None, 2), 1, Ellipsis, 0, (slice(None), 0)])
def test_setitem_number_into_an_expanded_tensor(index):
    def f(T):
        v = T.zeros(2, 1).expand(2, 3)
        v[index] = 2.
        return v
    torch = oracle_torch()
    try:
        f(torch)
    except RuntimeError:
        _raises_same(f)
        return
    _same(f)


def _cat_into_an_input(T):
    x = T.zeros(0, 1)
    return T.cat([x, x], out=x)


@pytest.mark.parametrize("call", [
    lambda T: T.cat([T.ones(1, requires_grad=True)] * 2, out=T.empty(3, dtype=T.bool)),
    lambda T: T.cat([T.ones(1, requires_grad=True)] * 2, out=T.empty(3)),
    _cat_into_an_input])
def test_cat_out_checks_in_pytorch_order(call):
    torch = oracle_torch()
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(theirs.type) as ours:
        call(gt)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("shape, dim, index", [((0, 3, 4), 2, [7]), ((0, 3, 4), 0, [7]),
                                               ((2, 0, 3), 2, [7]), ((2, 0, 3), 0, [7]),
                                               ((0, 1, 1), 2, [-2]), ((2, 3, 4), 2, [7])])
def test_index_select_out_of_range_on_empty_inputs(shape, dim, index):
    _raises_same(lambda T: T.index_select(T.zeros(shape), dim, T.tensor(index)))
