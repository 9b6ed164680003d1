"""Complex pow at a zero base, as PyTorch's kernel (C's cpow, exp(y * log(x))): 0 ** 0 is
nan, 0 ** y is inf+nanj for Re(y) < 0 and -0j for Re(y) > 0, for a tensor exponent, a
scalar base and the scalar exponents PyTorch does not compute by multiplication."""
import cmath
import math

import numpy as np
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch

EXPONENTS = [0, 1, 2, 0.5, -1, -2, 1j, 1 + 1j, -1 + 1j, 0.5 - 2j, -0.0]
ZEROS = [0j, complex(-0.0, 0.0), complex(0.0, -0.0)]


def _same(got, want) -> bool:
    """Equal, NaN parts matching NaN parts, zeros' signs included."""
    for a, b in ((got.real, want.real), (got.imag, want.imag)):
        if math.isnan(a) or math.isnan(b):
            if math.isnan(a) != math.isnan(b):
                return False
        elif a != b or math.copysign(1, a) != math.copysign(1, b):
            return False
    return True


def _cpow(x: complex, y: complex) -> complex:
    with np.errstate(all="ignore"):
        return complex(np.exp(np.complex128(y) * np.log(np.complex128(x))))


@pytest.mark.parametrize("dtype", [gt.complex64, gt.complex128])
def test_tensor_exponent_at_zero_is_cpow(dtype):
    x = gt.tensor(ZEROS * len(EXPONENTS), dtype=dtype)
    y = gt.tensor([e for e in EXPONENTS for _ in ZEROS], dtype=dtype)
    got = (x ** y).tolist()
    want = [_cpow(a, b) for a, b in zip(x.tolist(), y.tolist())]
    assert all(_same(g, w) for g, w in zip(got, want)), (got, want)
    assert cmath.isnan((gt.zeros(1, dtype=dtype) ** gt.zeros(1, dtype=dtype)).item())


@pytest.mark.parametrize("dtype", [gt.complex64, gt.complex128])
def test_against_torch_every_form(dtype):
    torch = oracle_torch()
    td = getattr(torch, str(dtype).split(".")[-1])
    values = [0j, complex(-0.0, 0.0), 1 + 1j, -2 + 0.5j, 3.0]
    for e in EXPONENTS + [3, 1.5, -0.5, 0j, 0.0]:
        results = []
        for lib, d in ((gt, dtype), (torch, td)):
            x = lib.tensor(values, dtype=d)
            results.append([(x ** lib.full((5,), e, dtype=d)).tolist(),
                            (x ** lib.tensor(e, dtype=d)).tolist(),
                            (x ** e).tolist(), (e ** x).tolist(),
                            (lib.zeros(5) ** x.new_full((5,), e)).tolist()])
        for ours, theirs in zip(*results):
            for a, b in zip(ours, theirs):
                if a == 0 or b == 0 or cmath.isnan(a) or cmath.isnan(b) or cmath.isinf(a):
                    # zeros' signs are compared where PyTorch multiplies (x * x) too
                    assert _same(a, b) or (a == b == 0 and e in (2, 3, 0.5)), (e, a, b)
                else:
                    assert cmath.isclose(a, b, rel_tol=1e-5), (e, a, b)


def test_scalar_exponent_zero_is_one():
    # PyTorch's x ** 0 is 1 for a Python number exponent, whatever x (nan included)
    x = gt.tensor([0j, complex("nan+nanj")])
    assert (x ** 0).tolist() == [1 + 0j, 1 + 0j]
