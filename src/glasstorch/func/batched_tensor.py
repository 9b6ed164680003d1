"""BatchedTensor: the tensor a vmapped function sees (functorch's BatchedTensorImpl).

It shows the *logical* shape of one example and holds the *physical* tensor `_value`, whose
dimension `_bdim` runs over the batch of vmap level `_level`. Its key set is the backend's
plus `FuncTorchBatched`, which sits above autograd: every op on it reaches the batching
kernel (func/batching.py), which unwraps, runs one op on the physical tensors and wraps the
result. Nested vmaps nest wrappers: a level-2 BatchedTensor's `_value` may be a level-1 one.
Autograd happens below, on the physical tensors, so `requires_grad` is the value's.
"""
from __future__ import annotations

from ..core.storage import UntypedStorage
from ..overrides import _disabled_torch_function_impl
from ..core.tensor import Tensor
from ..dispatch.keys import BACKEND_MASK, DispatchKey

BATCHED_BIT = 1 << DispatchKey.FuncTorchBatched

_ITEM_ERROR = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap "
               "over calling .item() on a Tensor, please try to rewrite what you're doing "
               "with other operations. If error is occurring somewhere inside PyTorch "
               "internals, please file a bug report.")
_CONTROL_FLOW_ERROR = ("vmap: It looks like you're attempting to use a Tensor in some "
                       "data-dependent control flow. We don't support that yet, please file "
                       "an issue at https://github.com/pytorch/pytorch/issues .")


def _dataless_storage(device) -> UntypedStorage:
    storage = object.__new__(UntypedStorage)
    storage.device, storage.buf, storage._allocator, storage.resizable = device, None, None, False
    storage._nbytes = 0
    return storage


class BatchedTensor(Tensor):
    """One example's view of a batch: logical shape outside, physical tensor inside."""

    __slots__ = ("_value", "_bdim", "_level")
    # ops see it through the FuncTorchBatched key only, never the __torch_function__ protocol
    # (whose default would re-type results as this class)
    __torch_function__ = _disabled_torch_function_impl

    @property
    def requires_grad(self) -> bool:
        return self._value.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._value.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> "BatchedTensor":
        self._value.requires_grad_(requires_grad)
        return self

    def _array(self):
        raise RuntimeError(_ITEM_ERROR)

    def _examples(self):
        """The plain tensor of every example of every level: what an op's own error checks
        (a linalg info code) read, as PyTorch checks them on the physical tensor."""
        v = self._value
        return v._examples() if v.__class__ is BatchedTensor else v

    def item(self):
        raise RuntimeError(_ITEM_ERROR)

    def tolist(self):
        raise RuntimeError(_ITEM_ERROR)

    def numpy(self, *, force: bool = False):
        raise RuntimeError(_ITEM_ERROR)

    def __bool__(self):
        raise RuntimeError(_CONTROL_FLOW_ERROR)

    def data_ptr(self) -> int:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def __repr__(self, *, tensor_contents=None) -> str:
        body = repr(self._value).replace("\n", "\n    ")
        return f"BatchedTensor(lvl={self._level}, bdim={self._bdim}, value=\n    {body}\n)"


def wrap(value: Tensor, bdim: int, level: int) -> BatchedTensor:
    """A BatchedTensor of `level` over `value`, batched along `value`'s dimension `bdim`."""
    shape, stride = value._shape, value._stride
    t = object.__new__(BatchedTensor)
    t._value, t._bdim, t._level = value, bdim, level
    t._storage = _dataless_storage(value.device)
    t._offset = 0
    t._shape = shape[:bdim] + shape[bdim + 1:]
    t._stride = stride[:bdim] + stride[bdim + 1:]
    t.dtype = value.dtype
    t._keyset = BATCHED_BIT | (value._keyset & BACKEND_MASK)
    t._np = None
    t._vc = value._vc
    t._base = None
    t._view_meta = None
    t._requires_grad = False
    t.grad_fn = None
    return t


def is_batched_at(t, level: int) -> bool:
    return t.__class__ is BatchedTensor and t._level == level


def unwrap(t, level: int):
    """(value, bdim) of `t` at `level`; (t, None) where `t` is not batched at it."""
    if t.__class__ is BatchedTensor and t._level == level:
        return t._value, t._bdim
    return t, None


def peel(t):
    """(physical tensor, chain): the tensor under every wrapper, and the wrappers' (level,
    bdim) from the outermost in."""
    chain = []
    while t.__class__ is BatchedTensor:
        chain.append((t._level, t._bdim))
        t = t._value
    return t, chain


def rebuild(physical: Tensor, chain) -> Tensor:
    """The inverse of `peel`: wrap `physical` in the chain's levels again."""
    for level, bdim in reversed(chain):
        physical = wrap(physical, bdim, level)
    return physical
