"""Special functions NumPy lacks (erf, erfc, erfinv, lgamma, digamma), vectorised.

Each takes and returns float64 arrays; kernels for narrower dtypes compute here and round.
They are written once for NumPy and CuPy arrays (CUDA tensors): arrays are made with the
argument's array module (`_float64`, `arrays.module_of`), everything else dispatches.
Edge values follow PyTorch: lgamma is +inf at poles and +-inf, digamma is nan at negative
integers and -inf/+inf at +0/-0, erfinv is +-inf at +-1 and nan outside [-1, 1].
"""
from __future__ import annotations

import numpy as np

from .. import arrays

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


def _float64(x, like=None):
    """x as a float64 array on its device (numbers go where `like` is)."""
    return arrays.asarray(x, np.float64, like)


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
    x = _float64(x)
    out = np.empty_like(x)
    y = np.abs(x)
    small = y <= _ERF_SMALL
    out[small] = _erf_small(x[small])
    big = ~small
    out[big] = np.copysign(1.0 - _erfc_positive(y[big]), x[big])
    return out


def erfc(x: np.ndarray) -> np.ndarray:
    """The complementary error function 1 - erf(x), without cancellation for large x."""
    x = _float64(x)
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
    y = _float64(y)
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
    x = _float64(x)
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
    x = _float64(x)
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


# ---- modified Bessel functions I0, I1 (and their exponentially scaled forms) -------------
# The power series has only positive terms (no cancellation) and converges for every x;
# past _BESSEL_ASYMPTOTIC the asymptotic expansion's smallest term is below 1e-25.
_BESSEL_ASYMPTOTIC = 30.0
_BESSEL_SERIES_TERMS = 60
_BESSEL_ASYMPTOTIC_TERMS = 30


def _bessel_series(y, order: int):
    """sum_k (y/2)^(2k) / (k! (k + order)!) times (y/2)^order, for 0 <= y < 30."""
    q = 0.25 * y * y
    term = np.ones_like(y) if order == 0 else 0.5 * y
    total = term.copy()
    for k in range(1, _BESSEL_SERIES_TERMS):
        term = term * q / (k * (k + order))
        total += term
    return total


def _bessel_scaled_asymptotic(y, order: int):
    """I_order(y) * exp(-y) for y >= 30: e^-y I_v(y) ~ sum_k (-1)^k a_k(v) / y^k / sqrt(2 pi y)."""
    mu = 4.0 * order * order
    term = np.ones_like(y)
    total = term.copy()
    for k in range(1, _BESSEL_ASYMPTOTIC_TERMS):
        term = term * -(mu - (2 * k - 1) ** 2) / (8.0 * k * y)
        total += term
    return total / np.sqrt(2.0 * np.pi * y)


def _bessel_i(x, order: int, scaled: bool):
    x = _float64(x)
    y = np.abs(x)
    out = np.empty_like(y)
    with np.errstate(all="ignore"):
        small = (y < _BESSEL_ASYMPTOTIC) | np.isnan(y)
        ys = y[small]
        s = _bessel_series(ys, order)
        out[small] = s * np.exp(-ys) if scaled else s
        yl = y[~small]
        a = np.where(np.isinf(yl), 0.0, _bessel_scaled_asymptotic(yl, order))
        if scaled:
            out[~small] = a
        else:
            out[~small] = np.where(np.isinf(yl), np.nan, a * np.exp(yl))   # as PyTorch
    return np.copysign(out, x) if order == 1 else out


def i0(x):
    """The modified Bessel function of the first kind, order 0."""
    return _bessel_i(x, 0, False)


def i0e(x):
    """exp(-|x|) * I0(x)."""
    return _bessel_i(x, 0, True)


def i1(x):
    """The modified Bessel function of the first kind, order 1 (odd)."""
    return _bessel_i(x, 1, False)


def i1e(x):
    """exp(-|x|) * I1(x)."""
    return _bessel_i(x, 1, True)


# ---- scaled complementary error function and the normal distribution ---------------------

def _erfcx_positive(y):
    """exp(y*y) * erfc(y) for y > 0.46875: Cody's rational forms without their exp factor."""
    out = np.empty_like(y)
    mid = y <= 4.0
    ym = y[mid]
    num, den = _ERFC_C[8] * ym, ym
    for c, d in zip(_ERFC_C[:7], _ERFC_D[:7]):
        num = (num + c) * ym
        den = (den + d) * ym
    out[mid] = (num + _ERFC_C[7]) / (den + _ERFC_D[7])
    yf = y[~mid]
    with np.errstate(all="ignore"):
        z = 1.0 / (yf * yf)
        num, den = _ERFC_P[5] * z, z
        for p, q in zip(_ERFC_P[:4], _ERFC_Q[:4]):
            num = (num + p) * z
            den = (den + q) * z
        r = z * (num + _ERFC_P[4]) / (den + _ERFC_Q[4])
        out[~mid] = (_SQRT_PI_INV - r) / yf
    return out


