"""Gradient differences from PyTorch that the differential campaign (tests/fuzz) found in
session 10, each checked against PyTorch on a program as small as the one that showed it:
what a formula saves (so an in-place write trips the version check where PyTorch's does),
and how NaN travels through formulas that select or zero."""
import math

import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch


def _outcome(fn, T):
    """The gradients `fn` returns as float64 arrays, or the class of what it raised and
    whether it is the version-check error."""
    try:
        result = fn(T)
    except RuntimeError as e:
        return "RuntimeError", "modified by an inplace operation" in str(e)
    return [None if g is None else np.asarray(g.detach().double().tolist()) for g in result]


def _same(fn):
    torch = oracle_torch()
    ours, theirs = _outcome(fn, gt), _outcome(fn, torch)
    if isinstance(theirs, tuple) or isinstance(ours, tuple):
        assert ours == theirs
        return
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)


def _backward(T, leaf, out):
    w = T.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)
    (out * w).sum().backward()
    return [leaf.grad]


# ---- saved tensors: an in-place write after the op is an error ----------------------------

@pytest.mark.parametrize("first, second", [
    (lambda x: x.exp_(), lambda y: y.sign_()),           # exp_ saves its result: self
    (lambda x: x.exp_(), lambda y: y.add_(1)),
    (lambda x: x.relu_(), lambda y: y.unsqueeze(0).zero_()),
    (lambda x: x.sqrt_(), lambda y: y[:1].mul_(2)),
    (lambda x: x.pow_(x.detach() + 1), lambda y: y.__setitem__(0, 0.25)),
])
def test_inplace_op_saves_self_as_its_output(first, second):
    """An in-place op whose formula reads its output saves self (not a copy): a later
    in-place write into self, or into a view of it, makes backward fail."""
    def f(T):
        x = T.tensor([0.5, 1.5], dtype=T.float64, requires_grad=True)
        y = first(x * 1)
        second(y)
        return _backward(T, x, y)
    _same(f)


@pytest.mark.parametrize("op, write", [
    (lambda T, x: T.sgn(x), lambda y: y.neg_()),              # SgnBackward saves its result
    (lambda T, x: T.prod(x), lambda y: y.mul_(0)),            # ProdBackward too
    (lambda T, x: T.prod(x, 0), lambda y: y.mul_(2)),
])
def test_formulas_save_their_result(op, write):
    def f(T):
        x = T.tensor([0.5, -1.5], dtype=T.float64, requires_grad=True)
        y = op(T, x)
        write(y)
        return _backward(T, x, y)
    _same(f)


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("write", [lambda i: i.masked_fill_(i >= 0, 0), lambda i: i.square_()])
def test_max_min_dim_save_their_indices(name, write):
    """max(dim)/min(dim) send the gradient to the forward's indices, which they save: an
    in-place write into the indices makes backward fail (it recomputed them before)."""
    def f(T):
        x = T.tensor([[-0.36, 1.24], [-2.79, 0.53]], requires_grad=True)
        values, indices = getattr(T, name)(x, 0)
        write(indices)
        return _backward(T, x, values)
    _same(f)


def test_max_dim_gradient_goes_to_the_forward_index_among_ties():
    def f(T):
        x = T.tensor([[1.0, 2.0], [1.0, 2.0], [0.5, 2.0]], requires_grad=True)
        values, _ = T.max(x, 0)
        return _backward(T, x, values)
    _same(f)


# ---- NaN through selecting and zeroing formulas ------------------------------------------

@pytest.mark.parametrize("reduce", [
    lambda T, y: T.amax(y),
    lambda T, y: T.amin(y, dim=1, keepdim=True),
    lambda T, y: T.amax(y, dim=()),
    lambda T, y: T.max(y),
    lambda T, y: T.min(y),
    lambda T, y: T.std(T.amin(y, dim=()), dim=-1, keepdim=True),   # a NaN gradient
])
def test_max_like_reductions_with_nan(reduce):
    """amax/amin multiply by the mask of the extrema (a NaN extremum or gradient makes the
    slice's gradient NaN); max()/min() share the gradient among the NaNs."""
    def f(T):
        x = T.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, 5.0]], dtype=T.float64, requires_grad=True)
        return _backward(T, x, reduce(T, x.log()))
    _same(f)


@pytest.mark.parametrize("op", [
    lambda T, x: T.sign(x), lambda T, x: T.floor(x), lambda T, x: T.ceil(x),
    lambda T, x: T.trunc(x), lambda T, x: T.round(x), lambda T, x: T.angle(x),
    lambda T, x: T.div(x, 2.0, rounding_mode="trunc"),
    lambda T, x: T.div(x, x.detach() - 3, rounding_mode="floor"),
])
def test_piecewise_constant_gradient_is_zero_even_after_nan(op):
    """pow(x, f(x)) with x < 0: the exponent's gradient is NaN (log of a negative), and a
    piecewise-constant f's zero gradient does not carry it on."""
    def f(T):
        x = T.tensor([-0.86, 2.0], dtype=T.float64, requires_grad=True)
        return _backward(T, x, T.pow(x, op(T, x)))
    _same(f)


