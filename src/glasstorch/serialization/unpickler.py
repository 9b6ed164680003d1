"""The restricted unpickler: only allow-listed globals, mapped onto glasstorch objects.

A checkpoint's pickle names PyTorch's functions (`torch._utils._rebuild_tensor_v2`, ...) and
storage classes (`torch.FloatStorage`). `find_class` answers those names with glasstorch
stand-ins and refuses every global not on the allow-list, so loading a file never runs code
the file chose (`os.system`, `builtins.eval`, ...). Storages arrive through
`persistent_load` and are supplied by the container reader.
"""
from __future__ import annotations

import _compat_pickle
import collections
import importlib.util
import pickle
import pickletools
import sys

from ..core import dtype as dt
from ..core.device import device as Device
from ..core.shape import Size
from ..core.storage import UntypedStorage
from ..dispatch.keys import CONJ_BIT, NEG_BIT
from ..core.tensor import Tensor, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided
from . import torch_names

__all__ = ["RestrictedUnpickler", "WeightsOnlyUnpicklingError", "TypedStorageRef",
           "STORAGE_CLASS_OF", "DTYPE_OF_STORAGE",
           "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "MissingTorchGlobalError"]

# torch.<Name>Storage <-> dtype (PyTorch's legacy typed-storage class names).
STORAGE_CLASS_OF = {
    dt.float32: "FloatStorage", dt.float64: "DoubleStorage", dt.float16: "HalfStorage",
    dt.bfloat16: "BFloat16Storage", dt.int64: "LongStorage", dt.int32: "IntStorage",
    dt.int16: "ShortStorage", dt.int8: "CharStorage", dt.uint8: "ByteStorage",
    dt.bool: "BoolStorage", dt.complex64: "ComplexFloatStorage",
    dt.complex128: "ComplexDoubleStorage",
}
DTYPE_OF_STORAGE = {name: d for d, name in STORAGE_CLASS_OF.items()}


class TypedStorageRef:
    """A storage record of a given element type: what a tensor rebuild receives."""

    __slots__ = ("storage", "dtype")

    def __init__(self, storage: UntypedStorage, dtype):
        self.storage = storage
        self.dtype = dtype


class _StorageType:
    """Stands in for `torch.FloatStorage` & co. inside persistent storage records."""

    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype     # None for torch.UntypedStorage


def _parameter_class():
    """nn.Parameter when glasstorch.nn provides it (imported late: nn imports us)."""
    try:
        from ..nn.parameter import Parameter
    except ImportError:
        return None
    return Parameter


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    if not isinstance(storage, TypedStorageRef):
        raise pickle.UnpicklingError("_rebuild_tensor_v2 expects a typed storage record, "
                                     f"got {type(storage).__name__}")
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    offset = int(storage_offset)
    if len(size) != len(stride) or offset < 0 or any(s < 0 for s in size + stride):
        raise pickle.UnpicklingError(f"invalid tensor metadata: size {size}, stride {stride}, "
                                     f"storage offset {offset}")
    itemsize = storage.dtype.itemsize
    if 0 not in size:
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if (last + 1) * itemsize > storage.storage.nbytes():
            raise pickle.UnpicklingError(
                f"tensor of size {list(size)}, stride {list(stride)} and storage offset "
                f"{offset} does not fit its storage of {storage.storage.nbytes()} bytes")
    t = Tensor._make(storage.storage, offset, size, stride, storage.dtype)
    if metadata:
        t._keyset |= _math_bits(metadata)
    if requires_grad:
        t.requires_grad_(True)
    return t


_METADATA_BITS = {"conj": CONJ_BIT, "neg": NEG_BIT}


def _math_bits(metadata) -> int:
    """The key bits of torch._utils.get_tensor_metadata's dict ({'conj': True}: a conj()
    view was saved as its storage plus the bit)."""
    if not isinstance(metadata, dict) or not set(metadata) <= set(_METADATA_BITS):
        raise pickle.UnpicklingError(f"unknown tensor metadata {metadata!r}: expected a dict "
                                     "with the keys 'conj' and/or 'neg'")
    return sum(bit for name, bit in _METADATA_BITS.items() if metadata.get(name))


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    """torch's rebuild for dtypes without a typed-storage class: an untyped storage and a
    separate dtype."""
    if not isinstance(storage, UntypedStorage) or not isinstance(dtype, dt.dtype):
        raise pickle.UnpicklingError("_rebuild_tensor_v3 expects an untyped storage and a "
                                     f"dtype, got {type(storage).__name__} and "
                                     f"{type(dtype).__name__}")
    return _rebuild_tensor_v2(TypedStorageRef(storage, dtype), storage_offset, size, stride,
                              requires_grad, backward_hooks, metadata)


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _rebuild_tensor_v2(storage, storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad, backward_hooks=None, state=None):
    param_cls = _parameter_class()
    if param_cls is None:
        return data.detach().requires_grad_(bool(requires_grad))
    param = param_cls(data, requires_grad=bool(requires_grad))
    _set_python_attributes(param, state)
    return param


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _rebuild_parameter(data, requires_grad, backward_hooks, state)


class _TensorType:
    """Stands in for torch.Tensor / torch.nn.Parameter in `_rebuild_from_type_v2`."""

    __slots__ = ("parameter",)

    def __init__(self, parameter: bool):
        self.parameter = parameter


def _rebuild_from_type_v2(func, new_type, args, state):
    t = func(*args)
    if not isinstance(new_type, _TensorType):
        raise pickle.UnpicklingError("_rebuild_from_type_v2 supports torch.Tensor and "
                                     "torch.nn.Parameter only")
    param_cls = _parameter_class()
    if new_type.parameter and not (param_cls is not None and isinstance(t, param_cls)):
        t = _rebuild_parameter(t, t.requires_grad)
    _set_python_attributes(t, state)
    return t


def _set_python_attributes(t: Tensor, state) -> None:
    """Restore user attributes of a saved tensor; never a Tensor field or private name
    (`_shape`, `_accumulator`, ...), which a crafted file could otherwise point outside the
    storage or at the wrong autograd node."""
    if not state:
        return
    if not isinstance(state, dict):
        raise pickle.UnpicklingError(f"tensor state must be a dict, got {type(state).__name__}")
    for name, value in state.items():
        if not isinstance(name, str) or name.startswith("_") or hasattr(type(t), name):
            raise pickle.UnpicklingError(f"refusing to set attribute {name!r} of a loaded "
                                         "tensor")
        t.__dict__[name] = value


def _rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad=False):
    from ..ops.creation.factories import empty_strided
    return empty_strided(tuple(size), tuple(stride), dtype=dtype, device="meta",
                         requires_grad=bool(requires_grad))


