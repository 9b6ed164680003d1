"""Autograd refuses complex outputs of the operators PyTorch has no complex derivative for
(autograd/complex_support.py), raising after the op ran, with PyTorch's class and message;
the operators it differentiates for complex, in-place variants and calls without grad are
left alone. Every case runs in both libraries."""
import pytest

import glasstorch as gt
from glasstorch.autograd.complex_support import NOT_DIFFERENTIABLE_FOR_COMPLEX
from tests.oracle import oracle_torch


def _z(T, *shape):
    return T.randn(*shape, dtype=T.complex64).requires_grad_()


# table entry -> a call that reaches it with a complex output requiring grad (an empty
# input where PyTorch's kernel has no complex loop: it refuses complex before autograd)
REFUSED = {
    "_softmax": lambda T: T.softmax(_z(T, 1, 0), 0),
    "_log_softmax": lambda T: T.nn.functional.log_softmax(_z(T, 2, 0), 1),
    "cummax": lambda T: T.cummax(_z(T, 1, 0), 1),
    "cummin": lambda T: T.cummin(_z(T, 0), 0),
    "amax": lambda T: T.amax(_z(T, 1, 0), 0),
    "amin": lambda T: T.amin(_z(T, 1, 0), 0),
    "silu": lambda T: T.nn.functional.silu(_z(T, 3)),
    "nan_to_num": lambda T: T.nan_to_num(_z(T, 3)),
    "select_scatter": lambda T: T.select_scatter(_z(T, 2, 3), _z(T, 3), 0, 0),
    "slice_scatter": lambda T: T.slice_scatter(_z(T, 4, 3), _z(T, 2, 3), 0, 0, 2),
    "embedding": lambda T: T.nn.functional.embedding(T.tensor([0, 1]), _z(T, 3, 2)),
    "scatter_reduce": lambda T: _z(T, 3).scatter_reduce(0, T.tensor([0]), _z(T, 1), "sum"),
    "lift_fresh_copy": lambda T: T.ops.aten.lift_fresh_copy(_z(T, 3)),
    "_to_sparse": lambda T: _z(T, 2, 2).to_sparse(),
    "geqrf": lambda T: T.geqrf(_z(T, 2, 2)),
}

ALLOWED = {
    "logsumexp": lambda T: T.logsumexp(_z(T, 3), 0),
    "sigmoid": lambda T: T.sigmoid(_z(T, 3)),
    "conv1d": lambda T: T.nn.functional.conv1d(_z(T, 1, 1, 4), _z(T, 1, 1, 2)),
    "channel_shuffle": lambda T: T.nn.functional.channel_shuffle(_z(T, 1, 4, 1), 2),
    "silu_": lambda T: T.nn.functional.silu(_z(T, 3).clone(), inplace=True),
    "nan_to_num_": lambda T: _z(T, 3).clone().nan_to_num_(),
    "amax of a real": lambda T: T.amax(T.randn(3, requires_grad=True), 0),
    "amax under no_grad": lambda T: _no_grad(T, lambda: T.amax(_z(T, 1, 0), 0)),
    "softmax without grad": lambda T: T.softmax(T.empty(1, 0, dtype=T.complex64), 0),
}


def _no_grad(T, f):
    with T.no_grad():
        return f()


def _outcome(call, T):
    try:
        call(T)
    except Exception as e:
        return type(e).__name__, str(e)
    return None


def test_every_table_entry_has_a_case():
    assert set(REFUSED) == set(NOT_DIFFERENTIABLE_FOR_COMPLEX)


@pytest.mark.parametrize("name", REFUSED)
def test_refused_as_pytorch(name):
    torch = oracle_torch()
    expected = ("RuntimeError", f"{name} does not support "
                                "automatic differentiation for outputs with complex dtype.")
    assert _outcome(REFUSED[name], torch) == expected
    assert _outcome(REFUSED[name], gt) == expected


@pytest.mark.parametrize("name", ALLOWED)
def test_allowed_as_pytorch(name):
    torch = oracle_torch()
    assert _outcome(ALLOWED[name], torch) is None
    assert _outcome(ALLOWED[name], gt) is None


def test_the_campaign_program():
    # a complex tensor gets a history from a real one that requires grad (div_), then
    # softmax: PyTorch refuses after its kernel ran (seed 2000000)
    v1 = gt.empty(1, 1, 0, dtype=gt.complex64)
    v2 = gt.tensor([0.81]).reshape(1, 1, 1).requires_grad_()
    v3 = v1.div_(v2)
    with pytest.raises(RuntimeError, match="^_softmax does not support automatic "
                                           "differentiation for outputs with complex dtype"):
        gt.softmax(v3, 0)
