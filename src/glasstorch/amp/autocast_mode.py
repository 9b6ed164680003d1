"""autocast: ops chosen per device run in a lower precision, through the Autocast key.

Every CPU tensor carries the AutocastCPU key (CUDA tensors AutocastCUDA), but the key starts
in each thread's exclude set, so calls skip it. Entering `autocast(device_type)` takes the
key out of the exclude set for that thread; the ops of the device's policy have an Autocast
kernel that casts their floating inputs and passes the call down. The policies are declared
beside the ops (ops/autocast.py: lower precision, fp32, promote).

float64 inputs are left alone, as are ops not listed (they run in their inputs' dtype).
Casts of parameters (leaves that require grad) are cached for the outermost region, so a
weight used by several ops is cast once; the cache empties when that region exits.
"""
from __future__ import annotations

import functools
import threading
import warnings

from ..core import dtype as dt
from ..core.tensor import Tensor
from ..dispatch import dispatcher
from ..dispatch.keys import DispatchKey, local_keys
from ..autograd.grad_mode import _DecoratorContextManager
from ..backends import cuda_available
from ..ops.autocast import FP32, LOWER_PRECISION

DEFAULT_DTYPES = {"cpu": dt.bfloat16, "cuda": dt.float16}
SUPPORTED_DTYPES = {"cpu": (dt.bfloat16, dt.float16), "cuda": (dt.float16, dt.bfloat16)}
_KEYS = {"cpu": DispatchKey.AutocastCPU, "cuda": DispatchKey.AutocastCUDA}


class _State(threading.local):
    """Per thread: the autocast dtype of each device, the nesting depth and the cast cache."""

    def __init__(self):
        self.dtypes = dict(DEFAULT_DTYPES)
        self.cache_enabled = True
        self.depth = 0
        self.cache: dict = {}     # id(parameter) -> (parameter, its cast)