def _rebuild_sparse_tensor(layout, data):
    from ..sparse.tensor import rebuild_sparse_tensor
    return rebuild_sparse_tensor(layout, data)


def _make_size(dims=()):
    return Size(tuple(int(d) for d in dims))


def _make_device(kind, index=None):
    return Device(kind, index)


_TORCH_GLOBALS: dict = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
    ("torch._utils", "_rebuild_meta_tensor_no_storage"): _rebuild_meta_tensor_no_storage,
    ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
    ("torch._utils", "_rebuild_sparse_tensor"): _rebuild_sparse_tensor,
    ("torch", "Tensor"): _TensorType(False),
    ("torch.nn.parameter", "Parameter"): _TensorType(True),
    ("torch", "Size"): _make_size,
    ("torch", "device"): _make_device,
    ("torch", "UntypedStorage"): _StorageType(None),
    ("torch.storage", "UntypedStorage"): _StorageType(None),
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "slice"): slice,
    ("builtins", "complex"): complex,
    ("builtins", "bytearray"): bytearray,
}
_TORCH_GLOBALS.update({("torch", name): _StorageType(d) for name, d in DTYPE_OF_STORAGE.items()})
_TORCH_GLOBALS.update({("torch", d.name): d for d in dt.EVERY_DTYPE})
_LAYOUTS = {"torch." + lay.name: lay for lay in (strided, sparse_coo, sparse_csr, sparse_csc,
                                                  sparse_bsr, sparse_bsc)}
_TORCH_GLOBALS[("torch.serialization", "_get_layout")] = _LAYOUTS.__getitem__


