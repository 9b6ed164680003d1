"""The host code: a readable generated Python function that runs one compiled graph.

It allocates the buffers kernels write, calls the kernels (through ctypes, with data
pointers; or the NumPy kernels, with flat arrays) and the extern ops (through the
dispatcher) in program order, frees buffers after their last use and hands a dead buffer
to a later one of the same size (a memory plan by liveness), and returns the graph's
outputs: buffers, or views of them (a view of an input stays a view of it).
"""
from __future__ import annotations

import functools

import numpy as np

from ..._ops import OpOverload, ops_namespace
from ...backends.cpu.linalg import matmul_cpu, product_cpu
from ...backends.cpu.parallel import openmp_threads
from ...core import dtype as dt
from ...core.device import CPU
from ...core.tensor import Tensor
from .ir import (ComputedBuffer, ConstantBuffer, ExternBuffer, InputBuffer, InputUpdate, Value,
                 contiguous_strides)
from .lowering import Extern, layout_of
from .numpy_codegen import at
from .scheduler import Kernel

aten = ops_namespace("aten")


def _dtype_name(d) -> str:
    return f"dt.{d.name}" if hasattr(d, "name") else repr(d)


class HostCode:
    """Writes the host function for a schedule; `kernel_args[k]` are the root buffers of
    kernel k's parameters, in order."""

    def __init__(self, schedule, kernel_args: dict, threads: bool):
        self.schedule, self.kernel_args, self.threads = schedule, kernel_args, threads
        self.lines: list = []
        self.constants: dict = {}

    def constant(self, value) -> str:
        if value is None or isinstance(value, (bool, int, str)) or (
                isinstance(value, float) and value == value and abs(value) != float("inf")):
            return repr(value)
        if isinstance(value, dt.dtype):
            return _dtype_name(value)
        if isinstance(value, OpOverload) and value.namespace in ("aten", "prims"):
            return str(value)                   # aten.mm.default, as eager code spells it
        if isinstance(value, (list, tuple)):
            return _sequence([self.constant(v) for v in value], type(value))
        name = f"_k{len(self.constants)}"
        self.constants[name] = value
        return name

    def value(self, v, read_only: bool = False, whole=frozenset()) -> str:
        """A host expression for a Value: a buffer's name, or a view of one. `read_only`:
        the value is only read by an op that returns no view of it, which may then get an
        alias made without dispatch (`_alias`), or the buffer itself when the view covers
        it exactly; `whole`: buffers made inside the graph that only one output covers, so
        that output may be such an alias, or the buffer itself (nothing else holds it)."""
        if isinstance(v, Value):
            root, shape, stride, offset = layout_of(v)
            if v is root:
                return root.name
            direct = read_only or root in whole
            if direct and not offset and tuple(shape) == root.shape and \
                    tuple(stride) == root.stride:
                return root.name
            view = "_alias" if direct else "_view"
            return f"{view}({root.name}, {tuple(shape)}, {tuple(stride)}, {offset})"
        if isinstance(v, (list, tuple)):
            return _sequence([self.value(x, read_only, whole) for x in v], type(v))
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k!r}: {self.value(x, read_only, whole)}"
                                   for k, x in v.items()) + "}"
        return self.constant(v)

    def write(self, inputs, outputs, structure) -> str:
        program = self.schedule.program
        output_roots = {layout_of(v)[0] for v in outputs if isinstance(v, Value)}
        last_use, host_read = {}, set()
        for pos, step in enumerate(program):
            if isinstance(step, Kernel):
                for root in self.kernel_args[step.name]:
                    last_use[root] = pos
            else:
                for v in step.buffers_read():
                    root = layout_of(v)[0]
                    last_use[root] = pos
                    host_read.add(root)
        kernel_read_externs = {r for args in self.kernel_args.values() for r in args
                               if isinstance(r, ExternBuffer)}
        names = ", ".join(b.name for b in inputs)
        emit = self.lines.append
        emit("def call(args):")
        emit(f"    {names}{',' if len(inputs) == 1 else ''} = args" if inputs else "    pass")
        if self.threads and any(isinstance(step, Kernel) for step in program):
            emit("    nthreads = _threads()")
        for buf in self.schedule.lowering.constants:
            emit(f"    {buf.name} = {self.constant(buf.tensor)}  # made at compile time")
        free: dict = {}                                 # nbytes -> [buffer names]
        for pos, step in enumerate(program):
            if isinstance(step, Kernel):
                for node in step.nodes:
                    if node not in step.stored or isinstance(node, InputUpdate):
                        continue
                    size = node.numel() * node.dtype.itemsize
                    reusable = node not in output_roots and node not in host_read
                    if reusable and free.get(size):
                        emit(f"    {node.name} = {free[size].pop()}  # reuse")
                    else:
                        emit(f"    {node.name} = _empty({tuple(node.shape)}, "
                             f"{tuple(node.stride)}, {_dtype_name(node.dtype)})")
                args = ", ".join((["nthreads"] if self.threads else []) +
                                 [f"_arg({r.name})" for r in self.kernel_args[step.name]])
                emit(f"    {step.name}({args})")
            else:
                self._extern(step, kernel_read_externs)
            for root, last in last_use.items():
                if last == pos and root not in output_roots and not isinstance(
                        root, (InputBuffer, ConstantBuffer)):
                    if isinstance(root, ComputedBuffer) and root not in host_read:
                        size = root.numel() * root.dtype.itemsize
                        free.setdefault(size, []).append(root.name)
                    else:
                        emit(f"    del {root.name}")
        emit(f"    return {self._structure(structure, iter(outputs), _whole(outputs))}")
        return "\n".join(self.lines) + "\n"

    def _extern(self, step: Extern, kernel_read):
        op = self.constant(step.op)
        read_only = _reads_only(step.op)
        args = ", ".join(self.value(a, read_only) for a in step.args)
        kwargs = ", ".join(f"{k}={self.value(v, read_only)}" for k, v in step.kwargs.items())
        call = f"{op}({', '.join(x for x in (args, kwargs) if x)})"
        kernel = _product_kernel(step)
        if kernel is not None:
            out = step.outputs[0]
            call = (f"_product({op}, {kernel.__name__}, {args}, {tuple(out.shape)}, "
                    f"{tuple(out.stride)}, {_dtype_name(out.dtype)})")
        emit = self.lines.append
        if step.tuple_result:
            emit(f"    {step.name} = {call}")
            for i, out in enumerate(step.outputs):
                emit(f"    {out.name} = {step.name}[{i}]")
        else:
            emit(f"    {step.outputs[0].name} = {call}")
        for out in step.outputs:
            if out in kernel_read:       # kernels were generated for the layout eager gives
                emit(f"    {out.name} = _layout({out.name}, {tuple(out.stride)})")

    def _structure(self, structure, outputs, whole) -> str:
        if isinstance(structure, (list, tuple)):
            return _sequence([self._structure(s, outputs, whole) for s in structure],
                             type(structure))
        v = next(outputs)
        return self.value(v, whole=whole)


