"""Every op's kernel on a GPU, registered for the CUDA dispatch key.

Three kinds, chosen per op:
- **native**: a kernel written for CUDA (`decl.impl("CUDA")` next to the op, or in
  backends/cuda), which wins over the rest;
- **shared**: the op's array kernel runs unchanged on CuPy arrays. CPU kernels call NumPy
  functions, and CuPy implements NumPy's protocols (`__array_ufunc__`,
  `__array_function__`), so `np.add(a, b, out=o)` on CuPy arrays launches CuPy's kernel.
  This is DESIGN's "kernels that are the same over any array module are written once".
  bfloat16 operands (bit patterns on the GPU: CuPy has no bfloat16) are widened to
  float32 first and the result rounded once, which is how PyTorch computes bfloat16 too
  (a kernel that rounds between steps, as a few of PyTorch's do, is told `steps_in`);
- **host**: the op runs on the CPU on copies of its operands, and the results are copied
  back, with a warning naming the op the first time. This keeps every op usable on a GPU
  while it waits for a kernel; `host_fallback_ops()` lists them.

A declaration says which with `decl.on_cuda = "shared"` or `"host"`, next to the op; by
default structured ops are shared and ops that make their own outputs (kernel ops) take the
host path until their kernel is checked on CuPy arrays.
"""
from __future__ import annotations

import warnings

from ..core import dtype as dt
from ..core.device import CPU
from ..core.shape import is_non_overlapping_and_dense
from ..core.tensor import Tensor
from ..dispatch import dispatcher
from ..dispatch.keys import DispatchKey
from ..backends.cuda import runtime
from ..backends.cuda.copy import copy_between
from ..return_types import _StructSeq
from . import registry

_warned: set = set()
_host_ops: set = set()
_kinds: dict = {}       # operator name -> "shared" or "host", for the ops register() served


def cuda_kernel_kind(op) -> str:
    """How an operator runs on a GPU: "native" (a CUDA kernel of its own), "shared" (its
    array kernel on CuPy arrays) or "host" (on the CPU, on copies)."""
    return _kinds.get(op.name, "native")


def host_fallback_ops() -> list:
    """Names of the ops that run on the CPU when given CUDA tensors."""
    return sorted(_host_ops)


def _warn_host(name: str) -> None:
    if name not in _warned:
        _warned.add(name)
        warnings.warn(f"The operator '{name}' has no CUDA kernel in glasstorch yet: it ran on "
                      "the CPU, with its operands copied to host memory and its results "
                      "copied back (slow, but the same values).", UserWarning, stacklevel=4)


# ---- moving arguments ----------------------------------------------------------------------

def _moved(x, device):
    """x with its tensors (alone or in a list) on `device`: copies with the same dense
    strides; tensors already there, and other values, as they are."""
    if isinstance(x, Tensor):
        if x._storage.device.type == device.type:
            return x
        moved = Tensor._empty(x._shape, x.dtype, device, x._stride if _dense(x) else None)
        copy_between(moved, x)
        return moved
    if isinstance(x, (list, tuple)) and x and any(isinstance(t, Tensor) for t in x):
        return type(x)(_moved(t, device) for t in x)
    return x


def _dense(t: Tensor) -> bool:
    return is_non_overlapping_and_dense(t._shape, t._stride)


def _cuda_device(args):
    for a in args:
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(t, Tensor) and t._storage.device.type == "cuda":
                return t.device
    return None


# ---- structured ops: impl(out, *args) ------------------------------------------------------

def _host_structured(decl, cpu_impl):
    def kernel(out, *args):
        _warn_host(decl.name)
        outs = out if isinstance(out, tuple) else (out,)
        host_outs = tuple(Tensor._empty(o._shape, o.dtype, CPU, o._stride if _dense(o)
                                        else None) for o in outs)
        cpu_impl(host_outs if isinstance(out, tuple) else host_outs[0],
                 *[_moved(a, CPU) for a in args])
        for o, h in zip(outs, host_outs):
            copy_between(o, h)
    kernel.__qualname__ = f"{cpu_impl.__qualname__} (CUDA via host)"
    kernel.__module__ = cpu_impl.__module__
    return kernel


def _has_bfloat16(out, args) -> bool:
    for x in (out if isinstance(out, tuple) else (out,)) + args:
        if x.__class__ is Tensor and x.dtype is dt.bfloat16:
            return True
        if isinstance(x, (list, tuple)) and any(getattr(t, "dtype", None) is dt.bfloat16
                                                for t in x):
            return True
    return False


