"""The thread's stack of active function transforms (functorch's interpreter stack).

Every `vmap` call pushes a level with its batch size and randomness mode; `grad`, `vjp`,
`jacrev` and `jvp` count their nesting depth, so that an inner transform knows it must keep
the graph for an outer one.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class VmapLevel:
    level: int
    batch_size: int
    randomness: str


class _TransformStack(threading.local):
    def __init__(self):
        self.vmaps: list = []          # active VmapLevel, innermost last
        self.grad_depth = 0            # nesting of grad-like transforms
        self.next_level = 1


stack = _TransformStack()


def vmap_level(level: int) -> VmapLevel:
    for entry in reversed(stack.vmaps):
        if entry.level == level:
            return entry
    raise RuntimeError(f"vmap: a BatchedTensor of level {level} escaped the vmap that made "
                       "it; return it from the vmapped function instead of storing it")


class push_vmap:
    """Context manager: a new vmap level for the duration of one call."""

    def __init__(self, batch_size: int, randomness: str):
        self.batch_size, self.randomness = batch_size, randomness

    def __enter__(self) -> VmapLevel:
        entry = VmapLevel(stack.next_level, self.batch_size, self.randomness)
        stack.next_level += 1
        stack.vmaps.append(entry)
        return entry

    def __exit__(self, *exc):
        stack.vmaps.pop()
        stack.next_level -= 1


class grad_level:
    """Context manager marking one grad-like transform as active."""

    def __enter__(self):
        stack.grad_depth += 1

    def __exit__(self, *exc):
        stack.grad_depth -= 1
