"""Process-wide switches PyTorch keeps at the top of `torch`: deterministic algorithms, the
float32 matmul precision, warn-always, flush-denormal and the legacy default tensor type.

glasstorch's kernels are NumPy's and already deterministic, and its float32 matmuls run in
float32, so the switches are recorded and reported back as PyTorch reports them; code that
sets them (a training script's preamble) runs unchanged.

    >>> import glasstorch as torch
    >>> torch.use_deterministic_algorithms(True, warn_only=True)
    >>> torch.are_deterministic_algorithms_enabled(), torch.get_deterministic_debug_mode()
    (True, 1)
    >>> torch.use_deterministic_algorithms(False)
"""
from __future__ import annotations

import warnings

from .core import dtype as dt
from .core.device import set_default_device

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "set_warn_always", "is_warn_always_enabled",
           "set_flush_denormal", "set_default_tensor_type", "init_num_threads"]

_state = {"deterministic": False, "warn_only": False, "matmul_precision": "highest",
          "warn_always": False}
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms (with warn_only, a warning instead of an error where
    an operation has none)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not "
                        f"{type(mode).__name__}")
    _state["deterministic"], _state["warn_only"] = mode, bool(warn_only) and mode


def are_deterministic_algorithms_enabled() -> bool:
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _state["warn_only"]


def set_deterministic_debug_mode(debug_mode) -> None:
    """0 / "default", 1 / "warn" or 2 / "error": use_deterministic_algorithms in one value."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


def set_float32_matmul_precision(precision: str) -> None:
    """"highest", "high" or "medium": how much float32 matmuls may trade precision for speed
    (glasstorch's always compute in float32)."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"set_float32_matmul_precision call has no effect.", UserWarning,
                      stacklevel=2)
        return
    _state["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    return _state["matmul_precision"]


def set_warn_always(b: bool) -> None:
    """Warn every time instead of once for the warnings PyTorch gives once per process."""
    _state["warn_always"] = bool(b)


def is_warn_always_enabled() -> bool:
    return _state["warn_always"]


def set_flush_denormal(mode: bool) -> bool:
    """Whether denormals could be flushed to zero: NumPy gives no control over the CPU's
    flag, so this reports False (unsupported) and changes nothing."""
    return False


def init_num_threads() -> None:
    """PyTorch initializes its OpenMP pool here; glasstorch's thread pool starts on demand."""


def set_default_tensor_type(t) -> None:
    """Deprecated: set the default dtype (and device) from a legacy type such as
    torch.DoubleTensor or 'torch.cuda.FloatTensor'."""
    from ._tensor_classes import legacy_type
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    spec = legacy_type(t)
    if spec is None:
        raise TypeError(f"invalid type object: {t!r}")
    d, device_type = spec
    if d.category != dt.FLOAT:
        raise TypeError("only floating-point types are supported as the default type")
    dt.set_default_dtype(d)
    set_default_device(None if device_type == "cpu" else device_type)
