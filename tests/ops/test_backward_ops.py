"""Operators PyTorch's autograd formulas call by name, and the overloads its C++ names:
select_backward, slice_backward, native_layer_norm_backward and add/sub/mul/div .Scalar,
against PyTorch (values, dtypes, strides) and, where differentiable, by float64 gradcheck on
non-contiguous inputs."""
import numpy as np
import pytest

import glasstorch as gt
from glasstorch.autograd import gradcheck, gradgradcheck
from oracle import assert_same, oracle_torch

rng = np.random.default_rng(7)


def _both(a, requires_grad=False):
    torch = oracle_torch()
    return (gt.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _non_contiguous(shape):
    """A float64 leaf that is a transposed view (strides not row-major)."""
    base = gt.tensor(rng.standard_normal(tuple(reversed(shape))))
    return base.t().requires_grad_() if len(shape) == 2 else base.requires_grad_()


@pytest.mark.parametrize("dim, index", [(0, 1), (1, -1), (-1, 2)])
def test_select_backward_as_torch(dim, index):
    torch = oracle_torch()
    sizes = [3, 4]
    g_shape = [s for i, s in enumerate(sizes) if i != dim % 2]
    g, t = _both(rng.standard_normal(g_shape))
    assert_same(gt.ops.aten.select_backward(g, sizes, dim, index),
                torch.ops.aten.select_backward(t, sizes, dim, index))


@pytest.mark.parametrize("dim, start, end, step", [(0, 1, 3, 1), (1, 0, 4, 2),
                                                   (-1, 1, 9223372036854775807, 2)])
def test_slice_backward_as_torch(dim, start, end, step):
    torch = oracle_torch()
    sizes = [3, 4]
    d = dim % 2
    g_shape = list(sizes)
    g_shape[d] = len(range(start, min(end, sizes[d]), step))
    g, t = _both(rng.standard_normal(g_shape))
    assert_same(gt.ops.aten.slice_backward(g, sizes, dim, start, end, step),
                torch.ops.aten.slice_backward(t, sizes, dim, start, end, step))


def test_select_and_slice_backward_gradcheck_on_non_contiguous_inputs():
    g = _non_contiguous((3, 4))
    assert gradcheck(lambda a: gt.ops.aten.select_backward(a, [2, 3, 4], 0, 1), (g,))
    assert gradgradcheck(lambda a: gt.ops.aten.select_backward(a, [2, 3, 4], 0, 1), (g,))
    h = _non_contiguous((3, 2))
    assert gradcheck(lambda a: gt.ops.aten.slice_backward(a, [3, 5], 1, 1, 5, 2), (h,))
    assert gradgradcheck(lambda a: gt.ops.aten.slice_backward(a, [3, 5], 1, 1, 5, 2), (h,))


@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
def test_native_layer_norm_backward_as_torch(dtype, kernel_path):
    torch = oracle_torch()
    x = rng.standard_normal((4, 3, 6))
    results = []
    for T in (gt, torch):
        d = getattr(T, dtype)
        inp, w, b = T.tensor(x).to(d), T.tensor(np.linspace(0.5, 1.5, 6)).to(d), \
            T.tensor(np.linspace(-1, 1, 6)).to(d)
        _, mean, rstd = T.native_layer_norm(inp, [6], w, b, 1e-5)
        grad = T.tensor(np.cos(x)).to(d)
        results.append(T.ops.aten.native_layer_norm_backward(grad, inp, [6], mean, rstd, w, b,
                                                             [True, True, True]))
    tol = 1e-12 if dtype == "float64" else 1e-5 if dtype == "float32" else 2e-2
    for ours, theirs in zip(*results):
        assert_same(ours, theirs, rtol=tol, atol=tol)


def test_native_layer_norm_backward_leaves_out_what_the_mask_does_not_ask_for(kernel_path):
    x = gt.tensor(rng.standard_normal((4, 6)))
    _, mean, rstd = gt.native_layer_norm(x, [6], None, None, 1e-5)
    dx, dw, db = gt.ops.aten.native_layer_norm_backward(gt.ones(4, 6, dtype=gt.float64), x,
                                                        [6], mean, rstd, None, None,
                                                        [True, True, True])
    assert tuple(dx.shape) == (4, 6) and dw is None and db is None
    meta = gt.ops.aten.native_layer_norm_backward(
        gt.ones(4, 6, device="meta"), x.to("meta"), [6], mean.to("meta"), rstd.to("meta"),
        gt.ones(6, device="meta"), None, [False, True, True])
    assert meta[0] is None and tuple(meta[1].shape) == (6,) and meta[2] is None


@pytest.mark.parametrize("name, args, kwargs", [
    ("add", (2.5,), {"alpha": 3}), ("sub", (2,), {"alpha": 2}), ("mul", (-1.5,), {}),
    ("div", (4,), {}), ("div", (4,), {"rounding_mode": "floor"})])
def test_scalar_overloads_as_torch(name, args, kwargs):
    torch = oracle_torch()
    overload = "Scalar_mode" if "rounding_mode" in kwargs else "Scalar"
    for values in (rng.standard_normal((3, 4)), np.arange(12).reshape(3, 4)):
        g, t = _both(values)
        ours = getattr(getattr(gt.ops.aten, name), overload)(g, *args, **kwargs)
        theirs = getattr(getattr(torch.ops.aten, name), overload)(t, *args, **kwargs)
        assert_same(ours, theirs, rtol=1e-12, atol=1e-12)


def test_scalar_overloads_gradcheck_on_non_contiguous_inputs():
    x = _non_contiguous((3, 4))
    aten = gt.ops.aten
    assert gradcheck(lambda a: aten.add.Scalar(a, 2, alpha=3), (x,))
    assert gradcheck(lambda a: aten.sub.Scalar(a, 2), (x,))
    assert gradcheck(lambda a: aten.mul.Scalar(a, -1.5), (x,))
    assert gradcheck(lambda a: aten.div.Scalar(a, 4), (x,))
    assert gradcheck(lambda a: aten.div.Scalar_mode(a, 4, rounding_mode=None), (x,))
    assert gradgradcheck(lambda a: aten.mul.Scalar(aten.div.Scalar(a, 3), 2), (x,))


def test_scalar_overload_in_place_form_refuses_a_result_it_cannot_hold():
    torch = oracle_torch()
    g, t = gt.arange(4), torch.arange(4)
    with pytest.raises(RuntimeError) as ours:
        gt.ops.aten.div_.Scalar(g, 2)
    with pytest.raises(RuntimeError) as theirs:
        torch.ops.aten.div_.Scalar(t, 2)
    assert str(ours.value) == str(theirs.value)
    assert g.tolist() == [0, 1, 2, 3]            # nothing half-written
