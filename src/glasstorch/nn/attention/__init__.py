"""torch.nn.attention: choosing the kernel behind F.scaled_dot_product_attention.

`sdpa_kernel(backends)` records which backends a block allows, as PyTorch's context manager
does (and restores the previous set after it). glasstorch has one implementation, the math
formulation, which stands in for every backend, so code written to pick a fused kernel runs
and computes the same values. The flash-attention registry (FA3, FA4 in PyTorch: kernels for
particular NVIDIA GPUs) starts empty here.

    >>> import glasstorch as torch
    >>> from glasstorch.nn.attention import SDPBackend, sdpa_kernel
    >>> with sdpa_kernel(SDPBackend.MATH):
    ...     y = torch.nn.functional.scaled_dot_product_attention(*[torch.ones(1, 2, 4)] * 3)
    >>> tuple(y.shape)
    (1, 2, 4)
"""
from __future__ import annotations

import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS",
           "register_flash_attention_impl", "activate_flash_attention_impl",
           "list_flash_attention_impls", "current_flash_attention_impl",
           "restore_flash_attention_impl"]

# Set to True to be told why a fused kernel could not run (glasstorch runs the math kernel).
WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.Enum):
    """The implementations scaled_dot_product_attention can dispatch to."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __repr__(self) -> str:
        return f"<SDPBackend.{self.name}: {self.value}>"


_ALL = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH,
        SDPBackend.CUDNN_ATTENTION, SDPBackend.OVERRIDEABLE]
_enabled: list = list(_ALL)


def _cur_sdpa_kernel_backends() -> list:
    """The backends scaled_dot_product_attention may use now, in priority order."""
    return list(_enabled)


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Within the block, scaled_dot_product_attention may use only `backends` (a backend or
    a list; with set_priority, in that order of preference)."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of "
                             f"SDPBackend instances, got {type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = list(_enabled)
    try:
        _enabled[:] = backends if set_priority else [b for b in _ALL if b in backends]
        yield {}
    finally:
        _enabled[:] = previous


_flash_impls: dict = {}
_active_flash_impl = [None]


def register_flash_attention_impl(impl: str, *, register_fn) -> None:
    """Make a flash-attention implementation selectable by name."""
    _flash_impls[impl] = register_fn


def list_flash_attention_impls() -> list:
    return list(_flash_impls)


def activate_flash_attention_impl(impl: str) -> None:
    if impl not in _flash_impls:
        raise ValueError(f"Unknown flash attention impl '{impl}'. Available implementations: "
                         f"{list_flash_attention_impls()}")
    _flash_impls[impl]()
    _active_flash_impl[0] = impl


def current_flash_attention_impl():
    return _active_flash_impl[0]


def restore_flash_attention_impl(_raise_warn: bool = True) -> None:
    _active_flash_impl[0] = None