def _widen(x):
    """A float32 copy of a bfloat16 GPU tensor (exact), float32 for a `dtype=bfloat16`
    argument (the kernel now fills a float32 output), other values as they are."""
    if x is dt.bfloat16:
        return dt.float32
    if x.__class__ is Tensor and x.dtype is dt.bfloat16:
        wide = Tensor._empty(x._shape, dt.float32, x.device)
        copy_between(wide, x)
        return wide
    if isinstance(x, (list, tuple)) and any(getattr(t, "dtype", None) is dt.bfloat16
                                            for t in x):
        return type(x)(_widen(t) for t in x)
    return x


def _cpu_scalars_to(device, args):
    """A CPU 0-dim tensor in a GPU op (allowed, as in PyTorch) as a 0-dim GPU tensor: CuPy
    takes no host arrays next to device arrays."""
    if not any(a.__class__ is Tensor and a._storage.device.type == "cpu" for a in args):
        return args
    return tuple(_moved(a, device) if a.__class__ is Tensor else a for a in args)


def _bfloat16_number(x):
    """A Python number as a bfloat16 op sees it: rounded to bfloat16 (TensorIterator casts
    scalar operands to the op's dtype), kept exact as float32 by mul/div."""
    return float(dt.bfloat16.np.type(x)) if isinstance(x, (int, float)) and \
        not isinstance(x, bool) else x


# Scalar arguments that are an operand of the op (a .Scalar overload's `other`, clamp's
# bounds): TensorIterator casts them to the op's dtype like a tensor operand.
_SCALAR_OPERANDS = ("other", "min", "max")


def _stepped(impl):
    """The kernel under `impl` (through dtype_support's wrapper, `unchecked`) that rounds its
    steps to a float16/bfloat16 op's dtype (`takes_steps_in`, as PyTorch's addr and rounded
    div do), told that dtype when its operands arrive widened to float32; else None."""
    while impl is not None and not getattr(impl, "takes_steps_in", False):
        impl = getattr(impl, "unchecked", None)
    return impl


def _shared_structured(decl, cpu_impl):
    operand_positions = tuple(i for i, a in enumerate(decl.schema.arguments)
                              if a.type.startswith("Tensor") or (
                                  a.type.startswith("Scalar") and a.name in _SCALAR_OPERANDS))
    exact_scalars = decl.name in ("mul", "div")
    stepped = _stepped(cpu_impl)

    def kernel(out, *args):
        device = (out[0] if isinstance(out, tuple) else out)._storage.device
        with runtime.DeviceGuard(device.index):     # CuPy launches on the current GPU
            run(out, *_cpu_scalars_to(device, args))

    def run(out, *args):
        if not _has_bfloat16(out, args):
            cpu_impl(out, *args)
            return
        outs = out if isinstance(out, tuple) else (out,)
        wide = tuple(_widen(o) if o.dtype is dt.bfloat16 else o for o in outs)
        floats = [a.dtype for a in args if a.__class__ is Tensor and a.dtype.category == dt.FLOAT]
        computes_in_bfloat16 = floats and all(d is dt.bfloat16 for d in floats)
        args = [_widen(a) for a in args]
        if computes_in_bfloat16 and not exact_scalars:
            for i in operand_positions:
                if i < len(args):
                    args[i] = _bfloat16_number(args[i])
        if computes_in_bfloat16 and stepped is not None:
            stepped(wide if isinstance(out, tuple) else wide[0], *args, steps_in=dt.bfloat16)
        else:
            cpu_impl(wide if isinstance(out, tuple) else wide[0], *args)
        for o, w in zip(outs, wide):
            if w is not o:
                copy_between(o, w)              # rounds to bfloat16 once, to nearest even
    kernel.__qualname__ = f"{cpu_impl.__qualname__} (CUDA)"
    kernel.__module__ = cpu_impl.__module__
    return kernel


# ---- kernel ops: kernel(*args) -> outputs ----------------------------------------------------

