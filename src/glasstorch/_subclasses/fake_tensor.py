"""`torch._subclasses.fake_tensor`: tensors with metadata and no data.

A `FakeTensor` has a device (any: 'cuda' works without a GPU), dtype, shape, strides,
requires_grad and a version counter, over a 'meta' storage that holds no bytes. Inside a
`FakeTensorMode` every operator call reaches the mode (a TorchDispatchMode), which runs the
op's Meta kernel, the one each op declaration already provides, on plain meta aliases of
its inputs, and wraps the outputs as FakeTensors on the device the op would have used: the
common device of the inputs (CPU 0-dim tensors join any device), or its `device=` argument
(factories, `to`). Autograd runs above the mode, so the backward pass of a fake forward
runs on fakes too. Nothing is allocated and no kernel computes values, so a model's shapes,
dtypes and devices can be checked, and its costs counted, without the memory or the GPU.

Ops that need values raise PyTorch's exceptions: `DataDependentOutputException` (`.item()`,
`.tolist()`), `DynamicOutputShapeException` (nonzero, masked_select, unique: the output's
shape depends on the data), `UnsupportedOperatorException` (no Meta kernel).
"""
from __future__ import annotations

import weakref

from ..core import dtype as dt
from ..core.device import META, as_device, device as device_
from ..core.printing import _add_suffixes, _grad_fn_name
from ..core.storage import UntypedStorage
from ..core.tensor import Tensor
from ..dispatch.dispatcher import bind_arguments
from ..dispatch.keys import DispatchKey
from ..dispatch.modes import TorchDispatchMode

__all__ = ["FakeTensor", "FakeTensorMode", "UnsupportedFakeTensorException",
           "DataDependentOutputException", "DynamicOutputShapeException",
           "UnsupportedOperatorException", "FakeTensorDeviceMismatchError"]


class UnsupportedFakeTensorException(RuntimeError):
    """A tensor that cannot be made fake, or fake tensors of two different modes."""


class DataDependentOutputException(RuntimeError):
    """The op's result is a value read from the data (`.item()`): fakes have none."""

    def __init__(self, func):
        super().__init__(str(func))
        self.func = func


class DynamicOutputShapeException(RuntimeError):
    """The op's output shape depends on the data (nonzero, masked_select, unique)."""

    def __init__(self, func):
        super().__init__(str(func))
        self.func = func


class UnsupportedOperatorException(RuntimeError):
    """The op has no Meta kernel, so its outputs cannot be described without running it."""

    def __init__(self, func):
        super().__init__(str(func))
        self.func = func


class FakeTensorDeviceMismatchError(RuntimeError):
    """Fake inputs on two devices, where a real call would have raised too."""


# Ops whose output shape is read from the data; PyTorch raises DynamicOutputShapeException.
_DYNAMIC_SHAPE_OPS = frozenset({"aten::nonzero", "aten::masked_select", "aten::_unique2",
                                "aten::unique_dim", "aten::unique_consecutive",
                                "aten::repeat_interleave.Tensor", "aten::bincount",
                                "aten::argwhere"})
_LOCAL_SCALAR_DENSE = "aten._local_scalar_dense.default"