def _whole(outputs) -> frozenset:
    """The buffers made inside the graph that exactly one output covers (no two outputs may
    become one tensor)."""
    roots = [layout_of(v)[0] for v in outputs if isinstance(v, Value)]
    return frozenset(r for r in roots if roots.count(r) == 1 and (
        isinstance(r, ComputedBuffer) or isinstance(r, ExternBuffer) and (
            r.node is None or _reads_only(r.node.target))))


def _product_kernel(step: Extern):
    """The CPU kernel of a matrix product the host code may call directly (`_product`):
    mm and bmm, and matmul of two operands of one rank with the same batch dims, whose
    output eager lays out row-major; None for anything else."""
    if step.kwargs or len(step.args) != 2 or not all(isinstance(a, Value) for a in step.args):
        return None
    (a, b), out = step.args, step.outputs[0]
    if step.op in (aten.mm.default, aten.bmm.default):
        return product_cpu
    if step.op is aten.matmul.default and len(a.shape) == len(b.shape) >= 2 and \
            a.shape[:-2] == b.shape[:-2] and out.stride == contiguous_strides(out.shape):
        return matmul_cpu
    return None


def _reads_only(op) -> bool:
    """Whether an extern op only reads its tensor arguments and returns new tensors (no
    view of an argument)."""
    schema = getattr(op, "_schema", None)
    return (schema is not None and not schema.is_mutable
            and all(r.alias is None for r in schema.returns))