@pytest.mark.parametrize("base, exponent, dtype", [
    ([3, 0], [4.39, 4.39], "uint8"),
    ([False, False, True], [2.24, -1.9, -1.59], "bool"),
    ([0.0, 0.0, 2.0, -1.0, 0.0], [0.0, 2.0, 0.0, 1.5, -1.0], "float64"),
])
def test_pow_tensor_exponent_at_zero_base(base, exponent, dtype):
    """d/de b**e is 0 where b == 0 and e >= 0 (not 0 * log 0); d/db is 0 where e == 0."""
    def f(T):
        b = T.tensor(base, dtype=getattr(T, dtype))
        e = T.tensor(exponent, dtype=T.float64, requires_grad=True)
        grads = [e]
        if b.dtype.is_floating_point:
            b.requires_grad_()
            grads = [b, e]
        y = T.pow(b, e)
        w = T.linspace(-1, 1, y.numel(), dtype=y.dtype)
        return T.autograd.grad((y * w).sum(), grads)
    _same(f)


def test_complex_sgn_gradient():
    def f(T):
        z = T.tensor([1 + 1j, -2j, 0j, 3 + 0j], requires_grad=True)
        (T.sgn(z) * T.tensor([1.0, -1.0, 2.0, 0.5])).sum().abs().backward()
        return [T.view_as_real(z.grad)]
    _same(f)


def test_cumsum_backward_keeps_nan_where_it_belongs():
    """cumsum's adjoint sums from the end: a NaN gradient reaches only the positions
    before it (a total minus a prefix spread it everywhere)."""
    def f(T):
        x = T.tensor([[0.16, -1.41], [-1.39, 0.7], [-0.26, 2.75]], requires_grad=True)
        return _backward(T, x, T.cumsum(x, 0).pow(-1.75))
    _same(f)


def test_prod_gradient_with_and_without_zeros():
    def f(T):
        x = T.tensor([[1.0, -2.0, 3.0], [4.0, 0.0, 6.0]], dtype=T.float64, requires_grad=True)
        return T.autograd.grad(T.prod(x, 1).sum() + T.prod(x[:1]) + T.prod(x, 0, True).sum(), [x])
    _same(f)


# ---- views and in-place writes autograd does not record -----------------------------------

@pytest.mark.parametrize("write", [
    lambda v: v.logical_not_(),
    lambda v: v.logical_and_(v.new_tensor([1.0])),
    lambda v: v.logical_or_(v.new_tensor([0.0])),
])
def test_view_of_a_leaf_view_written_without_autograd_loses_its_history(write):
    """`x = t.reshape(...).requires_grad_()` is a view of `t` made a leaf; a view of x
    written by logical_*_ (not recorded, but a version bump) gets its history regenerated
    from `t`, which needs no grad: PyTorch's gradient then reaches nothing, nor does ours."""
    def f(T):
        x = T.tensor([-0.98, 1.5]).reshape((2,)).requires_grad_()
        v = x.unsqueeze(1)
        write(v)
        u = x[1:]                       # made before the write: stale too
        return _backward(T, x, v) + [T.tensor([u.requires_grad, v.requires_grad])]
    _same(f)


def test_view_of_a_plain_tensor_written_in_place_keeps_its_history():
    def f(T):
        x = T.tensor([-0.98, 1.5], requires_grad=True)
        v = x.unsqueeze(1)
        v.logical_not_()
        return _backward(T, x, v)
    _same(f)


@pytest.mark.parametrize("write", [
    lambda t, w: t.__setitem__(slice(None), w),
    lambda t, w: t.mul_(w),
    lambda t, w: t.copy_(w.expand(2)),
])
def test_views_made_before_their_base_requires_grad_through_a_write_into_it(write):
    """A write of a value that requires grad into a plain tensor makes the views made of it
    before require grad too, with gradients through the base's new history."""
    def f(T):
        t = T.erf(T.tensor([2.87, -0.3]))
        view = t[1:]
        w = T.tensor([2.89], requires_grad=True)
        write(t, w)
        out = view * 3
        return _backward(T, w, out) + [T.tensor([view.requires_grad, t.requires_grad])]
    _same(f)



# ---- found by the campaigns from seed 1,000,000 -------------------------------------------

@pytest.mark.parametrize("op", [
    lambda T, x, b: T.clamp_min(x, 0.5), lambda T, x, b: T.clamp_min(x, b),
    lambda T, x, b: T.clamp_max(x, 2.0), lambda T, x, b: T.clamp_max(x, b + 1.5),
    lambda T, x, b: T.clamp(x, min=0.5), lambda T, x, b: T.clamp(x, max=b),
    lambda T, x, b: T.clamp(x, b, b + 1.5),
])
def test_clamp_gradient_at_nan(op):
    """A NaN compares false with the bound both ways: neither self nor the bound gets the
    gradient there (PyTorch's where(self >= min, grad, 0))."""
    def f(T):
        x = T.tensor([-0.35, 1.0, 3.0, -2.0], requires_grad=True)
        b = T.tensor([0.5, 0.5, 0.5, 0.5], requires_grad=True)
        y = op(T, x.log(), b)
        w = T.tensor([1.0, 2.0, 3.0, 4.0])
        return T.autograd.grad((y * w).sum(), [x, b], allow_unused=True)
    _same(f)


