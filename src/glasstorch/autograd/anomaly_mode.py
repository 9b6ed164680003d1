"""Anomaly mode: remember where each node was recorded; name the forward line that made a
backward fail or produce NaN.

    with glasstorch.autograd.detect_anomaly():
        loss.backward()     # "Function 'DivBackward0' returned nan values in its 0th output."
                            # plus the traceback of the forward call that recorded it
"""
from __future__ import annotations

import traceback
import warnings


class _AnomalyState:
    """Whether anomaly mode is on, for every thread at once, as PyTorch's (a process-wide
    flag: a backward run by another thread checks too). Read on every recorded op."""

    def __init__(self):
        self.enabled = False
        self.check_nan = True


state = _AnomalyState()


def is_anomaly_enabled() -> bool:
    return state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return state.check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off for every thread (torch.set_anomaly_enabled),
    outside any block."""
    state.enabled, state.check_nan = bool(enabled), bool(check_nan)


class detect_anomaly:
    """Context manager / decorator turning anomaly detection on (check_nan: also fail on NaN
    gradients)."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime"
                      " and should only be enabled for debugging.", UserWarning, stacklevel=2)
        self._prev = (state.enabled, state.check_nan)
        state.enabled, state.check_nan = True, self.check_nan
        return self

    def __exit__(self, *exc):
        state.enabled, state.check_nan = self._prev

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off now; as a context manager, for a block."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = (state.enabled, state.check_nan)
        state.enabled, state.check_nan = bool(mode), check_nan

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        state.enabled, state.check_nan = self._prev


def record_forward_stack(node) -> None:
    """Keep the user's stack at the moment `node` is recorded (glasstorch frames dropped)."""
    frames = [f for f in traceback.extract_stack()[:-1]
              if "/glasstorch/" not in f.filename.replace("\\", "/")
              and not f.filename.startswith("<glasstorch")]
    node.metadata["traceback_"] = "".join(traceback.format_list(frames))


def report_failure(node) -> None:
    """Warn with the forward traceback of the node whose backward just failed."""
    stack = node.metadata.get("traceback_")
    if stack:
        warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that "
                      f"caused the error:\n{stack}", UserWarning, stacklevel=2)


def check_nan(node, grads) -> None:
    """PyTorch's error when a backward function returns NaN, naming the forward line."""
    for i, g in enumerate(grads):
        if g is not None and g.dtype.category >= 2 and bool(g.isnan().any()):
            report_failure(node)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               "output.")
