"""Special functions NumPy lacks (erf, erfc, erfinv, lgamma, digamma), vectorised.

Each takes and returns float64 arrays; kernels for narrower dtypes compute here and round.
Edge values follow PyTorch: lgamma is +inf at poles and +-inf, digamma is nan at negative
integers and -inf/+inf at +0/-0, erfinv is +-inf at +-1 and nan outside [-1, 1].
"""
from __future__ import annotations

import numpy as np

_SQRT_PI_INV = 0.56418958354775628695    # 1 / sqrt(pi)
_TWO_OVER_SQRT_PI = 1.1283791670955126

# W. J. Cody's rational approximations (Math. Comp. 1969; netlib specfun CALERF).
_ERF_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
          3.20937758913846947e03, 1.85777706184603153e-1)
_ERF_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
          2.84423683343917062e03)
_ERFC_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
           2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
           2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_ERFC_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
           1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
           3.43936767414372164e03, 1.23033935480374942e03)
_ERFC_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
           1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_ERFC_Q = (2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
           6.05183413124413191e-2, 2.33520497626869185e-3)
_ERF_SMALL = 0.46875
_ERFC_ZERO = 27.3            # erfc is below half the smallest subnormal beyond this


def _erf_small(x):
    """erf on |x| <= 0.46875."""
    z = x * x
    num, den = _ERF_A[4] * z, z
    for a, b in zip(_ERF_A[:3], _ERF_B[:3]):
        num = (num + a) * z
        den = (den + b) * z
    return x * (num + _ERF_A[3]) / (den + _ERF_B[3])


def _times_exp_minus_square(r, y):
    """r * exp(-y*y) without the rounding error of forming y*y (Cody's splitting)."""
    hi = np.trunc(y * 16.0) / 16.0
    return r * np.exp(-(y - hi) * (y + hi)) * np.exp(-hi * hi)


def _erfc_positive(y):
    """erfc on y > 0.46875 (nan stays nan, large y gives 0)."""
    out = np.empty_like(y)
    mid = y <= 4.0
    ym = y[mid]
    num, den = _ERFC_C[8] * ym, ym
    for c, d in zip(_ERFC_C[:7], _ERFC_D[:7]):
        num = (num + c) * ym
        den = (den + d) * ym
    out[mid] = _times_exp_minus_square((num + _ERFC_C[7]) / (den + _ERFC_D[7]), ym)
    far = ~mid
    yf = y[far]
    with np.errstate(all="ignore"):
        z = 1.0 / (yf * yf)
        num, den = _ERFC_P[5] * z, z
        for p, q in zip(_ERFC_P[:4], _ERFC_Q[:4]):
            num = (num + p) * z
            den = (den + q) * z
        r = z * (num + _ERFC_P[4]) / (den + _ERFC_Q[4])
        r = _times_exp_minus_square((_SQRT_PI_INV - r) / yf, yf)
    out[far] = np.where(yf >= _ERFC_ZERO, 0.0, r)
    return out


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, accurate to a few ulp in float64."""
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    y = np.abs(x)
    small = y <= _ERF_SMALL
    out[small] = _erf_small(x[small])
    big = ~small
    out[big] = np.copysign(1.0 - _erfc_positive(y[big]), x[big])
    return out


def erfc(x: np.ndarray) -> np.ndarray:
    """The complementary error function 1 - erf(x), without cancellation for large x."""
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    y = np.abs(x)
    small = y <= _ERF_SMALL
    out[small] = 1.0 - _erf_small(x[small])
    big = ~small
    tail = _erfc_positive(y[big])
    out[big] = np.where(x[big] < 0, 2.0 - tail, tail)
    return out


# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2010): a single-precision
# starting point, refined to double precision by Halley steps on erf in the centre and
# Newton steps on log(erfc) in the tails (where Giles' formula is far off near +-1).
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(coeffs, w):
    p = np.full_like(w, coeffs[0])
    for c in coeffs[1:]:
        p = p * w + c
    return p


def erfinv(y: np.ndarray) -> np.ndarray:
    """Inverse error function: Giles' approximation refined against erf (or erfc)."""
    y = np.asarray(y, np.float64)
    a = np.abs(y)
    x = np.empty_like(a)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - a) * (1.0 + a))
        central = w < 5.0
        x[central] = _horner(_GILES_CENTRAL, w[central] - 2.5) * a[central]
        x[~central] = _horner(_GILES_TAIL, np.sqrt(w[~central]) - 3.0) * a[~central]
        inner = a <= 0.5           # then x < 0.477, inside erf's first interval
        xi, ai = x[inner], a[inner]
        step = (_erf_small(xi) - ai) / (_TWO_OVER_SQRT_PI * np.exp(-xi * xi))
        x[inner] = xi - step / (1.0 + xi * step)     # one Halley step: 1e-7 -> 1e-20
        outer = (a > 0.5) & (a < 1.0)
        xo = x[outer]
        log_q = np.log(1.0 - a[outer])        # 1 - a is exact here (Sterbenz)
        for _ in range(6):      # Newton on log erfc(x) = log(1 - a): quadratic even far out
            e = _erfc_positive(xo)
            step = (np.log(e) - log_q) * e / (_TWO_OVER_SQRT_PI * np.exp(-xo * xo))
            xo = xo + step
            if not (np.abs(step) > 1e-15 * xo).any():
                break
        x[outer] = xo
    x[a == 1.0] = np.inf
    x[(a > 1.0) | np.isnan(a)] = np.nan
    return np.copysign(x, y)


