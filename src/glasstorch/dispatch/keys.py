"""Dispatch keys, key sets and the thread-local include/exclude sets (c10/core/DispatchKey.h).

A key set is a plain int bitmask: bit k set means DispatchKey(k) is present, and a higher
bit means higher priority, so the key to run is `ks.bit_length() - 1`. `DispatchKeySet`
wraps such an int for display.
"""
from __future__ import annotations

import threading
from enum import IntEnum


class DispatchKey(IntEnum):
    """Dispatch keys from lowest to highest priority."""

    Meta = 0
    CPU = 1
    CUDA = 2
    SparseCPU = 3       # sparse layouts (glasstorch.sparse): above the dense backends, below
    SparseCUDA = 4      # everything else; their kernels are called boxed, as keys above
    SparseCsrCPU = 5    # the dense backends are
    SparseCsrCUDA = 6
    BackendSelect = 7
    Python = 8  # TorchDispatchMode: below autograd, so a mode sees the ops autograd runs
    Conjugate = 9   # the lazy conjugate and negative bits (ops/math_bits.py): a tensor with
    Negative = 10   # the bit carries the key; kernels below see the values materialised
    ADInplaceOrView = 11
    AutogradMeta = 12
    AutogradCPU = 13
    AutogradCUDA = 14
    AutocastCPU = 15
    AutocastCUDA = 16
    FuncTorchBatched = 17   # vmap's BatchedTensor: above autograd, so vmap(grad(f)) works
    FuncTorchVmapMode = 18  # included while vmap runs: random factories see the randomness


NUM_KEYS = len(DispatchKey)
BACKEND_KEYS = (DispatchKey.Meta, DispatchKey.CPU, DispatchKey.CUDA)
BACKEND_MASK = sum(1 << k for k in BACKEND_KEYS)
SPARSE_KEYS = (DispatchKey.SparseCPU, DispatchKey.SparseCUDA, DispatchKey.SparseCsrCPU,
               DispatchKey.SparseCsrCUDA)
AUTOGRAD_MASK = sum(1 << k for k in (DispatchKey.AutogradMeta, DispatchKey.AutogradCPU,
                                     DispatchKey.AutogradCUDA))
AUTOCAST_MASK = (1 << DispatchKey.AutocastCPU) | (1 << DispatchKey.AutocastCUDA)
ALL_MASK = (1 << NUM_KEYS) - 1
CONJ_BIT = 1 << DispatchKey.Conjugate     # in a tensor's _keyset: is_conj()
NEG_BIT = 1 << DispatchKey.Negative       # in a tensor's _keyset: is_neg()
MATH_BITS = CONJ_BIT | NEG_BIT

# Registration-only alias keys and the runtime keys each one stands for.
ALIAS_KEYS = {
    "CompositeExplicitAutograd": BACKEND_KEYS,
    "CompositeImplicitAutograd": BACKEND_KEYS + SPARSE_KEYS + (
        DispatchKey.Python, DispatchKey.Conjugate, DispatchKey.Negative,
        DispatchKey.AutogradMeta, DispatchKey.AutogradCPU, DispatchKey.AutogradCUDA),
    "Autograd": (DispatchKey.AutogradMeta, DispatchKey.AutogradCPU, DispatchKey.AutogradCUDA),
    "Autocast": (DispatchKey.AutocastCPU, DispatchKey.AutocastCUDA),
}
# The backends below each key CompositeImplicitAutograd serves above them: the op decomposes
# there unless one of these has a kernel of its own. Python is among them because PyTorch
# decomposes at the Autograd key, which all its tensors carry, so a dispatch mode never sees
# such an op; glasstorch's tensors skip autograd unless they need grad.
BACKENDS_BELOW = {DispatchKey.Python: BACKEND_KEYS,
                  DispatchKey.Conjugate: BACKEND_KEYS,   # PyTorch decomposes above the bits
                  DispatchKey.Negative: BACKEND_KEYS,
                  DispatchKey.AutogradMeta: (DispatchKey.Meta,),
                  DispatchKey.AutogradCPU: (DispatchKey.CPU,),
                  DispatchKey.AutogradCUDA: (DispatchKey.CUDA,),
                  **{key: () for key in SPARSE_KEYS}}

