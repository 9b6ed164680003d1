"""nn.Parameter and nn.Buffer.

A Parameter is a leaf Tensor that Modules register as trainable: it views the same storage
(and version counter) as the tensor it wraps, so `Parameter(t)` costs no copy. Ops on a
Parameter return plain Tensors, as in PyTorch. `nn.Buffer` marks a tensor to be registered as
a buffer when assigned to a Module attribute; like PyTorch it is a plain Tensor carrying a
flag, so `isinstance(t, Buffer)` is answered by that flag.

`UninitializedParameter` and `UninitializedBuffer` are the placeholders of the lazy modules
(nn.LazyLinear, ...): shapeless until `materialize(shape)` gives them storage and turns them
into a Parameter or a plain Tensor; any other use raises.
"""
from __future__ import annotations

from collections import OrderedDict

from .. import overrides
from ..core.tensor import Tensor
from ..dispatch.keys import AUTOGRAD_MASK

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"]


def _alias(cls, data: Tensor) -> Tensor:
    """A `cls` instance over data's storage, sharing its version counter, with no history."""
    out = cls._make(data._storage, data._offset, data._shape, data._stride, data.dtype,
                    vc=data._vc)
    if data._sparse is not None:          # a sparse parameter keeps its layout and keys
        out._sparse = data._sparse
        out._keyset = data._keyset & ~AUTOGRAD_MASK | overrides.class_keys(cls)
    return out


class _ParameterMeta(type):
    """isinstance(t, Parameter) also holds for a tensor subclass instance made a parameter
    (PyTorch's `_is_param` flag): Parameter(fake) stays a FakeTensor."""

    def __instancecheck__(cls, instance):
        return super().__instancecheck__(instance) or (
            cls is Parameter and getattr(instance, "_is_param", False))


class Parameter(Tensor, metaclass=_ParameterMeta):
    """A Tensor that is a Module parameter: `Parameter(data=None, requires_grad=True)`."""

    __torch_function__ = overrides._disabled_torch_function_impl

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from ..ops.creation.factories import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        if cls is Parameter and type(data) is not Tensor and not issubclass(type(data),
                                                                            Parameter):
            # another tensor subclass (FakeTensor) keeps its type, flagged, as in PyTorch
            self = data.detach()
            self.requires_grad_(requires_grad)
            self._is_param = True
            return self
        self = _alias(cls, data)
        if requires_grad:
            self.requires_grad_(True)   # raises for integer dtypes, as torch
        return self

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self._requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        # user attributes travel; autograd fields (grad, hooks) do not, as in torch
        state = {k: v for k, v in self.__dict__.items() if not hasattr(Tensor, k)}
        return (_rebuild_parameter, (self.data, self._requires_grad, OrderedDict(), state))


overrides._PLAIN.add(Parameter)


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    param = Parameter(data, requires_grad)
    if state:
        param.__dict__.update(state)
    return param


class _BufferMeta(type):
    """isinstance(t, Buffer) holds for tensors made by Buffer(...)."""

    def __instancecheck__(cls, instance):
        return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)


class Buffer(metaclass=_BufferMeta):
    """`Buffer(data=None, *, persistent=True)`: a tensor to register as a Module buffer."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            from ..ops.creation.factories import empty
            data = empty(0)
        t = data.detach()
        if data._requires_grad:
            t.requires_grad_(True)
        t.persistent = persistent
        t._is_buffer = True
        return t


# What may be asked of a placeholder before it has a shape: conversions that only record a
# device or dtype for materialize(), and the introspection Module machinery does.
_UNINITIALIZED_ALLOWED = {"__hash__", "size", "copy_", "is_complex", "is_floating_point",
                          "half", "float", "double", "char", "short", "int", "long", "cuda",
                          "cpu", "to", "get_device", "_has_compatible_shallow_copy_type",
                          "__get__", "__set__"}


class UninitializedTensorMixin:
    """A tensor without a shape yet; `materialize(shape)` allocates it and turns it into
    `cls_to_become` (Parameter, or Tensor for buffers)."""

    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Allocate `shape` (on this placeholder's device and dtype unless given) in place."""
        from ..ops.creation.factories import empty
        if device is None:
            device = self.device
        if dtype is None:
            dtype = self.dtype
        self.data = empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. "
                           "This error usually happens in `load_state_dict` when trying to load"
                           " an uninitialized parameter into an initialized one. Call `forward`"
                           " to initialize the parameters before accessing their attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call "
                           "`forward` to initialize the parameters before calling "
                           "`module.share_memory()`.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, protocol):
        return (self.__class__, (self._requires_grad,))

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", None)
        if name in _UNINITIALIZED_ALLOWED:
            return super().__torch_function__(func, types, args, kwargs or {})
        raise ValueError(f"Attempted to use an uninitialized parameter in {func}. This error "
                         "happens when you are using a `LazyModule` or explicitly manipulating "
                         "`torch.nn.parameter.UninitializedParameter` objects. When using "
                         "LazyModules Call `forward` with a dummy batch to initialize the "
                         "parameters before calling torch functions")


def is_lazy(param) -> bool:
    """Whether `param` is a placeholder that has not been materialized yet."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape a lazy module learns from its first input."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        from ..ops.creation.factories import empty
        data = empty(0, device=device, dtype=dtype)
        self = _alias(cls, data)
        if requires_grad:
            self.requires_grad_(True)
        return self

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self._requires_grad, self.device, self.dtype)
        return memo[id(self)]


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape a lazy module learns from its first input."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        from ..ops.creation.factories import empty
        self = _alias(cls, empty(0, device=device, dtype=dtype))
        if requires_grad:
            self.requires_grad_(True)
        self.persistent = persistent
        self._is_buffer = True
        return self

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self._requires_grad, self.device, self.dtype)
        return memo[id(self)]
