"""Window functions: torch.signal.windows' (M points, symmetric by default) and the
top-level `hann_window` family (periodic by default).

A symmetric window of M points is the classic formula over n = 0 .. M-1 with denominator
M - 1; a periodic one (for spectral analysis) uses M, as if one more point followed. Values
are computed in float64 and rounded to the requested dtype.

    >>> import glasstorch as torch
    >>> torch.signal.windows.hann(5).tolist()
    [0.0, 0.5, 1.0, 0.5, 0.0]
"""
from __future__ import annotations

import math

import numpy as np

from ...core import dtype as dt
from ...core.tensor import strided
from ...ops.creation.factories import tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall", "bartlett_window",
           "blackman_window", "hamming_window", "hann_window", "kaiser_window"]


def _finish(values: np.ndarray, dtype, device, requires_grad: bool):
    return tensor(values, dtype=dtype or dt.get_default_dtype(), device=device,
                  requires_grad=requires_grad)


def _checks(name: str, M: int, dtype, layout) -> None:
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype is not None and dtype not in (dt.float32, dt.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def _span(M: int, sym: bool) -> int:
    """The denominator: M - 1 points apart for a symmetric window, M for a periodic one."""
    return M - 1 if sym or M <= 1 else M


def _window(name, M, sym, dtype, layout, device, requires_grad, values):
    _checks(name, M, dtype, layout)
    n = np.arange(M, dtype=np.float64)
    out = np.ones(M) if M == 1 else values(n, _span(M, sym)) if M else np.empty(0)
    return _finish(out, dtype, device, requires_grad)


def general_cosine(M, *, a, sym=True, dtype=None, layout=strided, device=None,
                   requires_grad=False):
    """sum_k (-1)^k a[k] cos(2 pi k n / N)."""
    if not isinstance(a, (list, tuple)) or not a:
        raise TypeError(f"Coefficients must be a list/tuple, got: {type(a).__name__}")
    return _window("general_cosine", M, sym, dtype, layout, device, requires_grad,
                   lambda n, N: sum((-1) ** k * c * np.cos(2 * math.pi * k * n / N)
                                    for k, c in enumerate(a)))


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=strided, device=None,
                    requires_grad=False):
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The triangle 1 - |2n/N - 1|."""
    return _window("bartlett", M, sym, dtype, layout, device, requires_grad,
                   lambda n, N: 1 - np.abs(2 * n / N - 1))


def cosine(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """sin(pi (n + 1/2) / M) (M + 1 for a periodic window)."""
    return _window("cosine", M, sym, dtype, layout, device, requires_grad,
                   lambda n, N: np.sin(math.pi * (n + 0.5) / (N + 1)))


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=strided, device=None,
             requires_grad=False):
    """exp(-(n - N/2)^2 / (2 std^2))."""
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    return _window("gaussian", M, sym, dtype, layout, device, requires_grad,
                   lambda n, N: np.exp(-((n - N / 2) / (std * math.sqrt(2))) ** 2))


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=strided, device=None,
                requires_grad=False):
    """exp(-|n - center| / tau), centered by default."""
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    return _window("exponential", M, sym, dtype, layout, device, requires_grad,
                   lambda n, N: np.exp(-np.abs(n - (N / 2 if center is None else center))
                                       / tau))


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=strided, device=None,
           requires_grad=False):
    """I0(beta sqrt(1 - (2n/N - 1)^2)) / I0(beta)."""
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    return _window("kaiser", M, sym, dtype, layout, device, requires_grad,
                   lambda n, N: np.i0(beta * np.sqrt(np.clip(1 - (2 * n / N - 1) ** 2, 0, 1)))
                   / np.i0(beta))


# ---- torch.hann_window and friends: periodic by default --------------------------------

def _legacy(name, window_length, periodic, dtype, layout, device, requires_grad, values):
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    if dtype is not None and dtype.category != dt.FLOAT:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    n = np.arange(window_length, dtype=np.float64)
    N = window_length if periodic else window_length - 1
    out = np.ones(1) if window_length == 1 else values(n, N) if window_length else np.empty(0)
    return _finish(out, dtype, device, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=strided, device=None,
                requires_grad=False, pin_memory=False):
    return _legacy("hann_window", window_length, periodic, dtype, layout, device,
                   requires_grad, lambda n, N: 0.5 - 0.5 * np.cos(2 * math.pi * n / N))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=strided, device=None, requires_grad=False, pin_memory=False):
    return _legacy("hamming_window", window_length, periodic, dtype, layout, device,
                   requires_grad, lambda n, N: alpha - beta * np.cos(2 * math.pi * n / N))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=strided, device=None,
                    requires_grad=False, pin_memory=False):
    return _legacy("blackman_window", window_length, periodic, dtype, layout, device,
                   requires_grad, lambda n, N: 0.42 - 0.5 * np.cos(2 * math.pi * n / N)
                   + 0.08 * np.cos(4 * math.pi * n / N))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=strided, device=None,
                    requires_grad=False, pin_memory=False):
    return _legacy("bartlett_window", window_length, periodic, dtype, layout, device,
                   requires_grad, lambda n, N: 1 - np.abs(2 * n / N - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=strided,
                  device=None, requires_grad=False, pin_memory=False):
    return _legacy("kaiser_window", window_length, periodic, dtype, layout, device,
                   requires_grad, lambda n, N: np.i0(beta * np.sqrt(np.clip(
                       1 - (2 * n / N - 1) ** 2, 0, 1))) / np.i0(beta))
