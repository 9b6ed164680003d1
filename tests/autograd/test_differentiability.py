"""Ops PyTorch declares not differentiable (results never require grad) or without a formula
(results require grad, backward raises): glasstorch declares the same, and behaves the same."""
import warnings

import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")

SPECIAL_UNARY = ["bessel_j0", "bessel_j1", "airy_ai", "bessel_y0", "bessel_y1",
                 "spherical_bessel_j0", "modified_bessel_i0", "modified_bessel_i1",
                 "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
                 "scaled_modified_bessel_k1"]
SPECIAL_BINARY = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                  "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                  "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                  "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                  "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]


def _cases(lib):
    x = lib.tensor([0.5, -1.5, 2.0, 3.0], requires_grad=True)
    i = lib.tensor([0, 1])
    cases = {
        "floor_divide": lambda: lib.floor_divide(x, 2),
        "heaviside": lambda: lib.heaviside(x, x),
        "signbit": lambda: lib.signbit(x),
        "isnan": lambda: lib.isnan(x),
        "gt": lambda: x > 0,
        "histc": lambda: lib.histc(x, 4),
        "histogram": lambda: lib.histogram(x, 3)[0],
        "bincount": lambda: lib.bincount(lib.tensor([0, 1, 1, 3]), weights=x),
        "view.dtype": lambda: x.view(lib.int32),
        "multinomial": lambda: lib.multinomial(x.abs(), 2),
        "scatter.value_reduce": lambda: x.scatter(0, i, 2.0, reduce="add"),
        "scatter.reduce": lambda: x.scatter(0, i, x[:2], reduce="multiply"),
        "searchsorted": lambda: lib.searchsorted(x.detach().sort()[0], x),
        "argmax": lambda: x.argmax(),
        "count_nonzero": lambda: lib.count_nonzero(x),
    }
    for name in SPECIAL_UNARY:
        cases[name] = (lambda f: lambda: f(x))(getattr(lib.special, name))
    for name in SPECIAL_BINARY:
        cases[name] = (lambda f: lambda: f(x, 2))(getattr(lib.special, name))
    return cases


def _behaviour(lib, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = _cases(lib)[name]()
    if not out.requires_grad:
        return "no grad"
    with pytest.raises(RuntimeError, match="not implemented"):
        out.sum().backward()
    return "backward raises"


@pytest.mark.parametrize("name", list(_cases(gt)))
def test_requires_grad_and_backward_match_pytorch(name):
    assert _behaviour(gt, name) == _behaviour(torch, name)


def test_out_variant_of_a_non_differentiable_op_accepts_inputs_that_require_grad():
    x = gt.tensor([0.5, 1.0], requires_grad=True)
    out = gt.empty(2)
    assert gt.special.bessel_j0(x, out=out) is out and not out.requires_grad
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        gt.exp(x, out=gt.empty(2))          # a differentiable op's out= still refuses


def test_special_polynomials_take_pytorch_argument_names():
    x = gt.tensor([0.5, 2.0])
    expected = torch.special.chebyshev_polynomial_t(x=torch.tensor([0.5, 2.0]), n=3)
    assert gt.special.chebyshev_polynomial_t(x=x, n=3).tolist() == expected.tolist()
