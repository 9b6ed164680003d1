"""Nodes recorded and run through the straight-line code generated per derivative
(autograd/recording._recorder_of) save and pass what PyTorch's do: each plan kind (values,
results, shapes of a tensor list, the input mask, `needs`), and a hook registered on a node
after it was recorded still runs."""
import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")


def _both(values, requires_grad=True):
    a = np.array(values, dtype=np.float64)
    return gt.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def test_value_result_shape_and_mask_kinds_match_torch():
    (x, tx), (y, ty) = _both([[0.5, -1.0], [2.0, 3.0]]), _both([[1.5, 0.25]])
    for lib, a, b in ((gt, x, y), (torch, tx, ty)):
        out = (lib.cat([a, b]) * a.sum()).exp()      # cat: shapes of a list; exp: its result
        lib.addmm(out[:2], a, b.t().expand(2, 2)).sum().backward()  # addmm: the input mask
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-12)


def test_an_argument_only_unwanted_gradients_read_is_not_saved():
    # mul saves self for other's gradient only: with other not requiring grad, writing self
    # in place after the product is no error; with other requiring grad it is
    for other_grad in (False, True):
        x, tx = _both([1.0, 2.0])
        w, tw = _both([3.0, 4.0], requires_grad=other_grad)
        for a, b in ((x, w), (tx, tw)):
            h = a * 1
            out = h * b
            h.add_(1)
            if other_grad:
                with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                    out.sum().backward()
            else:
                out.sum().backward()
        if not other_grad:
            np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_a_hook_registered_after_recording_runs():
    seen = {}
    x, tx = _both([1.0, -2.0])
    for name, a in (("gt", x), ("torch", tx)):
        y = a.exp()
        z = y.sin().sum()
        y.grad_fn.register_prehook(lambda grads, name=name: seen.update(
            {name + "pre": grads[0].tolist()}))
        y.grad_fn.register_hook(lambda gi, go, name=name: (gi[0] * 2,))
        z.backward()
    assert seen["gtpre"] == pytest.approx(seen["torchpre"])
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