def erfcx(x):
    """exp(x*x) * erfc(x), without overflow for large x (inf for x below about -26.6)."""
    x = _float64(x)
    out = np.empty_like(x)
    y = np.abs(x)
    with np.errstate(all="ignore"):
        small = (y <= _ERF_SMALL) | np.isnan(y)
        xs = x[small]
        out[small] = np.exp(xs * xs) * (1.0 - _erf_small(xs))
        big = ~small
        tail = _erfcx_positive(y[big])
        xb = x[big]
        # erfcx(-y) = 2 exp(y^2) - erfcx(y)
        out[big] = np.where(xb < 0, 2.0 * np.exp(xb * xb) - tail, tail)
    return out


_SQRT2 = 1.4142135623730951


def ndtri(p):
    """The quantile of the standard normal: x with ndtr(x) = p, from Newton steps on
    log erfc (log-concave, so they converge from erfinv's guess), written with erfcx so the
    far tails (p down to the smallest subnormal) keep full relative accuracy."""
    p = _float64(p)
    with np.errstate(all="ignore"):
        upper = p > 0.5
        q = 2.0 * np.where(upper, 1.0 - p, p)          # erfc(x) = q, x >= 0
        log_q = np.log(q)
        w = -log_q
        guess = np.sqrt(np.maximum(w - 0.5 * np.log(np.maximum(w, 1.0) * np.pi), 0.0))
        x = np.where(q > 1e-8, erfinv(1.0 - q), guess)
        for _ in range(6):
            e = erfcx(x)
            x = x + (np.log(e) - x * x - log_q) * e * (0.5 / _SQRT_PI_INV)
        x = _SQRT2 * np.where(upper, x, -x)
        x = np.where(p == 0.0, -np.inf, np.where(p == 1.0, np.inf, x))
        return np.where((p < 0.0) | (p > 1.0) | np.isnan(p), np.nan, x)


def log_ndtr(x):
    """log of the standard normal CDF, accurate far into both tails."""
    x = _float64(x)
    t = x / _SQRT2
    with np.errstate(all="ignore"):
        low = x < -1.0
        far = np.log(erfcx(-t) * 0.5) - t * t
        near = np.log1p(-0.5 * erfc(t))
        return np.where(low, far, near)


# ---- polygamma -----------------------------------------------------------------------------
# Hurwitz zeta by Euler-Maclaurin summation, as Cephes does: terms (q + k)^-s until q + k > 9
# (stopping early per element once they no longer change the sum), then the tail integral
# and 12 Bernoulli corrections.
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)
_EPS = np.finfo(np.float64).eps / 2


def zeta(s, q):
    """The Hurwitz zeta function sum_k (q + k)^-s (s > 1), with Cephes' conventions: inf for
    s == 1 or at the poles q = 0, -1, ...; nan for s < 1 or a negative q with non-integer s."""
    s, q = np.broadcast_arrays(_float64(s, q), _float64(q, s))
    shape = q.shape
    s, q = s.ravel(), q.ravel()
    out = np.empty_like(q)
    with np.errstate(all="ignore"):
        total = np.power(q, -s)
        a = q.copy()
        b = np.zeros_like(q)
        done = np.zeros_like(q, dtype=bool)
        running = ~np.isnan(total)
        i = 0
        while running.any():
            i += 1
            a = np.where(running, a + 1.0, a)
            b = np.where(running, np.power(a, -s), b)
            total = np.where(running, total + b, total)
            done |= running & (np.abs(b / total) < _EPS)
            running = ~done & ((i < 9) | (a <= 9.0)) & ~np.isnan(total)
        tail = ~done
        w = a
        t_sum = total + b * w / (s - 1.0) - 0.5 * b
        fac, k, bb = np.ones_like(q), 0.0, b.copy()
        on = tail.copy()
        for coeff in _ZETA_A:
            fac = fac * (s + k)
            bb = bb / w
            t = fac * bb / coeff
            t_sum = np.where(on, t_sum + t, t_sum)
            on &= ~(np.abs(t / t_sum) < _EPS)
            k += 1.0
            fac = fac * (s + k)
            bb = bb / w
            k += 1.0
        out[:] = np.where(tail, t_sum, total)
        big = q > 1e8
        out[big] = ((1.0 / (s[big] - 1.0) + 0.5 / q[big]) * np.power(q[big], 1.0 - s[big]))
        pole = (q <= 0) & (q == np.floor(q))
        out[pole] = np.inf
        out[(q < 0) & ~pole & (s != np.floor(s))] = np.nan
        out[s == 1.0] = np.inf
        out[(s < 1.0) | np.isnan(s) | np.isnan(q)] = np.nan
    return out.reshape(shape)