# Lanczos approximation, g = 7, n = 9 (relative error ~1e-15 on Re z > 0.5).
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028,
            771.32342877765313, -176.61502916214059, 12.507343278686905,
            -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.91893853320467274178
_LOG_PI = 1.1447298858494002


def _lgamma_lanczos(x):
    """log Gamma(x) for x >= 0.5."""
    z = x - 1.0
    s = np.full_like(z, _LANCZOS[0])
    for k, c in enumerate(_LANCZOS[1:], 1):
        s = s + c / (z + k)
    t = z + _LANCZOS_G + 0.5
    return _HALF_LOG_2PI + (z + 0.5) * np.log(t) - t + np.log(s)


def _sinpi(x):
    """sin(pi * x), accurate for large |x| (reduced modulo 2 first); poles are handled by
    the callers, since sin(pi * n) is not exactly 0 in floating point."""
    r = np.fmod(x, 2.0)
    return np.sin(np.pi * r)


def _zeta_minus_one(kmax: int) -> tuple:
    """zeta(k) - 1 for k = 2..kmax by Euler-Maclaurin summation (error below 1e-17)."""
    n = 10
    bernoulli = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)
    out = []
    for s in range(2, kmax + 1):
        total = sum(m ** -s for m in range(2, n)) + n ** (1 - s) / (s - 1) + 0.5 * n ** -s
        rising, factorial = float(s), 2.0
        for j, b in enumerate(bernoulli, 1):
            total += b / factorial * rising * n ** (-s - 2 * j + 1)
            rising *= (s + 2 * j - 1) * (s + 2 * j)
            factorial *= (2 * j + 1) * (2 * j + 2)
        out.append(total)
    return tuple(out)


_EULER_GAMMA = 0.57721566490153286061
_ZM1 = _zeta_minus_one(32)
# Taylor coefficients (highest power first) of lgamma(1 + e) and lgamma(2 + e), which are
# accurate in relative terms next to the roots at 1 and 2 where Lanczos is only absolutely so.
_LGAMMA_AT_1 = tuple((-1) ** k * (1.0 + z) / k for k, z in enumerate(_ZM1, 2))[::-1] + (
    -_EULER_GAMMA, 0.0)
_LGAMMA_AT_2 = tuple((-1) ** k * z / k for k, z in enumerate(_ZM1, 2))[::-1] + (
    1.0 - _EULER_GAMMA, 0.0)
_ROOT_RADIUS = 0.25


def lgamma(x: np.ndarray) -> np.ndarray:
    """log |Gamma(x)|, with reflection below 0.5 and +inf at the poles 0, -1, -2, ..."""
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    with np.errstate(all="ignore"):
        pos = (x >= 0.5) | np.isnan(x)
        out[pos] = np.where(np.isinf(x[pos]), np.inf, _lgamma_lanczos(x[pos]))
        xn = x[~pos]
        s = np.abs(_sinpi(xn))
        refl = _LOG_PI - np.log(s) - _lgamma_lanczos(1.0 - xn)
        refl = np.where(np.abs(xn) < 1e-17, -np.log(np.abs(xn)), refl)
        pole = (xn == np.floor(xn)) | np.isinf(xn)
        out[~pos] = np.where(pole, np.inf, refl)
        for root, coeffs in ((1.0, _LGAMMA_AT_1), (2.0, _LGAMMA_AT_2)):
            near = np.abs(x - root) < _ROOT_RADIUS
            if near.any():
                out[near] = _horner(coeffs, x[near] - root)
    return out


# Bernoulli terms of the asymptotic series psi(x) ~ log x - 1/2x - sum B2k / (2k x^2k).
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
_DIGAMMA_SHIFT = 10.0


def digamma(x: np.ndarray) -> np.ndarray:
    """psi(x) = d/dx log Gamma(x): recurrence up to x >= 10, then the asymptotic series."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        neg = x < 0
        r = np.where(neg, 1.0 - x, x)
        acc = np.zeros_like(r)
        for _ in range(int(_DIGAMMA_SHIFT)):
            m = r < _DIGAMMA_SHIFT
            acc -= np.where(m, 1.0 / r, 0.0)
            r = np.where(m, r + 1.0, r)
        z = 1.0 / (r * r)
        series = _horner(_DIGAMMA_SERIES[::-1], z) * z
        psi = acc + np.log(r) - 0.5 / r - series
        # reflection: psi(x) = psi(1 - x) - pi / tan(pi x), tan reduced modulo 1
        frac = x - np.round(x)
        psi = np.where(neg, psi - np.pi / np.tan(np.pi * frac), psi)
        psi = np.where(neg & (frac == 0), np.nan, psi)
        psi = np.where(x == 0, np.copysign(np.inf, -x), psi)
        return np.where(np.isposinf(x), np.inf, psi)
