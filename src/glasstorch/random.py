"""Random number generators: `Generator`, the default generator, seeding and RNG state.

A `Generator` is PyTorch's CPU generator: an MT19937 engine seeded as PyTorch seeds it (the
low 32 bits of the seed, Knuth's initialization), plus the cached second value of its last
Box-Muller pair. NumPy's `MT19937` bit generator has the same core, so the engine is one,
given PyTorch's key and position: each draw takes 32-bit words (`random()`) or pairs of them
(`random64()`, high word first) in bulk. The samplers in backends/cpu/random.py turn the
words into values with PyTorch's transforms, so a seeded program draws PyTorch's numbers.

The state is PyTorch's 5056-byte layout (`torch.get_rng_state()`), little-endian: the
initial seed (uint64), `left` and `seeded` (int32), `next` (uint64), the 624 words (each in
a uint64), three legacy doubles (the middle one the cached normal) and its validity flag
(int32, padded), then the cached float normal (float32) and its flag.

    >>> import glasstorch as torch
    >>> g = torch.Generator().manual_seed(0)
    >>> state = g.get_state()
    >>> a = torch.rand(3, generator=g)
    >>> b = torch.rand(3, generator=g.set_state(state))
    >>> bool((a == b).all())
    True
"""
from __future__ import annotations

import contextlib
import importlib
import operator
import os
import struct
import warnings

import numpy as np

from .core import dtype as dt
from .core.device import device as _device
from .core.tensor import Tensor

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "thread_safe_generator"]

_DEFAULT_SEED = 67280421310721        # what a fresh torch.Generator() starts from
_MASK64 = (1 << 64) - 1
_WORDS = 624                          # MT19937's state size, in 32-bit words
_HEAD = struct.Struct("<QiiQ")        # initial seed, left, seeded, next
_TAIL = struct.Struct("<dddi4xf?3x")  # normal_x, normal_y, normal_rho, valid; float normal
_STATE_SIZE = _HEAD.size + 8 * _WORDS + _TAIL.size        # 5056, as PyTorch's


def _check_seed(seed) -> int:
    """A seed as an unsigned 64-bit int; negative seeds wrap (-1 is 0xffff_ffff_ffff_ffff)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = operator.index(seed)
    if not -(1 << 63) <= seed <= _MASK64:
        raise ValueError(f"manual_seed expected a seed in [-0x8000_0000_0000_0000, "
                         f"0xffff_ffff_ffff_ffff], but got {seed}")
    return seed & _MASK64


def _seeded_key(seed: int) -> np.ndarray:
    """MT19937's 624 words from a seed, as PyTorch initializes them (its low 32 bits)."""
    key = np.empty(_WORDS, np.uint32)
    word = seed & 0xFFFF_FFFF
    key[0] = word
    for j in range(1, _WORDS):
        word = (1812433253 * (word ^ (word >> 30)) + j) & 0xFFFF_FFFF
        key[j] = word
    return key


def _engine(key: np.ndarray, position: int) -> np.random.MT19937:
    bits = np.random.MT19937()
    bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": position}}
    return bits


# Called before a generator's state is read or replaced, when set: the compiler's capture
# sets it, so that random ops it has recorded but not yet run draw first (as in eager).
_before_state_access = None


def _state_access() -> None:
    hook = _before_state_access
    if hook is not None:
        hook()


class Generator:
    """A random number generator; pass it as `generator=` to any sampling function.

    >>> g = Generator().manual_seed(42)
    >>> g.initial_seed()
    42
    """

    __slots__ = ("device", "_bits", "_seed", "_fresh", "_next_double_normal",
                 "_next_float_normal", "__weakref__")

    def __init__(self, device="cpu"):
        dev = _device(device)
        if dev.type not in ("cpu", "cuda"):
            raise RuntimeError(f"{dev.type.upper()} device type not an accelerator.")
        self.device = dev
        self._reseed(_DEFAULT_SEED)

    def _reseed(self, seed: int) -> None:
        self._seed = seed
        self._bits = _engine(_seeded_key(seed), _WORDS)
        self._fresh = True               # PyTorch's `next` is 0 until the first draw
        self._next_double_normal = None   # the sin half of the last Box-Muller pair
        self._next_float_normal = None

    # ---- the engine's words, in bulk ------------------------------------------------------
    def _random(self, n: int) -> np.ndarray:
        """The next n 32-bit words (as uint64), PyTorch's `random()` n times."""
        self._fresh = False
        return self._bits.random_raw(n)

    def _random64(self, n: int) -> np.ndarray:
        """The next n 64-bit values, each two words high first: PyTorch's `random64()`."""
        words = self._random(2 * n).reshape(n, 2)
        return (words[:, 0] << np.uint64(32)) | words[:, 1]

    # ---- the public API -------------------------------------------------------------------
    def manual_seed(self, seed) -> "Generator":
        """Restart the stream from `seed` (an int in [-2**63, 2**64)); returns self."""
        _state_access()
        self._reseed(_check_seed(seed))
        return self

    def seed(self) -> int:
        """Reseed from the operating system's entropy and return the new seed."""
        _state_access()
        new = int.from_bytes(os.urandom(8), "little")
        self._reseed(new)
        return new

    def initial_seed(self) -> int:
        """The seed the stream was last started from."""
        return self._seed

    def get_state(self) -> Tensor:
        """The full state as a new uint8 tensor in PyTorch's layout; `set_state` of it (here
        or in PyTorch) resumes this exact stream."""
        _state_access()
        state = self._bits.state["state"]
        pos = int(state["pos"])
        cached, flt = self._next_double_normal, self._next_float_normal
        raw = b"".join((
            _HEAD.pack(self._seed, _WORDS + 1 - pos, 1, 0 if self._fresh else pos),
            np.asarray(state["key"], np.uint64).astype("<u8").tobytes(),
            _TAIL.pack(0.0, 0.0 if cached is None else cached, 0.0, cached is not None,
                       0.0 if flt is None else flt, flt is not None)))
        out = Tensor._empty((_STATE_SIZE,), dt.uint8)
        out._array()[:] = np.frombuffer(raw, np.uint8)
        return out

    def set_state(self, new_state) -> "Generator":
        """Restore a state from `get_state` (or PyTorch's); a bad state raises and leaves
        self unchanged."""
        _state_access()
        raw = _state_bytes(new_state)
        seed, left, seeded, next_ = _HEAD.unpack_from(raw, 0)
        words = np.frombuffer(raw, "<u8", _WORDS, _HEAD.size)
        _, cached, _, cached_valid, flt, flt_valid = _TAIL.unpack_from(raw, _STATE_SIZE -
                                                                       _TAIL.size)
        fresh = left == 1 and next_ == 0
        if not (seeded and 0 < left <= _WORDS and next_ <= _WORDS) or (
                not fresh and left + next_ != _WORDS + 1):
            raise RuntimeError("Invalid mt19937 state")
        self._bits = _engine(words.astype(np.uint32), _WORDS + 1 - left)   # low words kept
        self._seed, self._fresh = seed, fresh
        self._next_double_normal = cached if cached_valid else None
        self._next_float_normal = flt if flt_valid else None
        return self

    def _sharing_engine(self, device) -> "Generator":
        """A generator on `device` drawing from this one's engine (a GPU generator's draws
        made on the host); the cached normal stays this one's."""
        alias = Generator.__new__(Generator)
        alias.device, alias._bits, alias._seed = _device(device), self._bits, self._seed
        alias._fresh, alias._next_double_normal, alias._next_float_normal = False, None, None
        return alias

    def __reduce__(self):
        return (_restore, (str(self.device), _state_bytes(self.get_state())))

    def __repr__(self):
        return (f"<glasstorch.Generator device='{self.device}' "
                f"initial_seed={self._seed} at {id(self):#x}>")