# The keys a dense tensor of each device type carries. PyTorch's tensors always carry their
# Autograd<Backend> key too; glasstorch adds it only while the tensor requires grad
# (Tensor._set_requires_grad), so calls on plain tensors skip the Autograd layer entirely.
TENSOR_KEYSETS = {
    "cpu": (1 << DispatchKey.CPU) | (1 << DispatchKey.ADInplaceOrView)
    | (1 << DispatchKey.AutocastCPU),
    "cuda": (1 << DispatchKey.CUDA) | (1 << DispatchKey.ADInplaceOrView)
    | (1 << DispatchKey.AutocastCUDA),
    "meta": (1 << DispatchKey.Meta) | (1 << DispatchKey.ADInplaceOrView),
}
AUTOGRAD_KEY_OF_DEVICE = {"cpu": 1 << DispatchKey.AutogradCPU,
                          "cuda": 1 << DispatchKey.AutogradCUDA,
                          "meta": 1 << DispatchKey.AutogradMeta}
BACKEND_OF_DEVICE = {"cpu": DispatchKey.CPU, "cuda": DispatchKey.CUDA, "meta": DispatchKey.Meta}


class DispatchKeySet(int):
    """A key-set bitmask that prints its keys: `DispatchKeySet(CPU, AutogradCPU)`.

    It is an int, so it can be passed wherever the dispatcher takes a mask (`redispatch`).
    """

    __slots__ = ()

    def __new__(cls, value=0):
        """From a mask, or from one key as PyTorch's `DispatchKeySet(DispatchKey.CPU)`."""
        return super().__new__(cls, 1 << value if isinstance(value, DispatchKey) else value)

    @property
    def mask(self) -> int:
        return int(self)

    def __iter__(self):
        return (DispatchKey(k) for k in range(NUM_KEYS) if self >> k & 1)

    def has(self, key: DispatchKey) -> bool:
        return bool(self >> key & 1)

    def highest(self) -> DispatchKey | None:
        return DispatchKey(self.bit_length() - 1) if self else None

    def add(self, key: DispatchKey) -> "DispatchKeySet":
        return DispatchKeySet(self | 1 << key)

    def remove(self, key: DispatchKey) -> "DispatchKeySet":
        return DispatchKeySet(self & ~(1 << key))

    def __repr__(self):
        return f"DispatchKeySet({', '.join(k.name for k in self)})"

    __str__ = __repr__


# How many threads have include/exclude sets other than the default (nothing included, the
# autocast keys excluded). While it is 0 every thread's are the default, which the generated
# wrappers' fast path reads here: one list read instead of two thread-local ones. A thread
# that ends away from the default keeps the count up (every call then takes the general path).
threads_off_default = [0]
_count_lock = threading.Lock()


class _LocalKeys(threading.local):
    """Per-thread include/exclude sets; autocast keys start excluded, as in PyTorch. Setting
    either keeps `threads_off_default` up to date."""

    def __init__(self):
        self._included = 0
        self._excluded = AUTOCAST_MASK
        self._default = True

    @property
    def included(self) -> int:
        return self._included

    @included.setter
    def included(self, mask: int) -> None:
        self._included = mask
        self._recount()

    @property
    def excluded(self) -> int:
        return self._excluded

    @excluded.setter
    def excluded(self, mask: int) -> None:
        self._excluded = mask
        self._recount()

    def _recount(self) -> None:
        default = self._included == 0 and self._excluded == AUTOCAST_MASK
        if default is not self._default:
            with _count_lock:
                self._default = default
                threads_off_default[0] += -1 if default else 1


local_keys = _LocalKeys()


class _KeyGuard:
    """Add keys to the thread's include and/or exclude set for the duration of a block."""

    __slots__ = ("include", "exclude", "_saved")

    def __init__(self, include: int = 0, exclude: int = 0):
        self.include, self.exclude = include, exclude

    def __enter__(self):
        self._saved = (local_keys.included, local_keys.excluded)
        local_keys.included = (local_keys.included | self.include) & ~self.exclude
        local_keys.excluded = (local_keys.excluded | self.exclude) & ~self.include
        return self

    def __exit__(self, *exc):
        local_keys.included, local_keys.excluded = self._saved


def include_keys(mask: int) -> _KeyGuard:
    return _KeyGuard(include=mask)


def exclude_keys(mask: int) -> _KeyGuard:
    return _KeyGuard(exclude=mask)


def local_keyset() -> tuple:
    """(included, excluded) of this thread, as DispatchKeySets."""
    return DispatchKeySet(local_keys.included), DispatchKeySet(local_keys.excluded)
