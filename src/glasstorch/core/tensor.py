"""Tensor: a strided view (offset, sizes, strides, dtype) over an UntypedStorage.

This module holds the data model only: metadata, the NumPy view used by CPU kernels, and the
conversions to Python values. Operator methods (`add`, `view`, `__add__`, ...) are attached
by the op declarations in `glasstorch.ops`, so that each op is written once.
"""
from __future__ import annotations

import copy
import warnings
from math import prod
from numbers import Number

import numpy as np

from .. import overrides as _tf
from ..dispatch.keys import (AUTOGRAD_KEY_OF_DEVICE, AUTOGRAD_MASK, CONJ_BIT, MATH_BITS, NEG_BIT,
                             TENSOR_KEYSETS, exclude_keys)
from . import dtype as dt
from .device import CPU, device_backend
from .grad_state import inference_anywhere, state as grad_state
from .shape import (Size, check_in_bounds, contiguous_strides, is_channels_last, is_contiguous,
                    memory_order, strides_like_channels_last, wrap_dim)
from . import storage as _storage
from .shape import _strides_cache as _STRIDES
from .storage import UntypedStorage


_TORCH_FUNCTION = _tf.TORCH_FUNCTION_BIT
_DEEPCOPY_NON_LEAF = (
    "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol "
    "at the moment.  If you were attempting to deepcopy a module, this may be because of a "
    "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")
_BYTE_STRIDES: dict = {}   # (element strides, itemsize) -> byte strides, for _array()
_CPU_KEYSET = TENSOR_KEYSETS["cpu"]
_new_object = object.__new__
_ndarray = np.ndarray


class VersionCounter:
    """Shared by a tensor and its views; every in-place op bumps it."""

    __slots__ = ("version",)

    def __init__(self, version: int = 0):
        self.version = version


