"""Size limits that glasstorch.load enforces before it allocates, and how to raise them.

A checkpoint can claim more than it holds: a zip entry deflated from a 1 MB file may
declare a 1 GiB pickle, which an unbounded load would inflate and unpickle. Two limits stop
that before any memory is spent:

- `max_pickle_bytes`: the largest data.pkl (the pickle of everything but tensor bytes)
  that load unpickles; default 512 MiB. Environment: GLASSTORCH_LOAD_MAX_PICKLE_BYTES.
- `max_inflation_ratio`: the archive's declared uncompressed size may be at most this many
  times the file's size (16 MiB always allowed); default 100. torch.save never compresses,
  so only a checkpoint re-zipped with compression can come near it. Environment:
  GLASSTORCH_LOAD_MAX_INFLATION_RATIO.

Raise them with `glasstorch.serialization.set_load_limits(...)` (process-wide) or the
environment variables (read at import); 0 or None in set_load_limits means "no limit".
"""
from __future__ import annotations

import os

__all__ = ["LoadLimitExceeded", "set_load_limits", "get_load_limits", "check_pickle_size",
           "check_inflation"]

INFLATION_FLOOR = 16 * 2**20      # an archive may always declare this much


class LoadLimitExceeded(RuntimeError):
    """A checkpoint declares more data than glasstorch.load's limits allow."""


def _from_env(name: str, default, kind):
    text = os.environ.get(name)
    if text is None or not text.strip():
        return default
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"environment variable {name}={text!r} is not a number") from None
    return value if value > 0 else None


_limits = {
    "max_pickle_bytes": _from_env("GLASSTORCH_LOAD_MAX_PICKLE_BYTES", 512 * 2**20, int),
    "max_inflation_ratio": _from_env("GLASSTORCH_LOAD_MAX_INFLATION_RATIO", 100.0, float),
}
_UNSET = object()


def get_load_limits() -> dict:
    """{'max_pickle_bytes': int | None, 'max_inflation_ratio': float | None}."""
    return dict(_limits)


def set_load_limits(*, max_pickle_bytes=_UNSET, max_inflation_ratio=_UNSET) -> dict:
    """Change glasstorch.load's limits (None or 0: no limit); returns the previous ones,
    so `set_load_limits(**previous)` restores them."""
    previous = get_load_limits()
    updates = {}
    for name, value in (("max_pickle_bytes", max_pickle_bytes),
                        ("max_inflation_ratio", max_inflation_ratio)):
        if value is _UNSET:
            continue
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or value < 0):
            raise ValueError(f"{name} must be a non-negative number or None, got {value!r}")
        updates[name] = value or None
    _limits.update(updates)
    return previous


def _mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def check_pickle_size(name: str, declared: int) -> None:
    limit = _limits["max_pickle_bytes"]
    if limit is not None and declared > limit:
        raise LoadLimitExceeded(
            f"its pickle ('{name}') declares {declared} bytes ({_mib(declared)}), over the "
            f"limit of {limit} bytes ({_mib(limit)}). If you trust this file, raise the "
            "limit with glasstorch.serialization.set_load_limits(max_pickle_bytes=...) or "
            "the environment variable GLASSTORCH_LOAD_MAX_PICKLE_BYTES")


def check_inflation(declared: int, file_size: int) -> None:
    ratio = _limits["max_inflation_ratio"]
    if ratio is None:
        return
    allowed = max(ratio * file_size, INFLATION_FLOOR)
    if declared > allowed:
        raise LoadLimitExceeded(
            f"its entries declare {declared} bytes ({_mib(declared)}) uncompressed, "
            f"{declared / max(file_size, 1):.0f} times the file's {file_size} bytes; the "
            f"limit is {ratio:g} times the file size (at least {_mib(INFLATION_FLOOR)}). If "
            "you trust this file, raise the limit with glasstorch.serialization."
            "set_load_limits(max_inflation_ratio=...) or the environment variable "
            "GLASSTORCH_LOAD_MAX_INFLATION_RATIO")
