"""special.exp_scaled, the float32 exponential by NumPy's exp2: values against float64 exp
(including zero, inf, nan and arguments past exp2's vector range, which take np.exp), in
place, and with a caller's lower bound."""
import numpy as np
import pytest

from glasstorch.backends.cpu import special


def _exact(z, factor):
    with np.errstate(all="ignore"):
        return np.exp(factor * z.astype(np.float64))


@pytest.mark.parametrize("factor", [1.0, -0.5, 2.0])
@pytest.mark.parametrize("low", [-80.0, -200.0])
def test_matches_float64_exp(factor, low):
    z = np.random.default_rng(0).uniform(low / abs(factor), 0, 5000).astype(np.float32)
    if factor < 0:
        z = -z
    want = _exact(z, factor)
    got = special.exp_scaled(z.copy(), factor)
    assert got.dtype == np.float32
    normal = want > np.finfo(np.float32).tiny
    np.testing.assert_allclose(got[normal], want[normal], rtol=2e-5)   # |factor z| 2^-23
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-45)


def test_special_values_and_in_place():
    z = np.array([0.0, -0.0, -np.inf, np.nan, -1e4, 3.0, -87.0, -88.0], np.float32)
    buf = z.copy()
    got = special.exp_scaled(buf, 1.0)
    assert got is buf
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(np.exp(z)))
        np.testing.assert_allclose(got, np.exp(z.astype(np.float64)), rtol=1e-6, atol=1e-44)
    ok = np.array([-1.0, -2.0], np.float32)
    np.testing.assert_allclose(special.exp_scaled(ok.copy(), 1.0, low=-2.0), np.exp(ok),
                               rtol=1e-6)


def test_float64_and_empty_take_np_exp():
    z = np.linspace(-700, 0, 101)
    np.testing.assert_array_equal(special.exp_scaled(z.copy(), 1.0), np.exp(z))
    assert special.exp_scaled(np.empty(0, np.float32), -0.5).size == 0