def _state_bytes(state) -> bytes:
    if not isinstance(state, Tensor):
        raise TypeError(f"expected a torch.ByteTensor, but got {type(state).__name__}")
    if state.dtype is not dt.uint8 or state.device.type != "cpu":
        raise TypeError("RNG state must be a torch.ByteTensor")
    if state.numel() != _STATE_SIZE:
        raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_SIZE} but found "
                           f"the input RNG state size to be {state.numel()}")
    return np.ascontiguousarray(state._array()).reshape(-1).tobytes()


def _restore(device, raw: bytes) -> Generator:
    g = Generator(device)
    state = Tensor._empty((len(raw),), dt.uint8)
    state._array()[:] = np.frombuffer(raw, np.uint8)
    return g.set_state(state)


# The process-wide generator, seeded non-deterministically at start-up as PyTorch's is.
default_generator = Generator()
default_generator.seed()


def _device_module(device_type: str):
    """glasstorch.<device_type> (e.g. glasstorch.cuda) when that backend module exists."""
    try:
        return importlib.import_module(f"glasstorch.{device_type}")
    except ImportError:
        return None


def manual_seed(seed) -> Generator:
    """Seed the default generator (and every device's) and return the default generator."""
    seed = int(seed)
    cuda = _device_module("cuda")
    if cuda is not None and hasattr(cuda, "manual_seed_all"):
        cuda.manual_seed_all(seed)
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator non-deterministically; returns the 64-bit seed used."""
    new = default_generator.seed()
    cuda = _device_module("cuda")
    if cuda is not None and hasattr(cuda, "manual_seed_all"):
        cuda.manual_seed_all(new)
    return new


def initial_seed() -> int:
    """The seed the default generator was last started from."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restore the default generator's state from `get_rng_state()`."""
    default_generator.set_state(new_state)


_fork_rng_warned = False


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None):
    """Run a block and then put the RNG states back as they were before it.

    The CPU generator is always forked; `devices` lists the accelerator devices whose
    generators are forked too (all of them by default).

    >>> import glasstorch as torch
    >>> _ = torch.manual_seed(0)
    >>> with torch.random.fork_rng():
    ...     a = torch.rand(2)
    >>> bool((torch.rand(2) == a).all())
    True
    """
    global _fork_rng_warned
    if device_type == "meta" or not enabled:
        yield
        return
    device_type = device_type or "cuda"
    device_mod = _device_module(device_type)
    if devices is None:
        count = device_mod.device_count() if device_mod is not None and \
            device_mod.is_available() else 0
        if count > 1 and not _fork_rng_warned:
            warnings.warn(f"{device_type.upper()} reports that you have {count} available "
                          f"devices, and you have used {_caller} without explicitly specifying "
                          f"which devices are being used; every device's generator will be "
                          f"saved and restored, which can be slow. Pass the '{_devices_kw}' "
                          f"argument to name the devices you use.", stacklevel=3)
            _fork_rng_warned = True
        devices = range(count)
    devices = list(devices)
    if devices and device_mod is None:
        raise RuntimeError(f"glasstorch has no module of `{device_type}`, so the RNG of "
                           f"devices {devices} cannot be forked")
    cpu_state = get_rng_state()
    device_states = [device_mod.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, s in zip(devices, device_states):
            device_mod.set_rng_state(s, d)


def thread_safe_generator():
    """The Generator of the DataLoader thread worker this runs in, for transforms that
    draw random numbers; None in the main process and in process workers (use the global
    generator there)."""
    from .utils.data import get_worker_info
    info = get_worker_info()
    if info is not None and getattr(info, "worker_method", None) == "thread":
        return getattr(info, "rng", None)
    return None