class memory_format:
    """torch.contiguous_format, torch.channels_last, ... (compared by identity)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")


def suggest_memory_format(shape, strides) -> memory_format:
    """PyTorch's suggest_memory_format: channels-last for a 4-D (5-D: channels_last_3d)
    layout whose strides order channels fastest, else contiguous, whatever the actual
    layout (a transposed matrix suggests contiguous_format)."""
    if strides_like_channels_last(shape, strides):
        return channels_last if len(shape) == 4 else channels_last_3d
    return contiguous_format


class layout:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return self.name      # pickles by name: one object per layout


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")


class Tensor:
    """A multi-dimensional array with autograd metadata, viewing part of a storage."""

    __slots__ = ("_storage", "_offset", "_shape", "_stride", "dtype", "_keyset", "_np",
                 "_vc", "_base", "_view_meta", "_requires_grad", "grad_fn", "__weakref__",
                 "__dict__")

    # Rarely set fields live in the instance __dict__ only once set; these are the defaults.
    _grad = None
    _output_nr = 0
    _retains_grad = False
    _hooks = None
    _post_acc_hooks = None
    _inference = False
    _view_creation = None      # see ops.inplace_or_view._view_creation
    _accumulator = None        # weakref to a leaf's AccumulateGrad node (autograd/graph.py)
    _grad_fn_version = None    # a view's version when its grad_fn was recorded (same file)
    _sparse = None             # a sparse layout's indices and values (glasstorch.sparse)

    __array_priority__ = 1000  # numpy defers `ndarray + tensor` to Tensor.__radd__

    def __new__(cls, *args, **kwargs):
        # Legacy constructor: Tensor(2, 3) is uninitialised, Tensor([1, 2]) copies data.
        from ..ops.creation.factories import legacy_tensor_new
        return legacy_tensor_new(cls, *args, **kwargs)

    @classmethod
    def _make(cls, storage: UntypedStorage, offset: int, shape: tuple, stride: tuple,
              dtype: dt.dtype, vc: VersionCounter | None = None) -> "Tensor":
        """Construct without checks; callers guarantee the metadata fits the storage."""
        self = object.__new__(cls)
        self._storage = storage
        self._offset = offset
        self._shape = shape if shape.__class__ is tuple else tuple(shape)  # plain: fast [i]
        self._stride = stride if stride.__class__ is tuple else tuple(stride)
        self.dtype = dtype
        self._keyset = TENSOR_KEYSETS[storage.device.type]
        if cls is not Tensor:
            self._keyset |= _tf.class_keys(cls)
        self._np = None
        if vc is not None:
            self._vc = vc
        elif inference_anywhere.blocks and grad_state.inference:
            self._vc = None                 # made inside inference_mode: an inference tensor
            self._inference = True
        else:
            self._vc = VersionCounter()
        self._base = None
        self._view_meta = None     # (source, shape, stride, offset) of a view, set by views
        self._requires_grad = False
        self.grad_fn = None
        return self

    @classmethod
    def _empty(cls, shape: tuple, dtype: dt.dtype, device=CPU, stride: tuple | None = None):
        """A fresh tensor with its own uninitialised storage (strides default to row-major)."""
        contiguous = _STRIDES.get(shape)
        if contiguous is None:
            contiguous = contiguous_strides(shape)
        if stride is contiguous or stride is None or stride == contiguous:
            stride = contiguous
            nbytes = prod(shape) * dtype.itemsize
        else:
            if stride.__class__ is not tuple:
                stride = tuple(stride)
            nbytes = 0 if 0 in shape else (
                sum((s - 1) * st for s, st in zip(shape, stride)) + 1) * dtype.itemsize
        if device is not CPU or cls is not Tensor or \
                inference_anywhere.blocks and grad_state.inference:
            return cls._make(UntypedStorage._new(nbytes, device), 0, shape, stride, dtype)
        return new_cpu_tensor(shape if shape.__class__ is tuple else tuple(shape), dtype, stride,
                              nbytes, stride is contiguous)

    # ---- metadata --------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._shape)
        return self._shape[wrap_dim(dim, len(self._shape), scalar_ok=False)]

    def stride(self, dim=None):
        if dim is None:
            return self._stride
        return self._stride[wrap_dim(dim, len(self._shape), scalar_ok=False)]

    def storage_offset(self) -> int:
        return self._offset

    def dim(self) -> int:
        return len(self._shape)

    ndimension = dim

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def numel(self) -> int:
        return prod(self._shape)

    nelement = numel

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return prod(self._shape) * self.dtype.itemsize

    @property
    def device(self):
        return self._storage.device

    @property
    def is_cuda(self) -> bool:
        return self._storage.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self._storage.device.type == "cpu"

    @property
    def is_meta(self) -> bool:
        return self._storage.device.type == "meta"

    @property
    def layout(self):
        return strided if self._sparse is None else self._sparse.layout

    @property
    def is_sparse(self) -> bool:
        return self._sparse is not None and self._sparse.layout is sparse_coo

    @property
    def is_sparse_csr(self) -> bool:
        return self._sparse is not None and self._sparse.layout is sparse_csr

    is_quantized = False
    is_nested = False

    def get_device(self) -> int:
        d = self._storage.device
        return -1 if d.type == "cpu" else (d.index or 0)

    def is_contiguous(self, memory_format=contiguous_format) -> bool:
        if memory_format is contiguous_format:
            return is_contiguous(self._shape, self._stride)
        if memory_format is channels_last or memory_format is channels_last_3d:
            return is_channels_last(self._shape, self._stride)
        raise RuntimeError(f"Unsupported memory format {memory_format}")

    def dim_order(self, *, ambiguity_check=False) -> tuple:
        """The dims from outermost to innermost in memory, as PyTorch's: sorted by stride
        (ties by size; stride-0 dims keep their place). `ambiguity_check` (True, or memory
        formats of which exactly one must hold) refuses a tensor with more than one such
        order (size-1 dims, equal or zero strides)."""
        if not isinstance(ambiguity_check, bool) and not (
                isinstance(ambiguity_check, list)
                and all(isinstance(f, memory_format) for f in ambiguity_check)):
            raise TypeError("The ambiguity_check argument must be a bool or a list of memory "
                            "formats.")
        shape, stride = self._shape, self._stride
        formats = [] if isinstance(ambiguity_check, bool) else ambiguity_check
        checked = ambiguity_check is not False
        if checked and (1 in shape or any(a == b for a, b in zip(stride, stride[1:]))) and \
                sum(self.is_contiguous(memory_format=f) for f in formats) != 1:
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to "
                               "exact one of the given memory formats.")
        order, ambiguous = memory_order(shape, stride, checked)
        if ambiguous:
            raise RuntimeError("The tensor does not have unique dim order.")
        return tuple(order)

    def is_floating_point(self) -> bool:
        return self.dtype.category == dt.FLOAT

    def is_complex(self) -> bool:
        return self.dtype.category == dt.COMPLEX

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    def data_ptr(self) -> int:
        """Address of the first element: storage address + offset * element size."""
        if prod(self._shape) == 0 and self._storage.nbytes() == 0:
            return 0
        base = self._storage.data_ptr()
        return base + self._offset * self.dtype.itemsize if base else 0

    def untyped_storage(self) -> UntypedStorage:
        return self._storage

    def storage(self) -> UntypedStorage:
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only "
                      "matter to you if you are using storages directly.", UserWarning,
                      stacklevel=2)
        return self._storage

    def is_conj(self) -> bool:
        """Whether the values are the storage's conjugated (a lazy `conj()` view)."""
        return self._keyset & CONJ_BIT != 0

    def is_neg(self) -> bool:
        """Whether the values are the storage's negated (`x.conj().imag`, `_neg_view`)."""
        return self._keyset & NEG_BIT != 0

    def _resolved(self) -> "Tensor":
        """The values without the conjugate and negative bits, untracked (for reading)."""
        return self.detach().resolve_conj().resolve_neg()

    def _is_view(self) -> bool:
        return self._base is not None

    @property
    def _version(self) -> int:
        if self._vc is None:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._vc.version

    def _bump_version(self) -> None:
        if self._vc is not None:
            self._vc.version += 1

    def is_inference(self) -> bool:
        return self._inference

    # ---- autograd metadata (the engine lives in glasstorch.autograd) -----------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use"
                " a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        if requires_grad and self.dtype.category < dt.FLOAT:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        self._set_requires_grad(bool(requires_grad))
        return self

    def _set_requires_grad(self, flag: bool) -> None:
        """Set the flag and the Autograd key with it (a tensor carries the key only while it
        requires grad, so plain tensors never enter the Autograd kernel)."""
        self._requires_grad = flag
        bit = AUTOGRAD_KEY_OF_DEVICE[self._storage.device.type]
        self._keyset = (self._keyset | bit) if flag else (self._keyset & ~bit)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad(self):
        if (self._keyset & _TORCH_FUNCTION or _tf.anywhere.modes) and (
                r := _property_protocol(self, "grad")) is not _tf.NOT_HANDLED:
            return r
        if self.grad_fn is not None and not self._retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                ".retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by "
                "mistake, make sure you access the leaf Tensor instead. See "
                "github.com/pytorch/pytorch/pull/30531 for more information.", UserWarning,
                stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad "
                                f"of type {type(value).__name__}")
            if value._shape != self._shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value._shape)}' to a "
                    f"tensor of size '{list(self._shape)}'. Please ensure that the gradient "
                    "and the tensor are the same size")
            if value.dtype is not self.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{value.dtype.np.name}' to a"
                    f" tensor with dtype '{self.dtype.cname}'. Please ensure that the gradient"
                    " and the tensor have the same dtype")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    # ---- data access -----------------------------------------------------------------
    def _array(self) -> np.ndarray:
        """The NumPy view of this tensor's elements (cached; shares the storage's bytes).
        On a GPU it is a CuPy array; bfloat16 there is a uint16 array of bit patterns."""
        a = self._np
        if a is None:
            buf = self._storage.buf
            if buf is None:
                raise NotImplementedError(
                    f"Cannot access data of a tensor on the '{self.device}' device: it has "
                    "shapes, dtypes and strides but no data")
            isz = self.dtype.itemsize
            if buf.__class__ is not np.ndarray:    # a GPU storage: a CuPy array
                a = device_backend(self._storage.device.type).array(buf, self._shape, self.dtype, self._offset, self._stride)
            elif 0 in self._shape:
                a = np.empty(self._shape, self.dtype.np)
            else:
                key = (self._stride, isz)
                byte_strides = _BYTE_STRIDES.get(key)
                if byte_strides is None:
                    byte_strides = tuple(s * isz for s in self._stride)
                    if len(_BYTE_STRIDES) < 4096:
                        _BYTE_STRIDES[key] = byte_strides
                a = np.ndarray(self._shape, self.dtype.np, buf, self._offset * isz,
                               byte_strides)
            self._np = a
        return a

    def _set_metadata(self, storage, offset, shape, stride) -> None:
        """Point this tensor at new metadata (set_, resize_, as_strided_), bounds-checked."""
        check_in_bounds(shape, stride, offset, self.dtype.itemsize, storage.nbytes())
        self._storage, self._offset = storage, offset
        self._shape, self._stride = tuple(shape), tuple(stride)
        self._keyset = TENSOR_KEYSETS[storage.device.type] | (
            AUTOGRAD_KEY_OF_DEVICE[storage.device.type] if self._requires_grad else 0) | (
            _tf.class_keys(type(self)) if type(self) is not Tensor else 0) | (
            self._keyset & MATH_BITS)             # set_ keeps self's conjugate/negative bits
        self._np = None

    def item(self):
        """The single value as a Python number."""
        n = prod(self._shape)
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        if self._keyset & MATH_BITS:
            return self._resolved().item()
        if self._storage.device.type == "cuda":
            return self.cpu().item()           # waits for the GPU, as in PyTorch
        if self.dtype.family is not None:          # complex32, float8: through readable values
            return dt.readable_array(self._array().reshape(())).item()
        return self._array().reshape(()).item() if self.dtype is not dt.bfloat16 else float(
            self._array().reshape(()))

    def tolist(self):
        if self._keyset & MATH_BITS:
            return self._resolved().tolist()
        if self._storage.device.type == "cuda":
            return self.cpu().tolist()
        a = self._array()
        if self.dtype is dt.bfloat16 or self.dtype is dt.float16:
            a = a.astype(np.float64) if self.dtype is dt.bfloat16 else a
        elif self.dtype.family is not None:
            a = dt.readable_array(a)
        return a.tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A NumPy array sharing this tensor's memory (bfloat16 as ml_dtypes.bfloat16)."""
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self._keyset & MATH_BITS:
            if force:
                return self._resolved().numpy(force=True)
            bit, fix = (("conjugate", "conj") if self._keyset & CONJ_BIT else ("negative", "neg"))
            raise RuntimeError(f"Can't call numpy() on Tensor that has {bit} bit set. Use "
                               f"tensor.resolve_{fix}().numpy() instead.")
        if self.device.type != "cpu":
            if force:
                return self.cpu().numpy()
            raise TypeError(f"can't convert {self.device.type} device type tensor to numpy. "
                            "Use Tensor.cpu() to copy the tensor to host memory first.")
        return _KeepAlive.array(self._array(), self._storage)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()      # as in PyTorch, a tensor that requires grad refuses
        return a if dtype is None else a.astype(dtype, copy=False)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A NumPy ufunc's result on a Tensor comes back as a Tensor over the result's
        memory (`np.exp(t)`), a 0-d one for a scalar, and bool results as uint8: PyTorch's
        behaviour."""
        from ..ops.creation.factories import from_numpy
        array = np.asarray(array)
        return from_numpy(array.astype(np.uint8) if array.dtype == np.bool_ else array)

    def __dlpack__(self, *, stream=-1, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule over this tensor's memory (zero copy; `copy=True` exports a
        copy). A legacy "dltensor" capsule unless the consumer's `max_version` is >= 1.0.
        `stream` is the consumer's CUDA stream: -1 no synchronisation, None or 1 the
        default stream, else a stream pointer."""
        from . import dlpack
        if self._requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        if self._keyset & CONJ_BIT:
            raise BufferError("Can't export tensors with the conjugate bit set")
        if stream is not None and type(stream) is not int:
            raise TypeError("stream must be ``int`` or ``none``")
        on_gpu = self._storage.device.type == "cuda"
        if not on_gpu and stream not in (None, -1):
            raise AssertionError("stream should be None on cpu.")
        if on_gpu and stream == 2:
            raise BufferError("per-thread default stream is not supported.")
        if on_gpu and stream == 0:
            raise AssertionError(f"unsupported stream on CUDA: {stream}.")
        kwargs = {"copy": copy, "dl_device": dl_device}
        if max_version is not None and max_version[0] >= 1:
            kwargs["max_version"] = tuple(max_version)
        if on_gpu:
            kwargs["stream"] = None if stream in (None, 1) else stream
        array = self._array()
        if self.dtype is dt.bfloat16 and not on_gpu:
            array = array.view(np.uint16)      # exported as bit patterns, then relabelled
        capsule = array.__dlpack__(**{k: v for k, v in kwargs.items() if v is not None})
        if self.dtype is dt.bfloat16:
            dlpack.relabel(capsule, dlpack.KDL_BFLOAT)
        return capsule

    def __dlpack_device__(self) -> tuple:
        """(DLDeviceType, index): kDLCPU = 1 (kDLCUDAHost = 3 when pinned), kDLCUDA = 2."""
        from .dlpack import DLDeviceType
        device = self._storage.device
        if device.type == "cuda":
            return DLDeviceType.kDLCUDA, device.index or 0
        if device.type == "cpu":
            return (DLDeviceType.kDLCUDAHost if self.is_pinned() else DLDeviceType.kDLCPU), 0
        raise ValueError(f"Unknown device type {device.type} for Dlpack")

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA array interface (version 2) of a CUDA tensor, for CuPy, Numba and
        friends; an AttributeError elsewhere, so that `hasattr` says False."""
        if self._storage.device.type != "cuda":
            raise AttributeError(
                f"Can't get __cuda_array_interface__ on non-CUDA tensor type: {self.type()} "
                "If CUDA data is required use tensor.cuda() to copy tensor to device memory.")
        if self._requires_grad:
            raise RuntimeError(
                "Can't get __cuda_array_interface__ on Variable that requires grad. If "
                "gradients aren't required, use var.detach() to get Variable that doesn't "
                "require grad.")
        if self.dtype is dt.bfloat16:
            raise TypeError("__cuda_array_interface__ has no type string for torch.bfloat16")
        isz = self.dtype.itemsize
        strides = None if self.is_contiguous() else tuple(s * isz for s in self._stride)
        return {"typestr": np.dtype(self.dtype.np).str, "shape": tuple(self._shape),
                "strides": strides, "data": (self.data_ptr() if self.numel() else 0, False),
                "version": 2}

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __contains__(self, element) -> bool:
        """`element in t`: whether any element equals it (a number or a tensor, compared
        elementwise with broadcasting), as PyTorch's."""
        if not isinstance(element, (Tensor, Number)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you "
                               f"passed in a {type(element)}.")
        return bool((self == element).any())

    def __bool__(self) -> bool:
        n = prod(self._shape)
        if n != 1:
            if n == 0:
                raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item().real if self.is_complex() else self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if self.dtype.category != dt.INT or prod(self._shape) != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    __hash__ = object.__hash__

    def __repr__(self, *, tensor_contents=None) -> str:
        if self._sparse is not None:
            from ..sparse.printing import sparse_repr
            return sparse_repr(self)
        from .printing import tensor_repr
        return tensor_repr(self, tensor_contents)

    def __str__(self):
        return self.__repr__()

    def __format__(self, spec):
        # Like torch: a plain 0-dim tensor formats as its Python number (f"{loss}" is "0.25").
        if not self._shape and type(self) is Tensor and self.device.type != "meta":
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, protocol):
        # Plain pickling (copy.copy, multiprocessing) carries the values, dtype, strides and
        # requires_grad; torch.save-style checkpoints belong to glasstorch.serialization.
        if self.device.type == "meta":
            raise RuntimeError("Cannot pickle a meta tensor: it has no data")
        if self._sparse is not None:
            from ..sparse.tensor import reduce_sparse
            return reduce_sparse(self)
        stored = self.detach()
        stored._keyset &= ~MATH_BITS     # the stored values, then the conj()/neg bits on them
        args = (np.array(stored.cpu()._array()), self.dtype.name, self._stride,
                self._requires_grad)
        if self._keyset & MATH_BITS:
            args += (self._keyset & MATH_BITS,)
        return (_rebuild_tensor, args)

    def __deepcopy__(self, memo):
        """As PyTorch's: leaves only; tensors that share a storage share its copy (at the
        same offsets and strides, not as views), which a plain tensor takes as `set_` does
        (its version becomes 1); the gradient and the user's attributes are deep-copied."""
        if self.grad_fn is not None:
            raise RuntimeError(_DEEPCOPY_NON_LEAF)
        if id(self) in memo:
            return memo[id(self)]
        if self.__class__ is Tensor and self._sparse is None and self._vc is not None \
                and self._storage.device.type != "meta":
            storage = memo.get(id(self._storage))
            if storage is None:
                storage = memo[id(self._storage)] = self._storage.clone()
                memo.setdefault(id(memo), []).append(self._storage)   # copy's keep-alive
            new = Tensor._make(storage, self._offset, self._shape, self._stride, self.dtype)
            new._vc.version = 1
            if self._keyset & MATH_BITS:     # a conj() or neg view: its values, resolved
                new = new.conj_physical() if self.is_conj() else new
                new = new.neg() if self.is_neg() else new
        else:
            new = self.detach().clone()
        new._set_requires_grad(self._requires_grad)
        memo[id(self)] = new
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        attributes = {k: v for k, v in self.__dict__.items() if not hasattr(Tensor, k)}
        if attributes:                                    # the user's, not autograd's
            new.__dict__.update(copy.deepcopy(attributes, memo))
        return new

    @property
    def T(self):
        if (self._keyset & _TORCH_FUNCTION or _tf.anywhere.modes) and (
                r := _property_protocol(self, "T")) is not _tf.NOT_HANDLED:
            return r
        if self.dim() > 2:
            warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse "
                          "their shape is deprecated and it will throw an error in a future "
                          "release.", UserWarning, stacklevel=2)
        return self.permute(*range(self.dim() - 1, -1, -1))

    @property
    def mT(self):
        if (self._keyset & _TORCH_FUNCTION or _tf.anywhere.modes) and (
                r := _property_protocol(self, "mT")) is not _tf.NOT_HANDLED:
            return r
        if self.dim() < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices."
                               f" Got {self.dim()}-D tensor.")
        return self.transpose(-2, -1)

    @property
    def H(self):
        if (self._keyset & _TORCH_FUNCTION or _tf.anywhere.modes) and (
                r := _property_protocol(self, "H")) is not _tf.NOT_HANDLED:
            return r
        if self.dim() > 2:
            raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                               f"{self.dim()}-D tensor.")
        return self.mT.conj() if self.dim() == 2 else self.conj()

    @property
    def mH(self):
        if (self._keyset & _TORCH_FUNCTION or _tf.anywhere.modes) and (
                r := _property_protocol(self, "mH")) is not _tf.NOT_HANDLED:
            return r
        return self.mT.conj()

    # ---- subclasses (the __torch_function__ protocol lives in glasstorch.overrides) -----
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Run `func` with subclass handling off, then give Tensor results the class `cls`
        (except the results of get_default_nowrap_functions(), such as `.grad`)."""
        if kwargs is None:
            kwargs = {}
        if not all(issubclass(cls, t) for t in types):
            return NotImplemented
        if _tf._from_pytorch(func):           # the real PyTorch asks: refuse, don't bounce
            raise _tf.refuse_pytorch_function(func)
        with _tf.DisableTorchFunctionSubclass():
            result = func(*args, **kwargs)
            if func in _nowrap_functions():
                return result
            return _convert(result, cls)

    __torch_dispatch__ = _tf._disabled_torch_dispatch_impl

    def __init_subclass__(cls, **kwargs):
        # As in PyTorch: a class with __torch_dispatch__ that keeps Tensor's default
        # __torch_function__ gets the disabled one (its handler makes the results itself).
        super().__init_subclass__(**kwargs)
        if _tf.overrides_dispatch(cls) and _tf._static_impl(
                cls, "__torch_function__") is _tf._static_impl(Tensor, "__torch_function__"):
            cls.__torch_function__ = _tf._disabled_torch_function_impl

    def as_subclass(self, cls) -> "Tensor":
        """A `cls` instance over the same data, still attached to the autograd graph (an
        alias of self)."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError(f"as_subclass(): argument 'cls' must be a subclass of Tensor, not "
                            f"{cls!r}")
        from ..dispatch.dispatcher import find
        with exclude_keys(_tf.PYTHON_KEY_BIT):    # as PyTorch: no handler sees this alias
            return _retype(find("aten::alias")(self), cls)

    @staticmethod
    def _make_subclass(cls, data, require_grad=False, dispatch_sizes_strides_policy=None,
                       dispatch_device=False, dispatch_layout=False):
        """A `cls` leaf over data's storage (sharing its version counter), with no history;
        requires grad as asked."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError(f"_make_subclass(): argument 'cls' must be a subclass of Tensor, "
                            f"not {cls!r}")
        if not isinstance(data, Tensor):
            raise TypeError(f"_make_subclass(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        out = cls._make(data._storage, data._offset, data._shape, data._stride, data.dtype,
                        data._vc)
        if data._sparse is not None:           # a sparse Parameter keeps its layout
            out._sparse = data._sparse
            out._keyset = data._keyset & ~AUTOGRAD_MASK | _tf.class_keys(cls)
        if require_grad:
            out.requires_grad_(True)
        return out

    @staticmethod
    def _make_wrapper_subclass(cls, size, strides=None, storage_offset=None,
                               memory_format=None, dtype=None, layout=None, device=None,
                               pin_memory=False, requires_grad=False,
                               dispatch_sizes_strides_policy=None, dispatch_device=False,
                               dispatch_layout=False, _extra_dispatch_keys=None,
                               storage_size=None):
        """A `cls` tensor with metadata and no data: its class's __torch_dispatch__ holds the
        real tensors (wrapper subclasses)."""
        from .device import device as as_device
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError(f"_make_wrapper_subclass(): argument 'cls' must be a subclass of "
                            f"Tensor, not {cls!r}")
        shape = tuple(int(s) for s in size)
        stride = contiguous_strides(shape) if strides is None else tuple(int(s) for s in strides)
        dtype = dt.get_default_dtype() if dtype is None else dtype
        dev = CPU if device is None else as_device(device)
        storage = object.__new__(UntypedStorage)
        storage.device, storage.buf, storage._allocator, storage.resizable = dev, None, None, False
        storage._nbytes = 0 if storage_size is None else int(storage_size)
        out = cls._make(storage, int(storage_offset or 0), shape, stride, dtype)
        if requires_grad:
            out.requires_grad_(True)
        return out


def _property_protocol(self, name: str):
    """A property read through __torch_function__ (the handler gets `Tensor.<name>.__get__`,
    as PyTorch's), or NOT_HANDLED."""
    return _tf.dispatch_if_needed(vars(Tensor)[name].__get__, (self,), (self,), None,
                                  python=True)


def _retype(t: Tensor, cls) -> Tensor:
    """`t`'s fields in a new `cls` object (keys and all), for as_subclass."""
    if type(t) is cls:
        return t
    out = object.__new__(cls)
    for name in _FIELDS:
        object.__setattr__(out, name, getattr(t, name))
    out.__dict__.update(t.__dict__)
    out._keyset = t._keyset & ~_tf.SUBCLASS_BITS | (
        _tf.class_keys(cls) if cls is not Tensor else 0)
    return out


_FIELDS = tuple(n for n in Tensor.__slots__ if n not in ("__weakref__", "__dict__"))


def _convert(result, cls):
    """Results of an op on a subclass, as `cls` (Tensor.__torch_function__)."""
    if cls is Tensor:
        return result
    if isinstance(result, Tensor):
        return result if isinstance(result, cls) else result.as_subclass(cls)
    if isinstance(result, (tuple, list)):
        items = [_convert(r, cls) for r in result]
        return result._make(items) if hasattr(result, "_make") else type(result)(items)
    return result


_NOWRAP: list = []


def _nowrap_functions() -> set:
    if not _NOWRAP:
        _NOWRAP.append(_tf.get_default_nowrap_functions())
    return _NOWRAP[0]


_tf._register_tensor_type(Tensor)
_tf._PLAIN.update((dt.dtype, memory_format, layout, type(CPU), Size, slice, type(Ellipsis)))


def _rebuild_tensor(values: np.ndarray, dtype_name: str, stride: tuple,
                    requires_grad: bool, math_bits: int = 0) -> Tensor:
    dtype = getattr(dt, dtype_name)
    t = Tensor._empty(values.shape, dtype, CPU, stride if values.size else None)
    t._array()[...] = values
    t._keyset |= math_bits & MATH_BITS
    return t.requires_grad_(requires_grad) if requires_grad else t


def new_cpu_tensor(shape: tuple, dtype: dt.dtype, stride: tuple, nbytes: int,
                   row_major: bool) -> Tensor:
    """A plain CPU Tensor over `nbytes` of fresh memory from the CPU allocator, for callers
    that know its layout (`Tensor._empty`, and ops' fast paths that computed it already):
    every CPU op's output is made here. Not in inference mode (see `Tensor._empty`)."""
    # _make's and the storage's work, inlined, and the NumPy view the kernel is about to ask
    # for, made at once for row-major outputs.
    allocator = _storage.cpu_allocator   # memory.set_cpu_allocator replaces it
    buf = allocator.allocate(nbytes)     # first: if it raises, there is no storage to free
    storage = _new_object(UntypedStorage)
    storage.device = CPU
    storage._nbytes = nbytes
    storage.resizable = True
    storage.buf = buf
    storage._allocator = allocator
    self = _new_object(Tensor)
    self._storage = storage
    self._offset = 0
    self._shape = shape
    self._stride = stride
    self.dtype = dtype
    self._keyset = _CPU_KEYSET
    self._np = (_ndarray(shape, dtype.np, buf)
                if row_major and nbytes and buf.__class__ is _ndarray else None)
    vc = self._vc = _new_object(VersionCounter)
    vc.version = 0
    self._base = None
    self._view_meta = None
    self._requires_grad = False
    self.grad_fn = None
    return self


def make_alias(self, shape, stride, offset, dtype=None):
    """A view of `self` with new metadata (every view op's kernel makes its views here).
    dtype: for views that reinterpret the elements (view_as_real, view_as_complex)."""
    vc = self._vc
    if vc is None:                          # an inference tensor's view: _make decides
        out = Tensor._make(self._storage, offset, shape, stride,
                           self.dtype if dtype is None else dtype, vc)
    else:                                   # Tensor._make's work, inlined
        out = _new_object(Tensor)
        out._storage = storage = self._storage
        out._offset = offset
        out._shape = shape if shape.__class__ is tuple else tuple(shape)
        out._stride = stride if stride.__class__ is tuple else tuple(stride)
        out.dtype = self.dtype if dtype is None else dtype
        out._keyset = TENSOR_KEYSETS[storage.device.type]
        out._np = None
        out._vc = vc
        out._base = None
        out._requires_grad = False
        out.grad_fn = None
    out._view_meta = (self, shape, stride, offset)
    if self._keyset & MATH_BITS:            # views of a conj() view are conjugated too
        out._keyset |= self._keyset & MATH_BITS
    return out


class _KeepAlive:
    """Builds an ndarray over a tensor's memory whose `.base` keeps the storage alive."""

    __slots__ = ("__array_interface__", "storage")

    @classmethod
    def array(cls, arr: np.ndarray, storage) -> np.ndarray:
        holder = object.__new__(cls)
        holder.__array_interface__ = arr.__array_interface__
        holder.storage = storage
        out = np.asarray(holder)
        return out if out.dtype == arr.dtype else out.view(arr.dtype)  # bfloat16 is 'V2' here