_state = _State()


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for `device_type` in this thread."""
    key = _KEYS.get(device_type)
    return key is not None and not local_keys.excluded >> key & 1


def get_autocast_dtype(device_type: str):
    """The dtype autocast casts to on `device_type` (bfloat16 on CPU, float16 on CUDA)."""
    return _state.dtypes[device_type]


def set_autocast_dtype(device_type: str, dtype) -> None:
    _state.dtypes[device_type] = dtype


def is_autocast_cache_enabled() -> bool:
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    _state.cache.clear()


class autocast(_DecoratorContextManager):
    """Run the ops of `device_type`'s policy in `dtype` inside the block (or the decorated
    function): `with glasstorch.autocast("cpu"): y = model(x)` gives bfloat16 matrix
    products and float32 losses. Nestable; `enabled=False` turns it off inside."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in _KEYS:
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        self.device = self.device_type = device_type
        self.fast_dtype = _state.dtypes[device_type] if dtype is None else dtype
        self._enabled = bool(enabled)
        self._cache_enabled = _state.cache_enabled if cache_enabled is None else cache_enabled
        if self._enabled and device_type == "cuda" and not cuda_available():
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                          UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled and self.fast_dtype not in SUPPORTED_DTYPES[device_type]:
            if device_type == "cpu":
                warnings.warn("In CPU autocast, but the target dtype is not supported. "
                              "Disabling autocast.\nCPU Autocast only supports dtypes of "
                              "torch.bfloat16, torch.float16 currently.", UserWarning,
                              stacklevel=2)
            else:
                warnings.warn("In CUDA autocast, but the target dtype is not supported. "
                              "Disabling autocast.", UserWarning, stacklevel=2)
            self._enabled = False

    def clone(self):
        return autocast(self.device_type, self.fast_dtype, self._enabled, self._cache_enabled)

    def __enter__(self):
        bit = 1 << _KEYS[self.device_type]
        self._saved = (local_keys.excluded, _state.dtypes[self.device_type],
                       _state.cache_enabled)
        local_keys.excluded = (local_keys.excluded & ~bit) if self._enabled \
            else (local_keys.excluded | bit)
        _state.dtypes[self.device_type] = self.fast_dtype
        _state.cache_enabled = self._cache_enabled
        _state.depth += 1
        return self

    def __exit__(self, *exc):
        local_keys.excluded, _state.dtypes[self.device_type], _state.cache_enabled = \
            self._saved
        _state.depth -= 1
        if _state.depth == 0:
            _state.cache.clear()
        return False


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast supports `device_type` (PyTorch: cpu, cuda and a few others)."""
    return device_type in _KEYS


# ---- the Autocast kernels ------------------------------------------------------------------

def _eligible(t, target) -> bool:
    """A floating tensor autocast may cast: not float64, not already `target`."""
    return (isinstance(t, Tensor) and t.dtype.is_floating_point and t.dtype is not dt.float64
            and t.dtype is not target)


def _cast(t: Tensor, target):
    if not _eligible(t, target):
        return t
    if _state.cache_enabled and t.grad_fn is None and t._requires_grad:
        hit = _state.cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1].dtype is target:
            return hit[1]
        cast = t.to(target)
        _state.cache[id(t)] = (t, cast)
        return cast
    return t.to(target)


def _cast_args(args, target) -> tuple:
    out = []
    for a in args:
        if isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a):
            out.append(type(a)(_cast(x, target) for x in a))
        else:
            out.append(_cast(a, target))
    return tuple(out)


def _widest(args):
    """The widest floating dtype among the tensors of `args` (None without floating ones)."""
    widest = None
    for a in args:
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(t, Tensor) and t.dtype.is_floating_point:
                if widest is None or t.dtype.itemsize > widest.itemsize:
                    widest = t.dtype
    return widest


def _autocast_kernel(device_type: str, policy: str):
    key = _KEYS[device_type]

    def kernel(op, ks, *args):
        # the casts run with this device's Autocast key off, as the op below does
        bit = 1 << key
        saved = local_keys.excluded
        local_keys.excluded = saved | bit
        try:
            if policy == LOWER_PRECISION:
                args = _cast_args(args, _state.dtypes[device_type])
            elif policy == FP32:
                args = _cast_args(args, dt.float32)
            else:
                widest = _widest(args)
                if widest is not None:
                    args = _cast_args(args, widest)
            return op.redispatch(ks, *args)
        finally:
            local_keys.excluded = saved
    kernel.__qualname__ = f"autocast_{device_type}_{policy}"
    return kernel


def _register_policies() -> None:
    """An Autocast kernel for each device of each operator declared with a policy
    (ops/autocast.py); the other operators pass the Autocast keys through."""
    kernels = {}
    for op in dispatcher.all_operators():
        for device_type, policy in op.info.get("autocast", {}).items():
            kernel = kernels.get((device_type, policy))
            if kernel is None:
                kernel = kernels[device_type, policy] = _autocast_kernel(device_type, policy)
            op.register(_KEYS[device_type], kernel)


_register_policies()


# ---- custom Functions ----------------------------------------------------------------------

def custom_fwd(fwd=None, *, device_type: str = "cpu", cast_inputs=None):
    """Decorate a custom Function's forward: with `cast_inputs` (inside an autocast region),
    floating tensor inputs are cast to it and the forward runs with autocast off; otherwise
    it runs in the caller's autocast state. custom_bwd gives backward the state forward ran
    in."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def forward(*args, **kwargs):
        ctx = args[0]
        ctx._fwd_autocast = (is_autocast_enabled(device_type), get_autocast_dtype(device_type))
        if cast_inputs is None or not ctx._fwd_autocast[0]:
            return fwd(*args, **kwargs)
        ctx._fwd_autocast = (False, ctx._fwd_autocast[1])   # the forward ran with it off
        with autocast(device_type, enabled=False):
            cast = _cast_args(args[1:], cast_inputs)
            return fwd(ctx, *cast, **{k: _cast(v, cast_inputs) for k, v in kwargs.items()})
    return forward


def custom_bwd(bwd=None, *, device_type: str = "cpu"):
    """Decorate a custom Function's backward: it runs in the autocast state its forward ran
    in."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def backward(ctx, *grads):
        enabled, dtype = getattr(ctx, "_fwd_autocast", (False, None))
        with autocast(device_type, dtype=dtype, enabled=enabled):
            return bwd(ctx, *grads)
    return backward