def _sequence(items: list, kind) -> str:
    """Source text of a list or a tuple of already rendered items."""
    if kind is list:
        return f"[{', '.join(items)}]"
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


def runtime_namespace(numpy: bool, device=CPU) -> dict:
    """The names host code uses; on a GPU, buffers are made on `device` and kernels get
    device pointers."""
    ns = {"dt": dt, "aten": aten, "prims": ops_namespace("prims"), "_empty": _empty,
          "_product": _product, "product_cpu": product_cpu, "matmul_cpu": matmul_cpu,
          "_view": _view, "_alias": _alias, "_layout": _layout, "_threads": openmp_threads}
    ns["_arg"] = _flat if numpy else _address
    if device.type == "cuda":
        ns["_empty"] = functools.partial(_empty, device=device)
        ns["_arg"] = _device_address
    ns["_at"] = at
    return ns


def _product(op, kernel, a: Tensor, b: Tensor, shape, stride, dtype):
    """`op(a, b)`, a matrix product, as the dispatcher would make it on CPU tensors (the
    output laid out as the op's meta function lays it out, then its CPU kernel, which calls
    BLAS), less the dispatch: about a fifth of a small product's time (a GPT step makes 40).
    Tensors of another device (meta) go through the dispatcher."""
    if a._storage.device is not CPU or b._storage.device is not CPU:
        return op(a, b)
    out = Tensor._empty(shape, dtype, CPU, stride)
    kernel(out, a, b)
    return out


def _empty(shape, stride, dtype, device=CPU):
    """A buffer, made as eager kernels make their outputs (no dispatch: the host code
    already knows the device and layout)."""
    return Tensor._empty(shape, dtype, device, stride)


def _view(base: Tensor, shape, stride, offset):
    return aten.as_strided.default(base, list(shape), list(stride),
                                   base.storage_offset() + offset)


def _alias(base: Tensor, shape, stride, offset):
    """A tensor over `base`'s memory for an op that only reads it: made directly, without
    the dispatcher's view bookkeeping (no autograd, no version counter of its own)."""
    return Tensor._make(base._storage, base._offset + offset, shape, stride, base.dtype,
                        base._vc)


def _layout(t: Tensor, stride):
    """`t` laid out with `stride` (a copy when the op returned another layout)."""
    if tuple(t.stride()) == tuple(stride):
        return t
    out = _empty(tuple(t.shape), tuple(stride), t.dtype, t._storage.device)
    aten.copy_.default(out, t)
    return out


def _address(t: Tensor) -> int:
    """The address of t's first element, a kernel's pointer argument: the storage's address
    (read from its buffer without the objects NumPy's `.ctypes.data` builds: ~250 arguments
    a GPT step) plus the offset."""
    return t._storage.data_ptr() + t._offset * t.dtype.itemsize


def _device_address(t: Tensor):
    """A GPU kernel's pointer argument, as CuPy passes it (a 64-bit integer)."""
    return np.uintp(_address(t))


def _flat(t: Tensor):
    """The flat NumPy array of t's storage from its first element on."""
    buf = t.untyped_storage().buf
    isz = t.dtype.itemsize
    start = t.storage_offset() * isz
    return np.ndarray(((buf.nbytes - start) // isz,), t.dtype.np, buf, start)
