"""In-place ops on real views of complex tensors in a graph (real, imag, view_as_real): the
view has another dtype than its base, so CopySlices and the view's new history go through
view_as_real of the base, as PyTorch's view functions do. Against torch and gradcheck."""
import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch

X = np.array([1.5, -2.0, 0.25, 3.0])
WEIGHTS = np.array([0.5 - 1j, 2 + 3j, -1 + 0.25j, 1.5j])


def real_mul(L, x):
    z = x * (1 + 2j)
    v = L.real(z)
    v.mul_(2)
    return z, v


def view_as_real_column_add(L, x):
    z = x * (1 + 1j)
    v = L.view_as_real(z)[..., 1]
    v.add_(1)
    return z, v


def imag_mul(L, x):
    z = x * (1 + 2j)
    v = z.imag
    v.mul_(3)
    return z, v


def view_as_real_mul_by_tensor(L, x):
    z = x * (2 - 1j)
    v = L.view_as_real(z)
    v.mul_(x[:, None])
    return z, v


def real_of_a_slice_mul_by_tensor(L, x):
    z = (x * (1 + 2j))[1:]
    v = z.real
    v.mul_(x[1:])
    return z, v


def imag_of_conj_mul(L, x):
    """conj()'s imag is a negated view of the stored imaginary part."""
    z = x * (1 + 2j)
    v = z.conj().imag
    v.mul_(x)
    return z, v


def imag_strided_copy(L, x):
    z = x * (1 - 1j)
    v = z.imag[::2]
    v.copy_(x[1::2] ** 2)
    return z, v


def real_view_of_a_base_without_grad(L, x):
    """The write gives the base its first history."""
    z = L.zeros(4, dtype=L.complex128)
    v = z.real
    v.copy_(x * 2)
    return z, v


CASES = [real_mul, view_as_real_column_add, imag_mul, view_as_real_mul_by_tensor,
         real_of_a_slice_mul_by_tensor, imag_of_conj_mul, imag_strided_copy,
         real_view_of_a_base_without_grad]


def _loss(L, z):
    return (z * L.tensor(WEIGHTS[-z.shape[0]:])).real.sum()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_inplace_on_real_views_matches_torch(case):
    T = oracle_torch()
    gx, tx = gt.tensor(X, requires_grad=True), T.tensor(X, requires_grad=True)
    (gz, gv), (tz, tv) = case(gt, gx), case(T, tx)
    assert_same(gz, tz, rtol=1e-12, check_stride=False)
    assert_same(gv, tv.detach().resolve_neg(), rtol=1e-12, check_stride=False)  # imag of conj
    assert gv.grad_fn.name() == tv.grad_fn.name()
    if gz._base is None:
        assert gz.grad_fn.name() == tz.grad_fn.name() == "torch::autograd::CopySlices"
    _loss(gt, gz).backward()
    _loss(T, tz).backward()
    assert_same(gx.grad, tx.grad, rtol=1e-12, check_stride=False)


def test_a_real_view_made_before_its_base_is_written_reads_the_new_base():
    T = oracle_torch()
    grads = []
    for L in (gt, T):
        x = L.tensor(X, requires_grad=True)
        z = x * (1 + 2j)
        re, im = z.real, z.imag
        z.mul_(L.tensor(WEIGHTS))
        (re * 2 + im * 3).sum().backward()
        grads.append(x.grad)
    assert_same(grads[0], grads[1], rtol=1e-12, check_stride=False)


def test_the_other_real_views_of_a_base_written_through_one_require_grad():
    T = oracle_torch()
    grads = []
    for L in (gt, T):
        x = L.tensor(X, requires_grad=True)
        z = L.zeros(4, dtype=L.complex128)
        im = z.imag
        z.real.copy_(x ** 2)
        assert im.requires_grad
        (im.sum() + (z * L.tensor(WEIGHTS)).abs().sum()).backward()
        grads.append(x.grad)
    assert_same(grads[0], grads[1], rtol=1e-12, check_stride=False)


@pytest.mark.parametrize("part", ["real", "imag"])
def test_real_views_of_a_complex_leaf_refuse_inplace_as_torch(part):
    T = oracle_torch()
    for L in (gt, T):
        z = L.tensor(WEIGHTS, requires_grad=True)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
            getattr(z[1:], part).mul_(2)


def _writes(z, w):
    """Writes through every kind of real view of a non-leaf complex tensor."""
    y = z * 1
    gt.view_as_real(y)[..., 1].mul_(3)
    y.real.mul_(w)
    y.imag[1:].add_(y.real[:-1].clone() * w[1:])     # a copy: mul saves its input
    return y


def _noncontiguous(values):
    return gt.tensor(values).t()[::2].requires_grad_()


def test_writes_through_real_views_pass_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(21)
    z = _noncontiguous(rng.standard_normal((3, 8)) + 1j * rng.standard_normal((3, 8)))
    w = _noncontiguous(rng.standard_normal((3, 8)))
    assert not z.is_contiguous() and z.dtype == gt.complex128
    assert gt.autograd.gradcheck(_writes, (z, w))
    assert gt.autograd.gradgradcheck(_writes, (z, w))


@pytest.mark.parametrize("view, dim", [("[2:2]", 0), ("[:, 1:1]", 1), ("[:, 3:]", 1),
                                       ("[4:]", 0), ("[4:]", 1), ("[:, 3:].t()", 0)])
def test_index_fill_on_an_empty_view_in_a_graph_fails_as_torch(view, dim):
    """The kernel runs on the view itself, whose storage (not an empty clone's) decides
    between the index check (IndexError) and index_fill_'s restride (RuntimeError)."""
    T = oracle_torch()
    outcomes = []
    for L in (gt, T):
        v = eval("L.zeros(4, 3, requires_grad=True).clone()" + view)
        version = v._version
        try:
            v.index_fill_(dim, L.tensor([0]), 1.0)
            outcomes.append(("ok", v._version - version, v.grad_fn.name()))
        except (RuntimeError, IndexError) as e:
            outcomes.append((type(e), str(e)))
    assert outcomes[0] == outcomes[1]
