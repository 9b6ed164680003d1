"""The pickler that writes glasstorch objects under PyTorch's names.

Tensors pickle as `torch._utils._rebuild_tensor_v2(<storage record>, offset, size, stride,
requires_grad, OrderedDict())`, Parameters wrap that in `torch._utils._rebuild_parameter`,
dtypes as `torch.float32` & co., and each storage becomes one persistent record
`('storage', torch.FloatStorage, key, location, numel)` whose bytes the container writes
separately. So the data.pkl is the one torch.save would write, and torch.load reads it.
The pure-Python pickler is used because it lets us emit a global by name without importing
the module that defines it (glasstorch never imports torch).
"""
from __future__ import annotations

import collections
import copyreg
import io
import pickle
import types

from ..core import dtype as dt
from ..core.device import device as Device
from ..core.shape import Size
from ..core.storage import UntypedStorage
from ..core.tensor import Tensor, layout, sparse_coo
from ..dispatch.keys import CONJ_BIT, MATH_BITS, NEG_BIT
from . import torch_names
from .unpickler import STORAGE_CLASS_OF, _parameter_class

__all__ = ["pickle_with_storages"]

PROTOCOL = 2        # torch.save's default


class _Global:
    """A module-level name written into the pickle as a GLOBAL opcode."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args):
        """Never called: pickle only requires a reduce function to be callable."""
        raise TypeError(f"{self.module}.{self.name} is a name for pickles, not a function")


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_REBUILD_META = _Global("torch._utils", "_rebuild_meta_tensor_no_storage")
_REBUILD_PARAMETER_WITH_STATE = _Global("torch._utils", "_rebuild_parameter_with_state")
_REBUILD_FROM_TYPE = _Global("torch._tensor", "_rebuild_from_type_v2")
_REBUILD_SPARSE = _Global("torch._utils", "_rebuild_sparse_tensor")
_GET_LAYOUT = _Global("torch.serialization", "_get_layout")
_TENSOR = _Global("torch", "Tensor")
_SIZE = _Global("torch", "Size")
_DEVICE = _Global("torch", "device")
_UNTYPED = _Global("torch.storage", "UntypedStorage")
_STORAGE_GLOBALS = {d: _Global("torch", name) for d, name in STORAGE_CLASS_OF.items()}
_DTYPE_GLOBALS = {d: _Global("torch", d.name) for d in dt.EVERY_DTYPE}
# dtypes without a legacy typed-storage class: an untyped storage and the dtype beside it
_REBUILD_TENSOR_V3 = _Global("torch._utils", "_rebuild_tensor_v3")


class _StorageRecord:
    """One storage as seen from a tensor of some dtype; pickled via persistent_id."""

    __slots__ = ("storage", "dtype")

    def __init__(self, storage, dtype):
        self.storage, self.dtype = storage, dtype


class _Pickler(pickle._Pickler):
    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, protocol):
        super().__init__(file, protocol=protocol)
        self.storages: dict = {}          # key -> UntypedStorage, in first-seen order
        self._keys: dict = {}             # id(storage) -> (key, dtype)
        self._parameter = _parameter_class()

    def _write_global(self, ref: _Global, obj):
        self.write(pickle.GLOBAL + f"{ref.module}\n{ref.name}\n".encode("utf-8"))
        self.memoize(obj)

    def _save_global_ref(self, obj):
        self._write_global(obj, obj)

    def _save_dtype(self, obj):
        self._write_global(_DTYPE_GLOBALS[obj], obj)

    def _save_layout(self, obj):
        self.save_reduce(_GET_LAYOUT, ("torch." + obj.name,), obj=obj)

    dispatch[_Global] = _save_global_ref
    dispatch[dt.dtype] = _save_dtype
    dispatch[layout] = _save_layout

    def save_global(self, obj, name=None):
        """Classes and functions PyTorch also has go under PyTorch's name
        (`torch.nn.modules.linear.Linear`), so torch.load builds PyTorch's objects."""
        mapped = torch_names.torch_name(obj) if name is None else None
        if mapped is None:
            super().save_global(obj, name)
        else:
            self._write_global(_Global(*mapped), obj)

    dispatch[types.FunctionType] = save_global      # the base table holds the base method

    def reducer_override(self, obj):
        cls = type(obj)
        if cls is Tensor or isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if cls is Size:
            return (_SIZE, (tuple(obj),))
        if cls is Device:
            return (_DEVICE, (obj.type,) if obj.index is None else (obj.type, obj.index))
        if isinstance(getattr(cls, "_flat_weights", None), property):
            return _reduce_with_flat_weights(obj)
        return NotImplemented

    def _reduce_tensor(self, t: Tensor):
        if t._sparse is not None:        # (layout, (indices..., values, size[, coalesced]))
            lay, data = t.__reduce_ex__(2)[1]
            at = 2 if lay is sparse_coo else 3
            data = data[:at] + (Size(data[at]),) + data[at + 1:]
            return (_REBUILD_SPARSE, (lay, data))
        hooks = collections.OrderedDict()
        state = _python_attributes(t)
        if self._parameter is not None and isinstance(t, self._parameter):
            data = Tensor._make(t._storage, t._offset, t._shape, t._stride, t.dtype)
            if state:
                return (_REBUILD_PARAMETER_WITH_STATE, (data, t.requires_grad, hooks, state))
            return (_REBUILD_PARAMETER, (data, t.requires_grad, hooks))
        if t.device.type == "meta":      # no bytes: only the metadata is saved
            rebuild = (_REBUILD_META, (t.dtype, tuple(t._shape), tuple(t._stride),
                                       t.requires_grad))
        elif t.dtype not in _STORAGE_GLOBALS:
            rebuild = (_REBUILD_TENSOR_V3, (t._storage, t._offset, tuple(t._shape),
                                            tuple(t._stride), t.requires_grad, hooks, t.dtype))
        else:
            record = _StorageRecord(t._storage, t.dtype)
            rebuild = (_REBUILD_TENSOR, (record, t._offset, tuple(t._shape),
                                         tuple(t._stride), t.requires_grad, hooks))
        if t._keyset & MATH_BITS:        # torch._utils.get_tensor_metadata's dict, appended
            rebuild = (rebuild[0], rebuild[1] + ({name: True for name, bit in (
                ("conj", CONJ_BIT), ("neg", NEG_BIT)) if t._keyset & bit},))
        if state:
            return (_REBUILD_FROM_TYPE, (rebuild[0], _TENSOR, rebuild[1], state))
        return rebuild

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRecord):
            storage, dtype = obj.storage, obj.dtype
            kind = _STORAGE_GLOBALS[dtype]
            numel = storage.nbytes() // dtype.itemsize
        elif isinstance(obj, UntypedStorage):
            storage, dtype, kind, numel = obj, None, _UNTYPED, obj.nbytes()
        else:
            return None
        seen = self._keys.get(id(storage))
        if seen is None:
            key = str(len(self.storages))
            self._keys[id(storage)] = (key, dtype)
            self.storages[key] = storage
        else:
            key, first = seen
            if dtype is not None and first is not None and first is not dtype:
                raise RuntimeError(
                    "Cannot save multiple tensors or storages that view the same data as "
                    f"different types (found {first} and {dtype})")
        return ("storage", kind, key, str(storage.device), numel)


def _reduce_with_flat_weights(module):
    """A recurrent module as PyTorch pickles it: PyTorch keeps `_flat_weights` (the weights
    in `_flat_weights_names` order) in the instance and needs it when unpickling; glasstorch
    computes it, so it is added to the pickled state."""
    state = module.__dict__.copy()
    state["_flat_weights"] = list(module._flat_weights)
    return (copyreg.__newobj__, (type(module),), state)


def _python_attributes(t: Tensor) -> dict:
    """Public attributes a user set on the tensor (`t.note = ...`); glasstorch's own fields
    in the instance dict (`_grad`, `_accumulator`, ...) are private and not saved."""
    cls = type(t)
    return {k: v for k, v in t.__dict__.items() if not k.startswith("_") and not hasattr(cls, k)}


def pickle_with_storages(obj, protocol: int = PROTOCOL) -> tuple[bytes, dict]:
    """(data.pkl bytes, {key: UntypedStorage}) for `obj`."""
    buf = io.BytesIO()
    pickler = _Pickler(buf, protocol)
    pickler.dump(obj)
    return buf.getvalue(), pickler.storages