def _host_generator(generator, device):
    """The GPU's generator (default or given), as a CPU Generator drawing from the same
    stream: a sampler run on the host draws the numbers the GPU's generator owns."""
    from ..cuda.random import default_generators
    if generator is None:
        generator = default_generators[device.index]
    elif generator.device.type != "cuda":
        raise RuntimeError(f"Expected a 'cuda' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator._sharing_engine(CPU)


def _host_operator(op, cpu_kernel, name):
    mutated = tuple(op.info.get("mutated", ())) or tuple(
        i for i, a in enumerate(op.schema.arguments) if a.is_mutated)
    generators = tuple(i for i, a in enumerate(op.schema.arguments)
                       if a.type.startswith("Generator"))

    def kernel(*args):
        _warn_host(name)
        device = _cuda_device(args)
        host_args = [_moved(a, CPU) for a in args]
        for i in generators:
            host_args[i] = _host_generator(args[i], device)
        result = cpu_kernel(*host_args)
        for i in mutated:
            if host_args[i] is not args[i] and isinstance(args[i], Tensor):
                copy_between(args[i], host_args[i])
        return _restore(result, args, host_args, device)
    kernel.__qualname__ = f"{getattr(cpu_kernel, '__qualname__', name)} (CUDA via host)"
    kernel.__module__ = getattr(cpu_kernel, "__module__", __name__)
    return kernel


def _shared_operator(op, cpu_kernel, name):
    """A kernel op's own kernel on CuPy arrays; with bfloat16 operands (uint16 bit patterns
    on the GPU, which the kernel would take for integers) it takes the host path."""
    host = _host_operator(op, cpu_kernel, name)

    def kernel(*args):
        if _has_bfloat16((), args):
            return host(*args)
        device = _cuda_device(args)
        with runtime.DeviceGuard(device.index):
            return cpu_kernel(*_cpu_scalars_to(device, args))
    kernel.__qualname__ = f"{getattr(cpu_kernel, '__qualname__', name)} (CUDA)"
    kernel.__module__ = getattr(cpu_kernel, "__module__", __name__)
    return kernel


def _restore(result, args, host_args, device):
    """Results back on the GPU: an argument returned (in-place, out=) is the original."""
    if isinstance(result, Tensor):
        for a, h in zip(args, host_args):
            if result is h:
                return a
        return _moved(result, device) if device is not None else result
    if isinstance(result, tuple):
        restored = tuple(_restore(r, args, host_args, device) for r in result)
        if isinstance(result, _StructSeq):       # torch.return_types: built from a sequence
            return type(result)(restored)
        return type(result)(*restored) if hasattr(result, "_fields") else restored
    if isinstance(result, list):
        return [_restore(r, args, host_args, device) for r in result]
    return result


# ---- registration ----------------------------------------------------------------------------

def register() -> None:
    """Give every op with a CPU kernel a CUDA kernel (native ones are kept)."""
    declared = set()
    decls = {id(d): d for d in registry.declarations.values()}
    for op in dispatcher.all_operators():       # overloads sharing a name (max, max.dim)
        decls.setdefault(id(op.info.get("decl")), op.info.get("decl"))
    decls.pop(id(None), None)
    for decl in list(decls.values()):
        if decl.kind != "structured":
            continue
        for op in (decl.functional, decl.inplace, decl.out):
            if op is not None:
                declared.add(op.name)
        cpu_impl = decl.impls.get("CPU")
        if cpu_impl is None or "CUDA" in decl.impls:
            continue
        kind = "host" if decl.on_cuda == "host" else "shared"
        if kind == "host":
            _host_ops.add(decl.name)
            decl.impl("CUDA")(_host_structured(decl, cpu_impl))
        else:
            decl.impl("CUDA")(_shared_structured(decl, cpu_impl))
        for op in (decl.functional, decl.inplace, decl.out):
            if op is not None:
                _kinds[op.name] = kind
    for op in dispatcher.all_operators():
        if op.name in declared or DispatchKey.CUDA in op.kernels:
            continue
        cpu_kernel = op.kernels.get(DispatchKey.CPU)
        if cpu_kernel is None:
            continue
        decl = op.info.get("decl")
        # aten ops by their short name, as the warning names them; others qualified
        name = op.name.split("::")[-1] if op.schema.namespace == "aten" else op.name
        if decl is not None and decl.on_cuda == "shared":
            _kinds[op.name] = "shared"
            op.register(DispatchKey.CUDA, _shared_operator(op, cpu_kernel, name))
        else:
            _kinds[op.name] = "host"
            _host_ops.add(name)
            op.register(DispatchKey.CUDA, _host_operator(op, cpu_kernel, name))