def _codecs_encode(text, encoding="utf-8"):
    """Protocol-2 pickles spell bytes as _codecs.encode(str, 'latin1'); only that is allowed."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("_codecs.encode is allowed for latin1 text only")
    return text.encode("latin1")


_TORCH_GLOBALS[("_codecs", "encode")] = _codecs_encode

_safe_entries: list = []      # what add_safe_globals was given, in order


def _entry_key(entry) -> tuple:
    """(module, name) under which a safe-globals entry (obj or (obj, "mod.name")) is found."""
    if isinstance(entry, tuple):
        if len(entry) != 2 or not isinstance(entry[1], str):
            raise ValueError("Expected tuple of length 2 (global, str of callable full path),"
                             f" but got tuple {entry!r}")
        module, _, attr = entry[1].rpartition(".")
        return module, attr
    return entry.__module__, entry.__qualname__


def _entry_object(entry):
    return entry[0] if isinstance(entry, tuple) else entry


def _user_safe_globals() -> dict:
    return {_entry_key(e): _entry_object(e) for e in _safe_entries}


def add_safe_globals(safe_globals) -> None:
    """Allow more classes/functions in weights_only loads (objects or (obj, "mod.name"))."""
    entries = list(safe_globals)
    for entry in entries:
        _entry_key(entry)                   # validate them all before adding any
    _safe_entries.extend(e for e in entries if e not in _safe_entries)


def get_safe_globals() -> list:
    """The entries added with add_safe_globals (or an active safe_globals context)."""
    return list(_safe_entries)


def clear_safe_globals() -> None:
    _safe_entries.clear()


class safe_globals:
    """Context manager: the given globals are allowed in weights_only loads inside the
    `with` block only (entries that were already allowed stay allowed after it)."""

    def __init__(self, safe_globals):
        self.safe_globals = list(safe_globals)
        self._added: list = []

    def __enter__(self):
        self._added = [e for e in self.safe_globals if e not in _safe_entries]
        add_safe_globals(self._added)
        return self

    def __exit__(self, *exc_info):
        for entry in self._added:
            if entry in _safe_entries:
                _safe_entries.remove(entry)
        self._added = []


class WeightsOnlyUnpicklingError(pickle.UnpicklingError):
    """A checkpoint names a global that weights_only loading does not allow."""


class MissingTorchGlobalError(pickle.UnpicklingError):
    """A checkpoint names a PyTorch class or function that glasstorch does not have."""


# torch dtypes glasstorch does not have: named in a clearer error than "not allowed"
_ALLOW = ("glasstorch.serialization.add_safe_globals([{0}]) or the "
          "glasstorch.serialization.safe_globals([{0}]) context manager")


def _importable(module: str) -> bool:
    """Whether weights_only=False could import `module` (checked without importing it)."""
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module.partition(".")[0]) is not None
    except (ImportError, ValueError):
        return False


def _forbidden(module: str, name: str) -> WeightsOnlyUnpicklingError:
    """The error for a global weights_only refuses, with the advice that would work."""
    full = f"{module}.{name}"
    head = (f"Weights only load failed. Unsupported global: GLOBAL {full} was not an allowed "
            "global by default. ")
    if module == "torch" or module.startswith("torch."):
        ours = torch_names.resolve(module, name)
        if ours is None:
            return WeightsOnlyUnpicklingError(
                head + f"glasstorch has no counterpart of {full}, so neither "
                "weights_only=False nor add_safe_globals can load this file in glasstorch; "
                "load it in PyTorch and save its state_dict() instead.")
        ours_name = (f"{getattr(ours, '__module__', 'glasstorch')}."
                     f"{getattr(ours, '__qualname__', name)}")
        return WeightsOnlyUnpicklingError(
            head + f"It is PyTorch's name for {ours_name} (a file that pickles whole objects, "
            "as torch.save(model) does, names such classes). If you trust this file, load it "
            f"with weights_only=False, which builds glasstorch's {name}, or allowlist it and "
            "the file's other classes (glasstorch.serialization."
            "get_unsafe_globals_in_checkpoint lists them) with "
            + _ALLOW.format(ours_name) + ". Saving model.state_dict() avoids the question.")
    advice = (f"If you trust this class/function, allowlist it with {_ALLOW.format(full)}")
    if _importable(module):
        advice += (", or load with weights_only=False (which lets the file run the code it "
                   "names: only for files from a trusted source).")
    else:
        advice += (f". (weights_only=False would not help here: module '{module}' cannot be "
                   "imported in this process.)")
    return WeightsOnlyUnpicklingError(head + advice)


def _canonical(module: str, name: str) -> tuple:
    if (module, name) in _compat_pickle.NAME_MAPPING:      # protocol 2's Python 2 names
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def globals_in_pickle(data: bytes) -> set:
    """Every global ('module.name') a pickle names, found without unpickling it
    (protocol 4's STACK_GLOBAL takes its two names from strings pushed or memoized before)."""
    found, pushed, memo = set(), [], {}
    try:
        for op, arg, _ in pickletools.genops(data):
            kind = op.name
            if kind == "GLOBAL":
                found.add("{}.{}".format(*_canonical(*arg.split(" ", 1))))
            elif kind == "STACK_GLOBAL":
                module, name = pushed[-2:] if len(pushed) >= 2 else (None, None)
                if isinstance(module, str) and isinstance(name, str):
                    found.add("{}.{}".format(*_canonical(module, name)))
            if "UNICODE" in kind:
                pushed.append(arg)
            elif kind in ("GET", "BINGET", "LONG_BINGET"):
                pushed.append(memo.get(arg))
            elif kind == "MEMOIZE":
                memo[len(memo)] = pushed[-1] if pushed else None
            elif kind in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = pushed[-1] if pushed else None
            elif kind != "FRAME":
                pushed.append(None)
    except (ValueError, EOFError) as exc:
        raise pickle.UnpicklingError(f"the pickle is invalid ({exc})") from None
    return found


def unsafe_globals(data: bytes) -> list:
    """The globals of a pickle that a weights_only load would refuse, sorted."""
    user = _user_safe_globals()
    allowed = {f"{m}.{n}" for m, n in _TORCH_GLOBALS} | {f"{m}.{n}" for m, n in user}

    def allowed_as_ours(full: str) -> bool:           # PyTorch's name of an allowed class
        module, _, name = full.rpartition(".")
        ours = torch_names.resolve(module, name) if user and full.startswith("torch.") else None
        return ours is not None and any(ours is a for a in user.values())

    return sorted(g for g in globals_in_pickle(data)
                  if g not in allowed and not allowed_as_ours(g))


class RestrictedUnpickler(pickle._Unpickler):
    """Unpickles data.pkl, resolving globals through the allow-list and storage records
    through `load_storage(dtype_or_None, key, location, numel)`.

    The pure-Python unpickler is used so that BUILD (setting an object's state) can be
    restricted too: only an OrderedDict's attributes (a state_dict's `_metadata`) may be
    set, unless weights_only is off or the object's class was added as a safe global.
    """

    dispatch = pickle._Unpickler.dispatch.copy()

    def __init__(self, file, load_storage, weights_only: bool = True, **pickle_load_args):
        super().__init__(file, **pickle_load_args)
        self._load_storage = load_storage
        self._weights_only = weights_only

    def find_class(self, module, name):
        module, name = _canonical(module, name)
        obj = _TORCH_GLOBALS.get((module, name))
        if obj is not None:
            return obj
        is_torch = module == "torch" or module.startswith("torch.")
        if self._weights_only:
            allowed = _user_safe_globals()
            obj = allowed.get((module, name))
            if obj is None and is_torch and allowed:
                ours = torch_names.resolve(module, name)     # PyTorch's name for an allowed
                if any(ours is a for a in allowed.values()):  # glasstorch class
                    obj = ours
            if obj is None:
                raise _forbidden(module, name)
            return obj
        if is_torch:                          # glasstorch never imports torch itself
            obj = torch_names.resolve(module, name)
            if obj is None:
                raise MissingTorchGlobalError(
                    f"glasstorch has no counterpart of {module}.{name}, which this file "
                    "names; load it in PyTorch and save its state_dict() instead")
            return obj
        return super().find_class(module, name)

    def load_build(self):
        if self._weights_only:
            state, inst = self.stack[-1], self.stack[-2]
            if any(type(inst) is a for a in _user_safe_globals().values()):
                pass
            elif type(inst) is not collections.OrderedDict:
                raise WeightsOnlyUnpicklingError(
                    f"Weights only load failed. Setting the state of a {type(inst).__name__} "
                    "object (pickle BUILD) is not allowed")
            elif not (isinstance(state, dict) and all(
                    isinstance(k, str) and not k.startswith("__") for k in state)):
                raise WeightsOnlyUnpicklingError(
                    "Weights only load failed. An OrderedDict's pickled state must be a dict "
                    "of attribute names")
        super().load_build()

    dispatch[pickle.BUILD[0]] = load_build

    def persistent_load(self, pid):
        if (not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage"
                or not isinstance(pid[1], _StorageType)):
            raise pickle.UnpicklingError(f"unsupported persistent storage record {pid!r}")
        _, kind, key, location, numel = pid
        storage = self._load_storage(kind.dtype, str(key), str(location), int(numel))
        return storage if kind.dtype is None else TypedStorageRef(storage, kind.dtype)
