"""Custom autograd.Function: recording, ctx features and errors, against PyTorch."""
import numpy as np
import pytest

import glasstorch as gt
from oracle import assert_same, oracle_torch

rng = np.random.default_rng(0)


def both():
    return (gt, oracle_torch())


def functions(L):
    """The same custom Functions written for glasstorch or torch."""
    class MyMul(L.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k):
            ctx.save_for_backward(a, b)
            ctx.k = k
            return a * b * k

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b * ctx.k, g * a * ctx.k, None

    class Exp(L.autograd.Function):
        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            out, = ctx.saved_tensors
            return g * out

    class Split(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            idx = L.tensor([0, 1])
            ctx.mark_non_differentiable(idx)
            return x * 2, idx, x * 3

        @staticmethod
        def backward(ctx, g1, g2, g3):
            ctx.seen = (g1, g2, g3)
            return g1 * 2 + g3 * 3

    return MyMul, Exp, Split


def test_forward_backward_values_and_graph():
    res = []
    for L in both():
        MyMul, Exp, _ = functions(L)
        data = rng.standard_normal((2, 3)) if L is gt else res[0][0]
        a = L.tensor(data, requires_grad=True)
        b = L.tensor(data.T.copy()).t().requires_grad_()   # non-contiguous input
        y = Exp.apply(MyMul.apply(a, b, 2.0))
        assert y.grad_fn.name() == "ExpBackward" and not y.is_leaf
        mul = y.grad_fn.next_functions[0][0]
        assert mul.name() == "MyMulBackward" and len(mul.next_functions) == 2
        assert mul.needs_input_grad == (True, True, False)
        y.sum().backward()
        res.append((data, y.detach(), a.grad, b.grad))
    for g, t in zip(res[0][1:], res[1][1:]):
        assert_same(g, t)


def test_needs_input_grad_and_no_recording_without_grad():
    MyMul, _, _ = functions(gt)
    a = gt.ones(2, requires_grad=True)
    y = MyMul.apply(a, gt.ones(2), 1.0)
    assert y.grad_fn.needs_input_grad == (True, False, False)
    assert y.grad_fn.next_functions[1] == (None, 0)
    z = MyMul.apply(gt.ones(2), gt.ones(2), 1.0)
    assert z.grad_fn is None and not z.requires_grad
    with gt.no_grad():
        assert MyMul.apply(a, a, 1.0).grad_fn is None


def test_forward_runs_without_recording():
    class Inner(gt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            inner = x * 2
            assert inner.grad_fn is None and not gt.is_grad_enabled()
            return inner

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = gt.ones(2, requires_grad=True)
    Inner.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_non_differentiable_and_materialized_grads():
    seen = []
    for L in both():
        _, _, Split = functions(L)
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y, idx, _ = Split.apply(x)
        assert not idx.requires_grad and y.requires_grad
        y.sum().backward()
        seen.append(y.grad_fn.seen)
        assert x.grad.tolist() == [2.0, 2.0]
    for g, t in zip(*seen):
        assert_same(g, t)


def test_set_materialize_grads_false():
    for L in both():
        class NoMat(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                ctx.seen = g2
                return g1 * 2

        x = L.ones(2, requires_grad=True)
        y, _ = NoMat.apply(x)
        y.sum().backward()
        assert y.grad_fn.seen is None


def test_returned_input_is_an_alias():
    for L in both():
        class Ident(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        x = L.ones(2, requires_grad=True)
        y = Ident.apply(x)
        assert y is not x and y._base is x and y.grad_fn.name() == "IdentBackward"


def test_saved_tensor_version_check_matches_torch():
    msgs = []
    for L in both():
        _, Exp, _ = functions(L)
        x = L.ones(2, requires_grad=True)
        y = Exp.apply(x)
        with L.no_grad():
            y.mul_(2)
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1] and "output 0 of Exp," in msgs[0]


def test_saved_tensors_freed_after_backward():
    MyMul, _, _ = functions(gt)
    a = gt.ones(2, requires_grad=True)
    y = MyMul.apply(a, a, 1.0).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


BAD_RETURNS = ["(g, g)", "(3, None)", "(g.sum().expand(5), None)", "(g,)", "(g, None, g)"]


@pytest.mark.parametrize("ret", BAD_RETURNS)
def test_bad_backward_returns_match_torch(ret):
    msgs = []
    for L in both():
        class F(L.autograd.Function):
            @staticmethod
            def forward(ctx, a, k):
                return a * k

            @staticmethod
            def backward(ctx, g):
                return eval(ret)

        a = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        with pytest.raises(RuntimeError) as info:
            F.apply(a, 2.0).sum().backward()
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("ret", ["(g.sum().expand(1, 2), None)", "(g, None, None)",
                                 "(g.float(), None)"])
def test_lenient_backward_returns_match_torch(ret):
    grads = []
    for L in both():
        class F(L.autograd.Function):
            @staticmethod
            def forward(ctx, a, k):
                return a * k

            @staticmethod
            def backward(ctx, g):
                return eval(ret)

        a = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        F.apply(a, 2.0).sum().backward()
        grads.append(a.grad)
    assert_same(*grads)


def test_missing_backward_and_instantiation():
    class NoBackward(gt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    x = gt.ones(2, requires_grad=True)
    with pytest.raises(NotImplementedError, match="You must implement either the backward"):
        NoBackward.apply(x).sum().backward()
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        NoBackward()


def test_double_backward_through_custom_function():
    MyMul, _, _ = functions(gt)
    x = gt.tensor([1.0, 2.0], dtype=gt.float64, requires_grad=True)
    assert gt.autograd.gradgradcheck(lambda a: MyMul.apply(a, a.exp(), 0.5), (x,))
    (g,) = gt.autograd.grad(MyMul.apply(x, x, 1.0).sum(), x, create_graph=True)   # 2x
    (h,) = gt.autograd.grad(g.sum(), x)
    assert h.tolist() == [2.0, 2.0]
