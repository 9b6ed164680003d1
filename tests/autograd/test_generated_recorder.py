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


def _graph(y):
    """The names of y's graph, breadth first, with each node's input numbers."""
    seen, todo = [], [y.grad_fn]
    while todo:
        node = todo.pop(0)
        seen.append(type(node).__name__)
        for nxt, nr in node.next_functions:
            seen.append(nr)
            if nxt is not None:
                todo.append(nxt)
    return seen


def test_an_ops_first_recording_gives_it_a_recording_kernel_that_records_the_same():
    from glasstorch.autograd.recording import autograd_kernel
    op = gt.ops.pointwise.elementwise.mul.functional
    op._recompute()                      # the general kernel again, as after a registration
    general = op.plain_cpu_grad
    results = []
    for _ in range(2):                   # the general kernel's call, then the new kernel's
        x, tx = _both([[0.5, -1.0], [2.0, 3.0]])
        w, tw = _both([[1.5, 0.25]], requires_grad=False)
        y, ty = x * w * 3, tx * tw * 3
        assert _graph(y) == _graph(ty)
        y.sum().backward()
        ty.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
        results.append((y.tolist(), x.grad.tolist()))
    fused = op.plain_cpu_grad
    assert fused is not general and "recording kernel of MulBackward0" in \
        fused.__code__.co_filename
    assert fused.func is autograd_kernel and fused.args == general.args
    assert results[0] == results[1]


@pytest.mark.parametrize("case", ["second_only", "no_grad", "list", "subclass", "number"])
def test_the_recording_kernels_unrolled_check_records_what_torch_does(case):
    x, tx = _both([1.0, -2.0, 0.5])
    v, tv = _both([3.0, 4.0, -1.0], requires_grad=False)
    for lib, a, b in ((gt, x, v), (torch, tx, tv)):
        for _ in range(2):               # before and after the op's recording kernel is made
            if case == "second_only":
                out = b.add(a, alpha=2)
            elif case == "no_grad":
                with lib.no_grad():
                    out = a * b
                assert not out.requires_grad and out.grad_fn is None
                out = a * b
            elif case == "list":
                out = lib.cat([b, a]) * 2
            elif case == "subclass":
                class Sub(type(a)):
                    pass
                out = b * a.as_subclass(Sub)
            else:
                out = a * 2.5
            assert out.requires_grad and out.grad_fn is not None
            out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_a_formulas_gradient_is_summed_to_its_inputs_shape_and_cast_to_its_dtype():
    x = gt.tensor([[1.0], [2.0]], dtype=gt.float32, requires_grad=True)
    y = gt.tensor([[0.5, -1.0, 3.0]], dtype=gt.float64, requires_grad=True)
    tx = torch.tensor([[1.0], [2.0]], dtype=torch.float32, requires_grad=True)
    ty = torch.tensor([[0.5, -1.0, 3.0]], dtype=torch.float64, requires_grad=True)
    (x * y).sum().backward()
    (tx * ty).sum().backward()
    for g, tg in ((x.grad, tx.grad), (y.grad, ty.grad)):
        assert g.shape == tg.shape and str(g.dtype) == str(tg.dtype)
        np.testing.assert_allclose(g.numpy(), tg.numpy())


def test_a_nodes_saved_values_read_as_torchs_until_released():
    x, tx = _both([1.0, -2.0])
    w, tw = _both([3.0, 0.5])
    for lib, a, b in ((gt, x, w), (torch, tx, tw)):
        prod, e = a * b, a.exp()
        assert prod.grad_fn._saved_self is not None
        np.testing.assert_allclose(prod.grad_fn._saved_self.detach().numpy(), [1.0, -2.0])
        np.testing.assert_allclose(prod.grad_fn._saved_other.detach().numpy(), [3.0, 0.5])
        np.testing.assert_allclose(e.grad_fn._saved_result.detach().numpy(),
                                   np.exp([1.0, -2.0]))
        assert (a * 2).grad_fn._saved_other == 2
        assert not hasattr(prod.grad_fn, "_saved_nothing_by_this_name")
        (prod.sum() + e.sum()).backward()
        with pytest.raises(RuntimeError, match="after they have already been freed"):
            prod.grad_fn._saved_self
