"""torch.func.rearrange: einops' `rearrange`, a reshape and a permute named by a pattern.

`rearrange(x, "b c (h p) w -> b h (c p w)", p=2)`: the left side names the tensor's
dimensions, splitting a parenthesised one into the axes inside (sizes from the keyword
arguments, at most one inferred); the right side orders those axes and merges the
parenthesised ones. `...` stands for the dimensions not named, `1` and `()` for a dimension
of size 1. It is one reshape, one permute and one reshape: views where the layout allows.
"""
from __future__ import annotations

import re
from math import prod

from ..core.tensor import Tensor
from ..ops.shape.joining import stack

__all__ = ["rearrange"]

_ELLIPSIS = "…"
_TOKEN = re.compile(r"\.\.\.|\(|\)|[A-Za-z_][A-Za-z0-9_]*|\d+|\S")


class DimensionBindError(ValueError):
    """A split dimension whose sizes do not multiply to the tensor's."""


def _parse(side: str) -> list:
    """The side as a list of groups, each a list of axis names ('1' and '()': a size-1
    group of no axes), or _ELLIPSIS for a top-level `...` (one group per dimension it
    stands for; inside brackets it is a name, and its dimensions merge)."""
    groups, current = [], None
    for token in _TOKEN.findall(side):
        if token == "(":
            if current is not None:
                raise ValueError(f"Axis composition is one-level (brackets inside brackets "
                                 f"not allowed): {side.strip()!r}")
            current = []
        elif token == ")":
            if current is None:
                raise ValueError(f"Brackets are not balanced: {side.strip()!r}")
            groups.append(current)
            current = None
        elif token == "...":
            (groups if current is None else current).append(_ELLIPSIS)
        elif token.isdigit():
            if token != "1":
                raise ValueError(f"Non-unitary anonymous axes are not supported in rearrange "
                                 f"(exception is length 1): {token}")
            if current is None:
                groups.append([])
        elif token.isidentifier():
            (groups if current is None else current).append(token if current is not None
                                                            else [token])
        else:
            raise ValueError(f"Unknown character {token!r} in {side.strip()!r}")
    if current is not None:
        raise ValueError(f"Brackets are not balanced: {side.strip()!r}")
    return groups


def _names(groups) -> list:
    return [name for group in groups for name in ([group] if group == _ELLIPSIS else group)]


def rearrange(tensor, pattern: str, **axes_lengths) -> Tensor:
    """The tensor (or a list of them, stacked first) rearranged as `pattern` says."""
    if isinstance(tensor, (list, tuple)):
        tensor = stack(list(tensor))
    if "->" not in pattern:
        raise ValueError(f"Pattern must contain '->': {pattern!r}")
    left, right = (_parse(side) for side in pattern.split("->", 1))
    has_ellipsis = _ELLIPSIS in _names(left)
    if has_ellipsis != (_ELLIPSIS in _names(right)):
        raise ValueError(f"Ellipsis found in one side of the pattern only: {pattern!r}")
    named = [g for g in left if g != _ELLIPSIS]
    if (has_ellipsis and len(named) > tensor.dim()) or (
            not has_ellipsis and len(left) != tensor.dim()):
        raise ValueError(f"Number of dimensions in pattern ({len(left)}) must be equal to the "
                         f"number of dimensions in the tensor ({tensor.dim()})")
    one_side = set(_names(left)) ^ set(_names(right))
    if one_side:
        raise ValueError("Identifiers only on one side of rearrange expression (should be on "
                         f"both): {one_side}")
    # the elementary axes of the left side, with their sizes
    axes, sizes, dim = [], {}, 0
    for group in left:
        if group == _ELLIPSIS:
            count = tensor.dim() - len(named)
            for k in range(count):
                name = f"{_ELLIPSIS}{k}"
                axes.append(name)
                sizes[name] = tensor.shape[dim + k]
            dim += count
            continue
        length = tensor.shape[dim]
        unknown = [n for n in group if n not in axes_lengths]
        known = prod(axes_lengths[n] for n in group if n in axes_lengths)
        if len(unknown) > 1:
            raise DimensionBindError(f"Could not infer sizes for {set(unknown)}")
        if (unknown and (known == 0 or length % known)) or (not unknown and known != length):
            raise DimensionBindError(f"inferred dimension does not evenly fit into larger "
                                     f"dimension: {length} vs "
                                     f"{tuple(axes_lengths.get(n, '?') for n in group)}")
        for n in group:
            sizes[n] = axes_lengths[n] if n in axes_lengths else length // max(known, 1)
            axes.append(n)
        dim += 1
    # the right side's order, ellipsis expanded (a group each, or merged inside brackets)
    hidden = [a for a in axes if a.startswith(_ELLIPSIS)]
    order = []
    for group in right:
        if group == _ELLIPSIS:
            order += [[a] for a in hidden]
            continue
        expanded = []
        for name in group:
            expanded += hidden if name == _ELLIPSIS else [name]
        order.append(expanded)
    flat_order = [a for group in order for a in group]
    elementary = tensor.reshape([sizes[a] for a in axes])
    permuted = elementary.permute([axes.index(a) for a in flat_order])
    return permuted.reshape([prod(sizes[a] for a in group) for group in order])