class FakeTensor(Tensor):
    """A tensor with metadata and no data, made by a FakeTensorMode (see the module)."""

    fake_device = META
    fake_mode = None

    @classmethod
    def _wrap(cls, meta: Tensor, device, mode: "FakeTensorMode") -> "FakeTensor":
        """A FakeTensor over meta tensor `meta`'s storage and version counter."""
        fake = cls._make(meta._storage, meta._offset, meta._shape, meta._stride, meta.dtype,
                         meta._vc)
        fake.fake_device = device
        fake.fake_mode = mode
        return fake

    def _meta_alias(self) -> Tensor:
        """A plain meta tensor over the same storage and version counter (what kernels see)."""
        return Tensor._make(self._storage, self._offset, self._shape, self._stride, self.dtype,
                            self._vc)

    # ---- the device it pretends to be on ---------------------------------------------
    @property
    def device(self):
        return self.fake_device

    @property
    def is_cuda(self) -> bool:
        return self.fake_device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.fake_device.type == "cpu"

    @property
    def is_meta(self) -> bool:
        return self.fake_device.type == "meta"

    def get_device(self) -> int:
        d = self.fake_device
        return -1 if d.type == "cpu" else (d.index or 0)

    # ---- no data ---------------------------------------------------------------------
    def _array(self):
        raise DataDependentOutputException(_LOCAL_SCALAR_DENSE)

    def numpy(self, *, force: bool = False):
        raise DataDependentOutputException(_LOCAL_SCALAR_DENSE)

    def detach(self) -> "FakeTensor":
        out = FakeTensor._wrap(self, self.fake_device, self.fake_mode)
        out._inference = self._inference
        return out

    @property
    def data(self) -> "FakeTensor":
        out = FakeTensor._wrap(self, self.fake_device, self.fake_mode)
        out._vc = type(self._vc)() if self._vc is not None else None
        return out

    @data.setter
    def data(self, value: Tensor) -> None:
        self.dtype = value.dtype
        self._set_metadata(value._storage, value._offset, value._shape, value._stride)
        self.fake_device = value.device

    def __repr__(self, *, tensor_contents=None) -> str:
        suffixes = []
        if self.fake_device.type != "cpu":
            suffixes.append(f"device='{self.fake_device}'")
        suffixes.append(f"size={tuple(self._shape)}")
        if self.dtype is not dt.get_default_dtype():
            suffixes.append(f"dtype={self.dtype}")
        grad_fn = _grad_fn_name(self)
        if grad_fn is not None:
            suffixes.append(f"grad_fn=<{grad_fn}>")
        elif self.requires_grad:
            suffixes.append("requires_grad=True")
        return _add_suffixes("FakeTensor(...", suffixes, len("FakeTensor("))

    def __reduce_ex__(self, protocol):
        raise RuntimeError("Cannot pickle a FakeTensor: it has no data")

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        """A call on fakes made outside their mode: run it in the mode (for the dispatcher's
        tensor-subclass support; until then calls outside the mode reach the Meta kernels
        directly and return plain meta tensors)."""
        mode = _mode_of(args, kwargs or {})
        with mode:
            return func(*args, **(kwargs or {}))


def _mode_of(args, kwargs) -> "FakeTensorMode":
    for value in _leaves((args, kwargs)):
        if isinstance(value, FakeTensor):
            return value.fake_mode
    raise UnsupportedFakeTensorException("no FakeTensor among the arguments")