def trigamma(x):
    """psi'(x): reflection below 1/2, six recurrence steps, then the asymptotic series (the
    same evaluation as PyTorch's, so values next to the poles agree)."""
    x = _float64(x)
    with np.errstate(all="ignore"):
        reflect = x < 0.5
        s = np.sin(np.pi * x)
        result = np.where(reflect, -(np.pi * np.pi) / (s * s), 0.0)
        x = np.where(reflect, 1.0 - x, x)
        for _ in range(6):
            result = result + 1.0 / (x * x)
            x = x + 1.0
        ixx = 1.0 / (x * x)
        result = result + (1.0 + 1.0 / (2.0 * x)
                           + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / x
        return np.where(reflect, -result, result)


def polygamma(n: int, x):
    """The n-th derivative of digamma: (-1)^(n+1) n! zeta(n + 1, x) for n >= 2."""
    if n == 0:
        return digamma(x)
    if n == 1:
        return trigamma(x)
    x = _float64(x)
    sign = 1.0 if n % 2 else -1.0
    with np.errstate(all="ignore"):
        return sign * float(np.exp(lgamma(np.array(n + 1.0)))) * zeta(np.float64(n + 1), x)


# ---- Bessel functions of the first kind, J0 and J1 ----------------------------------------
# Power series below 5 (terms at most ~30, so no real cancellation), Miller's backward
# recurrence normalised by J0 + 2 (J2 + J4 + ...) = 1 up to 25, Hankel's asymptotic
# expansion beyond (its phase x - (2 order + 1) pi / 4 rounded as PyTorch rounds it).
_J_SERIES_END, _J_MILLER_END = 5.0, 25.0
_J_MILLER_START = 70          # J_70(x) < 1e-23 for x < 25
_J_SERIES_TERMS, _J_HANKEL_TERMS = 40, 40


def _bessel_j_series(y, order: int):
    q = -0.25 * y * y
    term = np.ones_like(y) if order == 0 else 0.5 * y
    total = term.copy()
    for k in range(1, _J_SERIES_TERMS):
        term = term * q / (k * (k + order))
        total += term
    return total


def _bessel_j_miller(y, order: int):
    inv = 1.0 / y
    upper, current = np.zeros_like(y), np.full_like(y, 1e-30)
    norm = 2.0 * current                      # J_70 counts in the normalisation
    j1 = None
    for k in range(_J_MILLER_START, 0, -1):
        upper, current = current, 2.0 * k * inv * current - upper    # current = J_{k-1}
        if k - 1 == 1:
            j1 = current
        if k - 1 > 0 and (k - 1) % 2 == 0:
            norm = norm + 2.0 * current
    norm = norm + current                     # + J0
    return (current if order == 0 else j1) / norm


def _bessel_j_hankel(y, order: int):
    mu = 4.0 * order * order
    term = np.ones_like(y)
    p, q = term.copy(), np.zeros_like(y)
    for k in range(1, _J_HANKEL_TERMS):
        term = term * (mu - (2 * k - 1) ** 2) / (8.0 * k * y)
        sign = -1.0 if (k // 2) % 2 else 1.0          # p: +t0 - t2 + t4; q: +t1 - t3 + ...
        if k % 2:
            q = q + sign * term
        else:
            p = p + sign * term
    phase = y - (0.75 * np.pi if order else 0.25 * np.pi)
    return np.sqrt(2.0 / (np.pi * y)) * (p * np.cos(phase) - q * np.sin(phase))


def _bessel_j(x, order: int):
    x = _float64(x)
    y = np.abs(x)
    out = np.empty_like(y)
    with np.errstate(all="ignore"):
        small = (y < _J_SERIES_END) | np.isnan(y)
        out[small] = _bessel_j_series(y[small], order)
        mid = (y >= _J_SERIES_END) & (y < _J_MILLER_END)
        out[mid] = _bessel_j_miller(y[mid], order)
        far = y >= _J_MILLER_END
        out[far] = _bessel_j_hankel(y[far], order)
        out[np.isinf(y)] = np.nan                   # as PyTorch
    return np.where(x < 0, -out, out) if order == 1 else out


def bessel_j0(x):
    """The Bessel function of the first kind of order 0."""
    return _bessel_j(x, 0)


def bessel_j1(x):
    """The Bessel function of the first kind of order 1 (odd)."""
    return _bessel_j(x, 1)


def spherical_bessel_j0(x):
    """sin(x) / x: 1 at 0 and 0 at +-inf."""
    x = _float64(x)
    with np.errstate(all="ignore"):
        r = np.sin(x) / x
    return np.where(x == 0, 1.0, np.where(np.isinf(x), 0.0, r))


# ---- regularized incomplete gamma functions P(a, x) and Q(a, x) ---------------------------
# Cephes' scheme (series for P, continued fraction for Q, a series for Q at small x), each
# run only on the elements that still need terms. Where a is large and x close to a these
# need O(sqrt(a)) terms (PyTorch switches to Temme's expansion there); their common factor
# x^a e^-x / Gamma(a) is formed from Stirling's series so that it keeps full accuracy.
_IGAM_MAXITER = 20000
_BIG, _BIGINV = 4.503599627370496e15, 2.22044604925031308085e-16
_LOG_2PI = 1.8378770664093453


def _log1pmx(x, a):
    """log(1 + t) - t for t = (x - a) / a: a series where t is small (no cancellation),
    else log(x / a) - t (not log1p(t): 1 + t loses x / a's digits when x << a)."""
    t = (x - a) / a
    small = np.abs(t) < 0.5
    ts = np.where(small, t, 0.0)
    total, power = np.zeros_like(ts), ts * ts
    for k in range(2, 60):
        total += (power / k if k % 2 else -power / k)
        power = power * ts
    return np.where(small, total, np.log(x / a) - t)


def _igam_factor(a, x):
    """x^a e^-x / Gamma(a)."""
    out = np.empty_like(a)
    big = a > 10.0
    ab, xb = a[big], x[big]
    z = 1.0 / (ab * ab)
    corr = (1 / 12 - z * (1 / 360 - z * (1 / 1260 - z * (1 / 1680 - z / 1188)))) / ab
    out[big] = np.exp(ab * _log1pmx(xb, ab) + 0.5 * (np.log(ab) - _LOG_2PI) - corr)
    a_s, x_s = a[~big], x[~big]
    out[~big] = np.exp(a_s * np.log(x_s) - x_s - lgamma(a_s))
    return out


def _igam_series(a, x):
    """P(a, x) = factor / a * sum_n x^n / ((a+1)...(a+n))."""
    total, term, r = np.ones_like(a), np.ones_like(a), a.copy()
    live = arrays.module_of(a).arange(a.size)
    for _ in range(_IGAM_MAXITER):
        if live.size == 0:
            break
        r[live] += 1.0
        term[live] *= x[live] / r[live]
        total[live] += term[live]
        live = live[~(term[live] <= _EPS * total[live])]
    return total * _igam_factor(a, x) / a


def _igamc_fraction(a, x):
    """Q(a, x) by its continued fraction (x > 1.1 and x >= a)."""
    y = 1.0 - a
    z = x + y + 1.0
    c = np.zeros_like(a)
    pkm2, qkm2 = np.ones_like(a), x.copy()
    pkm1, qkm1 = x + 1.0, z * x
    ans = pkm1 / qkm1
    live = arrays.module_of(a).arange(a.size)
    for _ in range(_IGAM_MAXITER):
        if live.size == 0:
            break
        c[live] += 1.0
        y[live] += 1.0
        z[live] += 2.0
        yc = y[live] * c[live]
        pk = pkm1[live] * z[live] - pkm2[live] * yc
        qk = qkm1[live] * z[live] - qkm2[live] * yc
        nonzero = qk != 0
        r = np.where(nonzero, pk / np.where(nonzero, qk, 1.0), ans[live])
        t = np.where(nonzero, np.abs((ans[live] - r) / r), 1.0)
        ans[live] = r
        pkm2[live], pkm1[live], qkm2[live], qkm1[live] = pkm1[live], pk, qkm1[live], qk
        scale = np.where(np.abs(pk) > _BIG, _BIGINV, 1.0)
        pkm2[live] *= scale
        pkm1[live] *= scale
        qkm2[live] *= scale
        qkm1[live] *= scale
        live = live[~(t <= _EPS)]
    return ans * _igam_factor(a, x)


def _lgamma1p(a):
    """lgamma(1 + a), accurate for small a (the Taylor series around 1)."""
    near = np.abs(a) < _ROOT_RADIUS
    return np.where(near, _horner(_LGAMMA_AT_1, np.where(near, a, 0.0)), lgamma(1.0 + a))


def _igamc_series(a, x):
    """Q(a, x) for x <= 1.1 where P is close to 1."""
    fac, total = np.ones_like(a), np.zeros_like(a)
    live = arrays.module_of(a).arange(a.size)
    for n in range(1, _IGAM_MAXITER):
        if live.size == 0:
            break
        fac[live] *= -x[live] / n
        term = fac[live] / (a[live] + n)
        total[live] += term
        live = live[~(np.abs(term) <= _EPS * np.abs(total[live]))]
    logx = np.log(x)
    return -np.expm1(a * logx - _lgamma1p(a)) - np.exp(a * logx - lgamma(a)) * total


def _igamc_regular(a, x):
    """Q for finite a > 0, x > 0 (Cephes' choice of method)."""
    out = np.empty_like(a)
    p_first = np.where(x > 1.1, x < a,
                       np.where(x <= 0.5, -0.4 / np.log(x) < a, x * 1.1 < a))
    fraction = (x > 1.1) & ~p_first
    series = ~p_first & ~fraction
    out[p_first] = 1.0 - _igam_series(a[p_first], x[p_first])
    out[fraction] = _igamc_fraction(a[fraction], x[fraction])
    out[series] = _igamc_series(a[series], x[series])
    return out


def _igamma_edges(a, x, complement: bool):
    """Values at the edges (nan, 0, inf) and a mask of the elements still to compute."""
    out = np.full_like(a, np.nan)
    regular = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    p_value = np.where(x > 0, 1.0, np.nan)                 # a == 0
    for mask, p in (((a == 0), p_value), ((x == 0) & (a > 0), 0.0),
                    (np.isinf(a) & (x >= 0) & ~np.isinf(x), 0.0),
                    (np.isposinf(x) & (a > 0) & np.isfinite(a), 1.0)):
        out = np.where(mask, (1.0 - p) if complement else p, out)
    return out, regular


def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    a, x = np.broadcast_arrays(_float64(a, x), _float64(x, a))
    with np.errstate(all="ignore"):
        out, regular = _igamma_edges(a, x, False)
        ar, xr = a[regular], x[regular]
        upper = (xr > 1.0) & (xr > ar)
        vals = np.empty_like(ar)
        vals[upper] = 1.0 - _igamc_regular(ar[upper], xr[upper])
        vals[~upper] = _igam_series(ar[~upper], xr[~upper])
        out[regular] = vals
    return out


def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    a, x = np.broadcast_arrays(_float64(a, x), _float64(x, a))
    with np.errstate(all="ignore"):
        out, regular = _igamma_edges(a, x, True)
        out[regular] = _igamc_regular(a[regular], x[regular])
    return out


# ---- orthogonal polynomials of integer degree n (n truncated toward zero; 0 for n < 0) -----

def _recurrence(n, first, second, step):
    """Degree-n values from the degree-0 and degree-1 ones and step(k, p_(k-2), p_(k-1)),
    run only on the elements whose degree is not reached yet."""
    out = np.where(n <= 0, first, second)
    live = np.flatnonzero(n >= 2)
    p, q = first[live], second[live]
    k = 2
    while live.size:
        p, q = q, step(k, live, p, q)
        done = n[live] == k
        out[live[done]] = q[done]
        keep = ~done
        live, p, q = live[keep], p[keep], q[keep]
        k += 1
    return out


def _chebyshev(kind: str, y, n):
    """Chebyshev polynomials of the first to fourth kinds (T, U, V, W) at y: the recurrence
    p_k = 2 y p_(k-1) - p_(k-2), or their closed forms in acos(y) for |y| < 1 and n > 8."""
    ones = np.ones_like(y)
    start = {"t": y, "u": 2 * y, "v": 2 * y - 1, "w": 2 * y + 1}[kind]
    two_y = 2 * y
    out = _recurrence(n, ones, start, lambda k, at, p, q: two_y[at] * q - p)
    trig = (np.abs(y) < 1) & (n > 8)
    theta, m = np.arccos(y[trig]), n[trig].astype(np.float64)
    if kind == "t":
        closed = np.cos(m * theta)
    elif kind == "u":
        closed = np.sin((m + 1) * theta) / np.sin(theta)
    elif kind == "v":
        closed = np.cos((m + 0.5) * theta) / np.cos(theta / 2)
    else:
        closed = np.sin((m + 0.5) * theta) / np.sin(theta / 2)
    out[trig] = closed
    return out


def orthogonal_polynomial(name: str, x, n):
    """torch.special's `<name>_polynomial_<kind>(x, n)` for x and n broadcast together."""
    x, n = np.broadcast_arrays(_float64(x, n), _float64(n, x))
    with np.errstate(all="ignore"):
        degree = np.where(np.isfinite(n), np.trunc(n), -1).astype(np.int64)
        x = x.astype(np.float64).ravel()
        d = degree.ravel()
        ones = np.ones_like(x)
        if name.startswith("shifted_chebyshev"):
            out = _chebyshev(name[-1], 2 * x - 1, d)
        elif name.startswith("chebyshev"):
            out = _chebyshev(name[-1], x, d)
        elif name == "hermite_polynomial_h":
            out = _recurrence(d, ones, 2 * x,
                              lambda k, at, p, q: 2 * x[at] * q - 2 * (k - 1) * p)
        elif name == "hermite_polynomial_he":
            out = _recurrence(d, ones, x.copy(), lambda k, at, p, q: x[at] * q - (k - 1) * p)
        elif name == "laguerre_polynomial_l":
            out = _recurrence(d, ones, 1 - x,
                              lambda k, at, p, q: ((2 * k - 1 - x[at]) * q - (k - 1) * p) / k)
        else:                                   # legendre_polynomial_p
            out = _recurrence(d, ones, x.copy(),
                              lambda k, at, p, q: ((2 * k - 1) * x[at] * q - (k - 1) * p) / k)
        out[d < 0] = 0.0
        out[np.isnan(x) & (d >= 0)] = np.nan
    return out.reshape(degree.shape)


# ---- modified Bessel functions of the second kind, K0 and K1 -------------------------------
# The ascending series up to 2; then exp(x) K_v(x) = int_0^inf exp(-x (cosh t - 1)) cosh(v t)
# dt by the trapezoidal rule (its error falls like exp(-pi^2 / 2h) for this analytic
# integrand: h = 0.1 is below 1e-17 up to x = 30); the asymptotic expansion beyond 30.
_K_SERIES_END, _K_ASYMPTOTIC = 2.0, 30.0
_K_NODES = np.arange(46) * 0.1


def _bessel_k_series(x, order: int):
    q = 0.25 * x * x
    log_half = np.log(0.5 * x)
    harmonic = 0.0
    if order == 0:
        term, i0, tail = np.ones_like(x), np.ones_like(x), np.zeros_like(x)
        for k in range(1, 25):
            term = term * q / (k * k)
            harmonic += 1.0 / k
            i0 += term
            tail += term * harmonic
        return tail - (log_half + _EULER_GAMMA) * i0
    term = np.ones_like(x)                      # q^k / (k! (k+1)!)
    i1_sum, psi_sum = np.zeros_like(x), np.zeros_like(x)
    for k in range(25):
        if k:
            term = term * q / (k * (k + 1))
        psi = 2.0 * -_EULER_GAMMA + 2.0 * harmonic + 1.0 / (k + 1)   # psi(k+1) + psi(k+2)
        harmonic += 1.0 / (k + 1)
        i1_sum += term
        psi_sum += term * psi
    return 1.0 / x + log_half * (0.5 * x * i1_sum) - 0.25 * x * psi_sum


def _bessel_k_scaled_integral(x, order: int):
    t = _float64(_K_NODES, x)[:, None]
    weights = np.cosh(t) if order else np.ones_like(t)
    f = np.exp(-x[None, :] * (np.cosh(t) - 1.0)) * weights
    return 0.1 * (f.sum(axis=0) - 0.5 * f[0])


def _bessel_k_scaled_asymptotic(x, order: int):
    mu = 4.0 * order * order
    term, total = np.ones_like(x), np.ones_like(x)
    for k in range(1, _BESSEL_ASYMPTOTIC_TERMS):
        term = term * (mu - (2 * k - 1) ** 2) / (8.0 * k * x)
        total += term
    return np.sqrt(np.pi / (2.0 * x)) * total


def _bessel_k(x, order: int, scaled: bool):
    x = _float64(x)
    out = np.full_like(x, np.nan)
    with np.errstate(all="ignore"):
        small = (x > 0) & (x <= _K_SERIES_END)
        xs = x[small]
        k = _bessel_k_series(xs, order)
        out[small] = k * np.exp(xs) if scaled else k
        for mask, fn in (((x > _K_SERIES_END) & (x < _K_ASYMPTOTIC), _bessel_k_scaled_integral),
                         ((x >= _K_ASYMPTOTIC) & np.isfinite(x), _bessel_k_scaled_asymptotic)):
            xm = x[mask]
            v = fn(xm, order)
            out[mask] = v if scaled else v * np.exp(-xm)
        out[x == 0] = np.inf
        out[np.isposinf(x)] = 0.0
    return out


def bessel_k0(x):
    """The modified Bessel function of the second kind, order 0 (nan for x < 0)."""
    return _bessel_k(x, 0, False)


def bessel_k1(x):
    """The modified Bessel function of the second kind, order 1 (nan for x < 0)."""
    return _bessel_k(x, 1, False)


def bessel_k0e(x):
    """exp(x) * K0(x)."""
    return _bessel_k(x, 0, True)


def bessel_k1e(x):
    """exp(x) * K1(x)."""
    return _bessel_k(x, 1, True)


# ---- Bessel functions of the second kind, Y0 and Y1 -----------------------------------------
# The ascending series below 5; Neumann's series over Miller's normalised J_k up to 25
# (Y0 = 2/pi (log(x/2) + gamma) J0 - 4/pi sum (-1)^k J_2k / k, and Y1 = -Y0' term by term);
# Hankel's expansion beyond. nan for x < 0 and at +inf, -inf at 0, as PyTorch.

def _bessel_y_series(x, order: int):
    q = -0.25 * x * x
    log_half = np.log(0.5 * x)
    if order == 0:
        term, tail, harmonic = np.ones_like(x), np.zeros_like(x), 0.0
        for k in range(1, _J_SERIES_TERMS):
            term = term * q / (k * k)
            harmonic += 1.0 / k
            tail -= term * harmonic
        return (2.0 / np.pi) * ((log_half + _EULER_GAMMA) * _bessel_j_series(x, 0) + tail)
    term, total, harmonic = np.ones_like(x), np.zeros_like(x), 0.0
    for k in range(_J_SERIES_TERMS):
        if k:
            term = term * q / (k * (k + 1))
        total += term * (-2.0 * _EULER_GAMMA + 2.0 * harmonic + 1.0 / (k + 1))
        harmonic += 1.0 / (k + 1)
    return (-2.0 / (np.pi * x) + (2.0 / np.pi) * log_half * _bessel_j_series(x, 1)
            - (0.5 * x / np.pi) * total)


def _bessel_j_all(y):
    """J_0 .. J_70 at y (Miller's recurrence, normalised), one row per order."""
    n = _J_MILLER_START
    j = arrays.module_of(y).empty((n + 2,) + y.shape)
    j[n + 1], j[n] = 0.0, 1e-30
    inv = 1.0 / y
    for k in range(n, 0, -1):
        j[k - 1] = 2.0 * k * inv * j[k] - j[k + 1]
    norm = j[0] + 2.0 * j[2:n + 1:2].sum(axis=0)
    return j[:n + 1] / norm


def _bessel_y_neumann(y, order: int):
    j = _bessel_j_all(y)
    k = arrays.module_of(y).arange(1, _J_MILLER_START // 2)[:, None]
    sign = np.where(k % 2, -1.0, 1.0)
    log_term = np.log(0.5 * y) + _EULER_GAMMA
    if order == 0:
        return (2.0 / np.pi) * (log_term * j[0] - 2.0 * (sign * j[2 * k[:, 0]] / k).sum(axis=0))
    diff = j[2 * k[:, 0] - 1] - j[2 * k[:, 0] + 1]
    return (-(2.0 / np.pi) * (j[0] / y - log_term * j[1])
            + (2.0 / np.pi) * (sign * diff / k).sum(axis=0))


def _bessel_y_hankel(y, order: int):
    mu = 4.0 * order * order
    term = np.ones_like(y)
    p, q = term.copy(), np.zeros_like(y)
    for k in range(1, _J_HANKEL_TERMS):
        term = term * (mu - (2 * k - 1) ** 2) / (8.0 * k * y)
        sign = -1.0 if (k // 2) % 2 else 1.0
        if k % 2:
            q = q + sign * term
        else:
            p = p + sign * term
    phase = y - (0.75 * np.pi if order else 0.25 * np.pi)
    return np.sqrt(2.0 / (np.pi * y)) * (p * np.sin(phase) + q * np.cos(phase))


def _bessel_y(x, order: int):
    x = _float64(x)
    out = np.full_like(x, np.nan)
    with np.errstate(all="ignore"):
        for mask, fn in (((x > 0) & (x < _J_SERIES_END), _bessel_y_series),
                         ((x >= _J_SERIES_END) & (x < _J_MILLER_END), _bessel_y_neumann),
                         ((x >= _J_MILLER_END) & np.isfinite(x), _bessel_y_hankel)):
            out[mask] = fn(x[mask], order)
        out[x == 0] = -np.inf
    return out


def bessel_y0(x):
    """The Bessel function of the second kind of order 0."""
    return _bessel_y(x, 0)


def bessel_y1(x):
    """The Bessel function of the second kind of order 1."""
    return _bessel_y(x, 1)


# ---- the Airy function Ai ---------------------------------------------------------------------
# Its Maclaurin series (summed in extended precision, since for negative x its terms grow
# like exp(2/3 |x|^1.5) while Ai stays below 1) on [-8.7, 2.1]; above, Ai(x) = sqrt(x/3) / pi
# K_1/3(zeta) with zeta = 2/3 x^1.5 (K by the integral used for K0 and K1); below, the
# asymptotic expansion in zeta. 0 beyond 103.892 and nan at +-inf, as PyTorch.
_AI0, _AIP0 = 0.355028053887817239260, -0.258819403792806798405      # Ai(0), Ai'(0)
_AIRY_SERIES = (-8.7, 2.1)
_AIRY_ZERO = 103.892


def _airy_series(x):
    xl = x.astype(np.longdouble)
    cube = xl * xl * xl
    f, g = np.ones_like(xl), xl.copy()
    total_f, total_g = f.copy(), g.copy()
    for k in range(1, 80):
        f = f * cube / ((3 * k - 1) * (3 * k))
        g = g * cube / ((3 * k) * (3 * k + 1))
        total_f += f
        total_g += g
    return (_AI0 * total_f + _AIP0 * total_g).astype(np.float64)


def _airy_positive(x):
    zeta = 2.0 / 3.0 * x * np.sqrt(x)
    t = _K_NODES[:, None]
    f = np.exp(-zeta[None, :] * (np.cosh(t) - 1.0)) * np.cosh(t / 3.0)
    scaled = 0.1 * (f.sum(axis=0) - 0.5 * f[0])
    big = zeta >= _K_ASYMPTOTIC
    mu = 4.0 / 9.0
    term, total = np.ones_like(zeta[big]), np.ones_like(zeta[big])
    for k in range(1, _BESSEL_ASYMPTOTIC_TERMS):
        term = term * (mu - (2 * k - 1) ** 2) / (8.0 * k * zeta[big])
        total += term
    scaled[big] = np.sqrt(np.pi / (2.0 * zeta[big])) * total
    return np.sqrt(x / 3.0) / np.pi * scaled * np.exp(-zeta)


def _airy_negative(x):
    z = -x
    zeta = 2.0 / 3.0 * z * np.sqrt(z)
    term = np.ones_like(z)
    p, q = term.copy(), np.zeros_like(z)
    for k in range(1, 40):
        term = term * (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216.0 * k * zeta)
        sign = -1.0 if (k // 2) % 2 else 1.0
        if k % 2:
            q = q + sign * term
        else:
            p = p + sign * term
    phase = zeta - 0.25 * np.pi
    return (p * np.cos(phase) + q * np.sin(phase)) / (np.sqrt(np.pi) * np.sqrt(np.sqrt(z)))


def airy_ai(x):
    """The Airy function of the first kind (NumPy arrays only: the series sums in long
    double, which CuPy lacks; a GPU's airy_ai runs on the host)."""
    x = _float64(x)
    out = np.full_like(x, np.nan)
    with np.errstate(all="ignore"):
        series = (x >= _AIRY_SERIES[0]) & (x <= _AIRY_SERIES[1])
        out[series] = _airy_series(x[series])
        positive = (x > _AIRY_SERIES[1]) & (x <= _AIRY_ZERO)
        out[positive] = _airy_positive(x[positive])
        negative = (x < _AIRY_SERIES[0]) & np.isfinite(x)
        out[negative] = _airy_negative(x[negative])
        out[(x > _AIRY_ZERO) & np.isfinite(x)] = 0.0
    return out
