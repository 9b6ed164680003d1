"""One declaration per primitive: schema, meta function, NumPy implementation, expression.

`prim(schema, kind=..., meta=..., impl=...)` defines the operator `prims::<name>` with the
dispatcher and registers its kernels from the one declaration:

* kinds "elementwise", "reduction", "shape" (copying) and "extern": a CPU kernel that runs
  `impl` on the inputs' NumPy arrays and stores the result in an output laid out as `meta`
  says, and a Meta kernel that allocates that output without data;
* kind "view": one kernel for every backend (CompositeExplicitAutograd): `meta` gives the
  view's (shape, stride, storage offset) and the result aliases the input's storage;
* kinds "factory" and "random": no tensor argument names a backend, so a BackendSelect
  kernel picks it from the `device` argument, as PyTorch's BackendSelect key does.

`meta` and `impl` take the schema's arguments positionally, as kernels do; `impl` gets
NumPy arrays where the schema has tensors and returns an array (or a tuple of arrays): it
is the executable definition the later compiler's kernels are tested against. Primitives
have no derivatives: autograd works on the ATen ops above them.
"""
from __future__ import annotations

import numpy as np

from .._ops import overload_of
from ..core.device import CPU, META, device as _device
from ..core.tensor import Tensor
from ..dispatch import dispatcher
from ..dispatch.keys import BACKEND_OF_DEVICE, DispatchKey
from ..ops.registry import TensorSpec

KINDS = ("elementwise", "reduction", "view", "shape", "factory", "random", "extern")

prims: dict = {}      # name -> Prim, in declaration order


class Prim:
    """A primitive's declaration; `.overload` is `glasstorch.ops.prims.<name>.default`."""

    def __init__(self, schema: str, kind: str, meta, impl, expr, doc: str):
        if kind not in KINDS:
            raise ValueError(f"unknown primitive kind '{kind}'; expected one of {KINDS}")
        self.op = dispatcher.define(schema, namespace="prims", tags=("pointwise",)
                                    if kind == "elementwise" else ())
        self.name = self.op.schema.name
        self.schema = self.op.schema
        self.kind, self.meta, self.impl, self.expr, self.doc = kind, meta, impl, expr, doc
        self.op.info["prim"] = self

    @property
    def overload(self):
        return overload_of(self.op)

    def __call__(self, *args, **kwargs):
        return self.overload(*args, **kwargs)

    def __repr__(self):
        return f"<Prim prims::{self.name} ({self.kind})>"


def prim(schema: str, *, kind: str, meta, impl=None, expr=None, doc: str = "") -> Prim:
    """Declare a primitive and register its kernels (see the module docstring)."""
    p = Prim(schema, kind, meta, impl, expr, doc)
    if kind == "view":
        p.op.register("CompositeExplicitAutograd", _view_kernel(p))
    else:
        p.op.register(DispatchKey.CPU, _cpu_kernel(p))
        p.op.register(DispatchKey.Meta, _meta_kernel(p))
        if kind in ("factory", "random"):
            p.op.register(DispatchKey.BackendSelect, _backend_select)
    prims[p.name] = p
    return p


# ---- kernels ---------------------------------------------------------------------------------

def arrays(args) -> tuple:
    """The arguments with each tensor (or list of tensors) replaced by its NumPy array."""
    return tuple(a._array() if isinstance(a, Tensor)
                 else [t._array() for t in a] if isinstance(a, list) and a
                 and isinstance(a[0], Tensor) else a for a in args)


def _allocate(spec, device):
    if isinstance(spec, TensorSpec):
        return Tensor._empty(spec.shape, spec.dtype, device, spec.stride)
    return tuple(_allocate(s, device) for s in spec)


def _store(out, result) -> None:
    if isinstance(out, Tensor):
        if out.numel():
            with np.errstate(all="ignore"):
                out._array()[...] = result
        return
    for o, r in zip(out, result):
        _store(o, r)


def _cpu_kernel(p: Prim):
    meta, impl = p.meta, p.impl

    def kernel(*args):
        out = _allocate(meta(*args), CPU)
        with np.errstate(all="ignore"):
            result = impl(*arrays(args))
        _store(out, result)
        return out
    kernel.__qualname__ = f"{impl.__qualname__} (prim CPU)"
    kernel.__module__ = impl.__module__
    return kernel


def _meta_kernel(p: Prim):
    meta = p.meta

    def kernel(*args):
        return _allocate(meta(*args), META)
    kernel.__qualname__ = f"{meta.__qualname__} (prim Meta)"
    kernel.__module__ = meta.__module__
    return kernel


def _view_kernel(p: Prim):
    meta = p.meta

    def kernel(a, *args):
        shape, stride, offset = meta(a, *args)
        out = Tensor._make(a._storage, offset, tuple(shape), tuple(stride), a.dtype, a._vc)
        out._base = a if a._base is None else a._base
        return out
    kernel.__qualname__ = f"{meta.__qualname__} (prim view)"
    kernel.__module__ = meta.__module__
    return kernel


def _backend_select(op, ks, *args):
    """Run a factory primitive on the backend of its `device` argument."""
    position = next(i for i, a in enumerate(op.schema.arguments) if a.name == "device")
    where = _device(args[position]) if args[position] is not None else _device("cpu")
    backend = BACKEND_OF_DEVICE[where.type]
    if not op.has_kernel_for(backend):
        raise NotImplementedError(f"prims::{op.schema.name} has no kernel for {where.type} "
                                  "tensors (its implementation is NumPy's, on the CPU)")
    return op.redispatch(ks | (1 << backend), *args)