def _leaves(tree):
    if isinstance(tree, (list, tuple)):
        for item in tree:
            yield from _leaves(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from _leaves(item)
    else:
        yield tree


def _fake_device(d):
    """A device argument as a fake's device: 'cuda' means cuda:0, as PyTorch's fakes say
    (without asking a GPU which one is current: there may be none)."""
    d = as_device(d)
    return device_("cuda", 0) if d.type == "cuda" and d.index is None else d


def _describe(value) -> str:
    if isinstance(value, FakeTensor):
        return repr(value)
    if isinstance(value, Tensor):
        return f"tensor([...], size={tuple(value._shape)})"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    return repr(value)


class FakeTensorMode(TorchDispatchMode):
    """`with FakeTensorMode():` makes factories return FakeTensors and runs every op on
    fakes through Meta kernels. `from_tensor(t)` gives the fake of a real tensor (the same
    fake each time). Real tensors among an op's inputs are refused unless
    `allow_non_fake_inputs=True`, which converts them."""

    def __init__(self, *, allow_fallback_kernels=True, allow_non_fake_inputs=False,
                 shape_env=None, static_shapes=None, export=False):
        super().__init__()
        if shape_env is not None:
            raise NotImplementedError("FakeTensorMode(shape_env=...): glasstorch has no "
                                      "symbolic shapes; fake tensors have static shapes")
        self.allow_fallback_kernels = allow_fallback_kernels
        self.allow_non_fake_inputs = allow_non_fake_inputs
        self.static_shapes = True
        self.shape_env = None
        self.export = export
        self._fakes: dict = {}       # id(real tensor) -> (weakref to it, its fake)
        self._storages: dict = {}    # id(real storage) -> (weakref to it, meta storage)

    # ---- converting real tensors -----------------------------------------------------
    def from_tensor(self, tensor: Tensor, *, static_shapes=None, source=None,
                    symbolic_context=None, trace=True) -> FakeTensor:
        """The fake of a real tensor: same device, dtype, shape, strides, offset,
        requires_grad; fakes of tensors sharing a storage share a (meta) storage."""
        if isinstance(tensor, FakeTensor):
            if tensor.fake_mode is not self:
                raise UnsupportedFakeTensorException("Mixing fake modes NYI")
            return tensor
        if not isinstance(tensor, Tensor):
            raise TypeError(f"from_tensor(): expected a Tensor, got {type(tensor).__name__}")
        memo = self._fakes.get(id(tensor))
        if memo is not None and memo[0]() is tensor:
            return memo[1]
        fake = FakeTensor._make(self._meta_storage(tensor._storage), tensor._offset,
                                tensor._shape, tensor._stride, tensor.dtype)
        fake.fake_device, fake.fake_mode = _fake_device(tensor.device), self
        if tensor.requires_grad:
            fake.requires_grad_(True)
        key = id(tensor)
        self._fakes[key] = (weakref.ref(tensor, lambda _: self._fakes.pop(key, None)), fake)
        return fake

    def _meta_storage(self, storage: UntypedStorage) -> UntypedStorage:
        key = id(storage)
        memo = self._storages.get(key)
        if memo is not None and memo[0]() is storage:
            return memo[1]
        meta = UntypedStorage._new(storage.nbytes(), META)
        self._storages[key] = (weakref.ref(storage, lambda _: self._storages.pop(key, None)),
                               meta)
        return meta

    # ---- running ops -----------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        op = func._op
        bound = list(bind_arguments(op, tuple(args), kwargs or {}))
        if op.name == "aten::lift_fresh":       # a constant made from data (torch.tensor)
            return self.from_tensor(bound[0])
        fakes = []                              # (fake input, the meta alias the op sees)
        for i in op.tensor_positions:
            bound[i] = self._unwrap(bound[i], fakes, func, args, kwargs)
        name = op.name
        if name in _DYNAMIC_SHAPE_OPS or name.split(".")[0] in _DYNAMIC_SHAPE_OPS:
            raise DynamicOutputShapeException(func)
        if not op.has_kernel_for(DispatchKey.Meta):
            raise UnsupportedOperatorException(func)
        names = [a.name for a in op.schema.arguments]
        device = None
        if "device" in names:
            position = names.index("device")
            if bound[position] is not None or not op.tensor_positions:
                device = _fake_device(bound[position])
                bound[position] = META
        if device is None:
            device = self._common_device(fakes, op)
        try:
            result = func(*bound)
        except NotImplementedError as e:    # a Meta kernel saying it cannot describe this
            raise UnsupportedOperatorException(func) from e
        for fake, alias in fakes:               # in-place metadata changes (resize_, set_)
            if (alias._storage is not fake._storage or alias._shape != fake._shape
                    or alias._stride != fake._stride or alias._offset != fake._offset):
                fake._set_metadata(alias._storage, alias._offset, alias._shape,
                                   alias._stride)
        return self._wrap_outputs(result, fakes, device)

    def _unwrap(self, value, fakes, func, args, kwargs):
        if isinstance(value, (list, tuple)):
            return type(value)(self._unwrap(v, fakes, func, args, kwargs) for v in value)
        if not isinstance(value, Tensor):
            return value
        if not isinstance(value, FakeTensor):
            if not self.allow_non_fake_inputs:
                shown = ", ".join([_describe(a) for a in args]
                                  + [f"{k}={_describe(v)}" for k, v in (kwargs or {}).items()])
                raise AssertionError(
                    "Please convert all Tensors to FakeTensors first or instantiate "
                    f"FakeTensorMode with 'allow_non_fake_inputs'. Found in {func}({shown})")
            value = self.from_tensor(value)
        elif value.fake_mode is not self:
            raise UnsupportedFakeTensorException("Mixing fake modes NYI")
        alias = value._meta_alias()
        fakes.append((value, alias))
        return alias

    @staticmethod
    def _common_device(fakes, op):
        """The device a real call would run on: CPU 0-dim tensors join any other device."""
        device, scalar_device = None, None
        for fake, _ in fakes:
            d = fake.fake_device
            if fake._shape == () and d.type == "cpu":
                scalar_device = scalar_device or d
                continue
            if device is None:
                device = d
            elif d != device and "cross_device" not in op.tags:
                raise FakeTensorDeviceMismatchError(
                    "Expected all tensors to be on the same device, but found at least two "
                    f"devices, {device} and {d}!")
        return device or scalar_device or _fake_device(None)

    def _wrap_outputs(self, result, fakes, device):
        if isinstance(result, (list, tuple)):
            wrapped = [self._wrap_outputs(r, fakes, device) for r in result]
            return type(result)(*wrapped) if hasattr(result, "_fields") else \
                type(result)(wrapped)
        if not isinstance(result, Tensor):
            return result
        for fake, alias in fakes:
            if result is alias:                 # in-place and out= ops return their input
                return fake
        fake = FakeTensor._wrap(result, device, self)
        if result._view_meta is not None:
            source, *geometry = result._view_meta
            for original, alias in fakes:
                if source is alias:
                    source = original
            fake._view_meta = (source, *geometry)
        return fake


def is_fake(x) -> bool:
    """Whether `x` is a FakeTensor."""
    return isinstance(x, FakeTensor)
