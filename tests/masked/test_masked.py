"""torch.masked against PyTorch: every reduction and normalization with masks that broadcast,
rows masked out entirely (identities, nan), integer inputs, gradients; MaskedTensor basics.
(OpInfo's own samples for each function run in tests/ops/test_op_db.py.)"""
import warnings

import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

X = np.array([[1.5, -2.0, 3.0, 0.5], [4.0, 5.0, -6.0, 2.0], [0.25, 7.0, 8.0, -1.0]])
MASK = np.array([[True, False, True, True], [False, False, False, False],
                 [True, True, False, True]])
ROW_MASK = np.array([True, False, True, False])          # broadcast over the rows

REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "norm", "var", "std", "logsumexp"]


def _both(x, dtype="float64"):
    return gt.tensor(x, dtype=getattr(gt, dtype)), torch.tensor(x, dtype=getattr(torch, dtype))


def _check(ours, theirs):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6,
                               atol=1e-9, equal_nan=True)


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("mask", [MASK, ROW_MASK, None], ids=["full", "broadcast", "none"])
@pytest.mark.parametrize("dim,keepdim", [(1, False), (0, True), (None, False), ((0, 1), True)])
def test_reductions(name, mask, dim, keepdim):
    (a, b), kw = _both(X), {}
    if mask is not None:
        kw = {"mask": gt.tensor(mask)}, {"mask": torch.tensor(mask)}
    else:
        kw = {}, {}
    _check(getattr(gt.masked, name)(a, dim=dim, keepdim=keepdim, **kw[0]),
           getattr(torch.masked, name)(b, dim=dim, keepdim=keepdim, **kw[1]))


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin", "cumsum", "cumprod",
                                  "argmax", "argmin", "median"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_along_one_dim(name, dim):
    a, b = _both(X)
    _check(getattr(gt.masked, name)(a, dim, mask=gt.tensor(MASK)),
           getattr(torch.masked, name)(b, dim, mask=torch.tensor(MASK)))


def test_normalize_and_logaddexp():
    a, b = _both(X)
    _check(gt.masked.normalize(a, 2.0, 1, mask=gt.tensor(MASK)),
           torch.masked.normalize(b, 2.0, 1, mask=torch.tensor(MASK)))
    _check(gt.masked.logaddexp(a, a * 2, input_mask=gt.tensor(MASK)),
           torch.masked.logaddexp(b, b * 2, input_mask=torch.tensor(MASK)))


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_integer_inputs(dtype):
    a, b = _both((X * 2).astype(np.int64) > 0 if dtype == "bool" else (X * 2).astype(int), dtype)
    m, tm = gt.tensor(MASK), torch.tensor(MASK)
    for name in ("sum", "prod", "amax", "amin"):
        if dtype == "bool" and name in ("amax", "amin"):
            continue
        _check(getattr(gt.masked, name)(a, 1, mask=m), getattr(torch.masked, name)(b, 1, mask=tm))
    with pytest.raises(ValueError, match="Could not infer output dtype"):
        gt.masked.mean(a, 1, mask=m)


def test_errors():
    a = gt.tensor(X)
    with pytest.raises(IndexError, match="mask dimensionality higher"):
        gt.masked.sum(a, 0, mask=gt.ones(2, 3, 4, dtype=gt.bool))
    with pytest.raises(IndexError, match="Dimension out of range"):
        gt.masked.sum(a, 2, mask=gt.tensor(MASK))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        gt.masked.sum(a, (1, 1), mask=gt.tensor(MASK))
    with pytest.raises(ValueError, match="no fully masked out rows"):
        gt.masked.median(a.long(), 1, mask=gt.tensor(MASK))


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "norm", "std", "logsumexp",
                                  "softmax", "normalize"])
def test_gradients_reach_masked_in_elements_only(name):
    a, b = _both(X)
    a.requires_grad_(), b.requires_grad_()
    args = (2.0, 1) if name == "normalize" else (1,)
    out = getattr(gt.masked, name)(a, *args, mask=gt.tensor(ROW_MASK))
    ref = getattr(torch.masked, name)(b, *args, mask=torch.tensor(ROW_MASK))
    w = np.random.default_rng(0).standard_normal(tuple(ref.shape))
    (out * gt.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    _check(a.grad, b.grad)
    assert float(a.grad[:, ~ROW_MASK].abs().sum()) == 0
    assert gt.autograd.gradcheck(lambda t: getattr(gt.masked, name)(
        t, *args, mask=gt.tensor(MASK[0])), (a.detach().clone().requires_grad_(),))


# ---- MaskedTensor ----------------------------------------------------------------------------

def _mt(lib, x=X, m=MASK, **kw):
    return lib.masked.masked_tensor(lib.tensor(x), lib.tensor(m), **kw)


def test_masked_tensor_printing_and_accessors():
    ours, theirs = _mt(gt), _mt(torch)
    assert repr(ours) == repr(theirs)
    assert repr(ours.sum()) == repr(theirs.sum())
    assert repr(ours.amax(1)) == repr(theirs.amax(1))
    assert gt.masked.is_masked_tensor(ours) and not gt.masked.is_masked_tensor(gt.tensor(X))
    np.testing.assert_array_equal(ours.get_mask().numpy(), MASK)
    np.testing.assert_array_equal(ours.get_data().numpy(), X)
    np.testing.assert_array_equal(ours.to_tensor(0.0).numpy(), theirs.to_tensor(0.0).numpy())
    with pytest.warns(UserWarning, match="prototype stage"):
        gt.masked.masked_tensor(gt.tensor(X), gt.tensor(MASK))


def test_masked_tensor_ops_keep_the_mask():
    ours, theirs = _mt(gt), _mt(torch)
    for f in (lambda t: t.exp(), lambda t: (t * 2 + 1).abs(), lambda t: t.sin() - t,
              lambda t: t.transpose(0, 1), lambda t: t[1:], lambda t: t.mean(0),
              lambda t: t.sum((0, 1)), lambda t: t.prod(1), lambda t: t.var(1)):
        a, b = f(ours), f(theirs)
        np.testing.assert_array_equal(a.get_mask().numpy(), b.get_mask().numpy())
        keep = b.get_mask().numpy()
        np.testing.assert_allclose(a.get_data().detach().numpy()[keep],
                                   b.get_data().detach().numpy()[keep], rtol=1e-6)
    with pytest.raises(ValueError, match="Input masks must match"):
        ours + _mt(gt, m=~MASK)
    with pytest.raises(TypeError, match="mask must have dtype bool"):
        gt.masked.masked_tensor(gt.tensor(X), gt.tensor(MASK).long())
    with pytest.raises(ValueError, match="data.size\\(\\) must equal mask.size\\(\\)"):
        gt.masked.masked_tensor(gt.tensor(X), gt.tensor(MASK[:, :2]))


def test_masked_tensor_gradients_are_masked():
    ours, theirs = _mt(gt, requires_grad=True), _mt(torch, requires_grad=True)
    (ours.exp() * 2).sum().backward()
    (theirs.exp() * 2).sum().backward()
    assert gt.masked.is_masked_tensor(ours.grad)
    assert repr(ours.grad) == repr(theirs.grad)
    grads = []
    for lib in (gt, torch):
        data = lib.tensor(X, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.masked.as_masked_tensor(data * 3, lib.tensor(MASK)).sum().backward()
        grads.append(repr(data.grad))          # a MaskedTensor in both
    assert grads[0] == grads[1] and "--" in grads[0]
