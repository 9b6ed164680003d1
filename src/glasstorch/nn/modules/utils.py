"""Argument helpers the layers share, at PyTorch's path (torch.nn.modules.utils), where
programs and libraries import them: `_pair(3)` is (3, 3), and
`consume_prefix_in_state_dict_if_present` strips DataParallel's "module." from a state_dict."""
from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n: int, name: str = "parse"):
    """A parser that repeats a single value n times and passes an iterable through."""
    def parse(x) -> tuple:
        if isinstance(x, Iterable):
            return tuple(x)
        return tuple(repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """Each element of t, in reverse order, repeated n times: F.pad's order for a padding
    given per dim (first dim first)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults) -> list:
    """out_size with None entries taken from the trailing dims of `defaults` (a shape)."""
    if isinstance(out_size, (int, float)) or not isinstance(out_size, Iterable):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict: dict, prefix: str) -> None:
    """Strip `prefix` from the keys (and the _metadata keys) of state_dict, in place."""
    for key in sorted(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                metadata[key[len(prefix):]] = metadata.pop(key)
