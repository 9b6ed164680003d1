"""Random number generators: `Generator`, the default generator, seeding and RNG state.

A `Generator` owns one NumPy PCG64 bit generator; every draw advances it, so two Generators
seeded alike produce the same streams and do not disturb each other. The streams are
glasstorch's own (PyTorch's CPU generator is an MT19937 and its samplers differ), but the API,
the seeding rules and the state round trip are PyTorch's: `set_state(get_state())` continues
exactly where `get_state()` was taken.

The state is a 56-byte uint8 tensor (little-endian): an 8-byte marker, the initial seed
(uint64), PCG64's 128-bit state and increment, then its buffered 32-bit half-word and the flag
saying whether it is in use.

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
import warnings

import numpy as np

from .core import dtype as dt
from .core.device import device as _device
from .core.tensor import Tensor

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state"]

_DEFAULT_SEED = 67280421310721        # what a fresh torch.Generator() starts from
_MASK64 = (1 << 64) - 1
_MARKER = b"gtPCG64\x01"
_STATE_SIZE = 56


def _check_seed(seed) -> int:
    """A seed as an unsigned 64-bit int; negative seeds wrap (-1 is 0xffff_ffff_ffff_ffff)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = operator.index(seed)
    if not -(1 << 63) <= seed <= _MASK64:
        raise ValueError(f"manual_seed expected a seed in [-0x8000_0000_0000_0000, "
                         f"0xffff_ffff_ffff_ffff], but got {seed}")
    return seed & _MASK64


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

    __slots__ = ("device", "_numpy", "_seed", "__weakref__")

    def __init__(self, device="cpu"):
        dev = _device(device)
        if dev.type not in ("cpu", "cuda"):
            raise RuntimeError(f"{dev.type.upper()} device type not an accelerator.")
        self.device = dev
        self._reseed(_DEFAULT_SEED)

    def _reseed(self, seed: int) -> None:
        self._seed = seed
        self._numpy = np.random.Generator(np.random.PCG64(seed))

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
        """The full state as a new uint8 tensor; `set_state` of it resumes this exact stream."""
        _state_access()
        s = self._numpy.bit_generator.state
        raw = b"".join((_MARKER, self._seed.to_bytes(8, "little"),
                        s["state"]["state"].to_bytes(16, "little"),
                        s["state"]["inc"].to_bytes(16, "little"),
                        s["uinteger"].to_bytes(4, "little"), bytes((s["has_uint32"], 0, 0, 0))))
        out = Tensor._empty((_STATE_SIZE,), dt.uint8)
        out._array()[:] = np.frombuffer(raw, np.uint8)
        return out

    def set_state(self, new_state) -> "Generator":
        """Restore a state from `get_state`; a bad state raises and leaves self unchanged."""
        _state_access()
        raw = _state_bytes(new_state)
        self._numpy = _numpy_generator_from(raw)
        self._seed = int.from_bytes(raw[8:16], "little")
        return self

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
        raise RuntimeError(f"Expected a glasstorch Generator state of size {_STATE_SIZE} but "
                           f"found the input RNG state size to be {state.numel()}")
    return np.ascontiguousarray(state._array()).reshape(-1).tobytes()


def _numpy_generator_from(raw: bytes) -> np.random.Generator:
    """Validate a state's bytes and build the NumPy generator they describe."""
    inc = int.from_bytes(raw[32:48], "little")
    if raw[:8] != _MARKER:
        raise RuntimeError("Invalid RNG state: it was not made by glasstorch's "
                           "Generator.get_state() (its first 8 bytes are not the PCG64 marker)")
    if inc % 2 == 0 or raw[52] > 1 or any(raw[53:]):
        raise RuntimeError("Invalid RNG state: the PCG64 increment must be odd and the "
                           "buffered-word flag 0 or 1; was the state tensor modified?")
    bits = np.random.PCG64()
    bits.state = {"bit_generator": "PCG64",
                  "state": {"state": int.from_bytes(raw[16:32], "little"), "inc": inc},
                  "has_uint32": raw[52], "uinteger": int.from_bytes(raw[48:52], "little")}
    return np.random.Generator(bits)


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