def test_std_gradient_where_the_std_is_zero():
    """std over equal elements is 0: PyTorch's gradient there is 0, not 0/0."""
    def f(T):
        x = T.tensor([[1.21], [-1.45]], dtype=T.float64, requires_grad=True)
        return _backward(T, x, T.std(x.expand(2, 3), dim=-1))
    _same(f)


def test_cat_backward_uses_the_shapes_its_inputs_had():
    """An input of cat resized afterwards by an out= write: the gradient is still split by
    the shapes at the time of cat."""
    def f(T):
        ints = T.tensor([1, 2, 3, 4])
        x = T.tensor([2.74], requires_grad=True)
        y = T.cat([ints, x], -1)
        T.mul(T.tensor(-1), T.tensor([3]), out=ints)        # ints is now of shape [1]
        return _backward(T, x, y)
    _same(f)


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)),
                                    ((2, 2, 3), (3, 2))])
@pytest.mark.parametrize("grad_a", [True, False])
def test_matmul_saves_each_operand_for_the_others_gradient(shapes, grad_a):
    """Writing into the operand whose partner needs no gradient is no error; writing into
    the one the wanted gradient reads is."""
    def f(T, write_a):
        a = T.arange(1.0, 1 + math.prod(shapes[0])).reshape(shapes[0]).requires_grad_(grad_a)
        b = T.arange(2.0, 2 + math.prod(shapes[1])).reshape(shapes[1]).requires_grad_(not grad_a)
        a2, b2 = a * 1, b * 1
        y = a2 @ b2
        (a2 if write_a else b2).mul_(2)
        return _backward(T, a if grad_a else b, y)
    _same(lambda T: f(T, True))
    _same(lambda T: f(T, False))


def test_copysign_saves_self_only_for_its_gradient():
    def f(T):
        x = T.tensor([-0.14, 0.57])
        y = T.tensor([2.65, -1.05], requires_grad=True)
        z = T.copysign(x, y * 1)
        x.mul_(2)
        return _backward(T, y, z)
    _same(f)


def test_gather_saves_self():
    """take_along_dim/gather keep self (PyTorch's saves it, though only its shape is read):
    writing into it before backward is the version error."""
    def f(T):
        x = T.tensor([-0.72, -2.27, -2.29, 2.41], requires_grad=True)
        v = (x * 1).view(-1)
        y = T.take_along_dim(v, T.tensor([2]), -1)
        v[T.tensor([1, 0])] = -2
        return _backward(T, x, y)
    _same(f)


@pytest.mark.parametrize("shape, dim", [((1, 2), 0), ((2, 1), 1), ((1,), 0), ((), 0)])
def test_cumprod_along_a_dim_of_one_passes_the_gradient(shape, dim):
    """A product of one element is that element: its gradient is the incoming one even where
    the element is NaN (the general formula divides by it)."""
    def f(T):
        x = T.tensor([0.17, -1.59][:max(1, math.prod(shape))], dtype=T.float64)
        x = x.reshape(shape).requires_grad_()
        return _backward(T, x, T.cumprod(x.log(), dim))
    _same(f)


@pytest.mark.parametrize("index", [lambda T: T.tensor([True, False]), lambda T: T.tensor([0])])
def test_index_put_does_not_save_the_values(index):
    """x[i] = v keeps only v's metadata: writing into v before backward is no error."""
    def f(T):
        x = T.tensor([[0.92], [-1.86]], requires_grad=True)
        y = T.clamp(x, min=2)
        v = T.tensor(0.26)
        y[index(T)] = v
        v.masked_fill_(T.tensor(True), -0.03)
        return _backward(T, x, y)
    _same(f)


@pytest.mark.parametrize("y,x,g", [(0.0, 0.0, 1.0), (0.0, 0.0, float("inf")),
                                   (0.0, 1e-200, 1.0), (0.0, -0.0, 1.0), (1.0, 0.0, 1.0),
                                   (0.3, -0.7, 2.5)])
def test_atan2_gradient_at_and_near_the_origin_as_pytorchs(y, x, g):
    # x^2 + y^2 == 0 (at the origin, or underflowed) gives a 0 gradient, not NaN
    T = oracle_torch()
    grads = []
    for L in (gt, T):
        a = L.tensor([y], dtype=L.float64, requires_grad=True)
        b = L.tensor([x], dtype=L.float64, requires_grad=True)
        L.atan2(a, b).backward(L.tensor([g], dtype=L.float64))
        grads.append((repr(a.grad.item()), repr(b.grad.item())))
    assert grads[0] == grads[1]
