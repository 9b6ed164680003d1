"""functionalize against PyTorch's: same results and input mutations, and a make_fx graph
whose only mutation is the final copy_ into a mutated input."""
import numpy as np
import pytest

import glasstorch as gt
from glasstorch.fx.experimental.proxy_tensor import make_fx
from oracle import assert_same, oracle_torch


def program(L):
    def f(x, w):
        y = x.clone()
        y.add_(1)
        v = y[1:]
        v.mul_(w[0])
        v[0].sub_(10)
        x.sub_(1)                       # an input mutation
        z = L.zeros(4)
        z[0] = 5
        a, b = y.split(2)
        b.add_(100)
        L.mul(y, 2, out=z)
        return y * z.sum(), v, w.exp_()
    return f


def test_values_and_input_mutations_match_pytorch():
    T = oracle_torch()
    x, w = np.arange(4.0), np.array([2.0, 3.0])
    results = []
    for L in (gt, T):
        xi, wi = L.tensor(x), L.tensor(w)
        out = L.func.functionalize(program(L))(xi, wi)
        results.append((out, xi, wi))
    for a, e in zip(results[0][0] + results[0][1:], results[1][0] + results[1][1:]):
        assert_same(a, e, check_stride=False)


def test_graph_has_no_mutation_but_the_final_copies():
    g = make_fx(gt.func.functionalize(program(gt)))(gt.arange(4.0), gt.tensor([2.0, 3.0]))
    targets = [str(n.target) for n in g.graph.nodes if n.op == "call_function"]
    mutating = [t for t in targets if t.startswith("aten.") and t.split(".")[1].endswith("_")]
    assert mutating == ["aten.copy_.default", "aten.copy_.default"], targets
    outputs = [n for n in g.graph.nodes if n.op == "call_function"][-2:]
    assert all(str(n.target) == "aten.copy_.default" for n in outputs)
    plain = make_fx(program(gt))(gt.arange(4.0), gt.tensor([2.0, 3.0]))
    assert any(str(n.target).endswith("add_.Tensor") for n in plain.graph.nodes)


def test_results_equal_the_original_function():
    f = program(gt)
    x1, x2 = gt.arange(4.0), gt.arange(4.0)
    w1, w2 = gt.tensor([2.0, 3.0]), gt.tensor([2.0, 3.0])
    expected = f(x1, w1)
    actual = gt.func.functionalize(f)(x2, w2)
    for a, e in zip(actual + (x2, w2), expected + (x1, w1)):
        assert gt.equal(a, e)


def test_bad_remove_argument():
    with pytest.raises(RuntimeError, match="received invalid argument for remove=views"):
        gt.func.functionalize(lambda x: x, remove="views")
