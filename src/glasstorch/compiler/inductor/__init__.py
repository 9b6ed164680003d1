"""glasstorch's Inductor: an ATen-level FX graph compiled to fused C/OpenMP kernels.

`compile_fx(gm, example_inputs)` is the backend contract, as PyTorch's: `gm` holds ATen ops
(OpOverload targets, as `make_fx` produces), its placeholders are the tensor inputs, and the
returned callable takes the same inputs and returns what `gm` returns (values, dtypes,
shapes, strides; outputs that are views of inputs stay views).

The pipeline, one module each:

1. `lowering`: decompose to core ATen (`glasstorch._decomp`), then lower each node to the
   loop-level IR (`ir`): pointwise expressions, reductions, views, extern calls;
2. `scheduler`: fuse the IR's buffers into kernels (pointwise chains, reductions with their
   prologue and epilogue), drop dead buffers;
3. `codegen` (C with OpenMP) or `numpy_codegen` (without a C compiler, with one warning):
   each kernel's source; `build`: the compiler, the disk cache, ctypes. `cuda_codegen`
   writes the same kernels as CUDA C for NVRTC: a graph whose inputs are on a GPU runs
   them there (`CudaLaunch`), and any graph's kernels can be had as CUDA C
   (`Artefacts.cuda_source()`);
4. `host`: the generated Python function that calls the kernels and extern ops in order.

`debug` shows the results (`GLASSTORCH_LOGS=output_code,fusion`, `GLASSTORCH_COMPILE_DEBUG=1`).
"""
from __future__ import annotations

import ctypes
import time
import warnings

from ..._ops import ops_namespace
from ...autograd.grad_mode import no_grad
from ...core.tensor import Tensor
from ...fx.experimental.proxy_tensor import make_fx
from ...fx.node import Node
from . import build, debug, graph_cache, process
from .codegen import CKernelBuilder, c_source, generate
from ...backends.cuda import nvrtc
from .cuda_codegen import CudaKernelBuilder, CudaLaunch, cuda_source, load_kernels
from .host import HostCode, runtime_namespace
from .ir import ComputedBuffer
from .lowering import GraphLowering, GraphNotCompilable, decompose, lift_constants
from .numpy_codegen import NAMESPACE as NUMPY_NAMESPACE, NumpyKernelBuilder
from .scheduler import Kernel, Schedule

__all__ = ["CompiledGraph", "compile_fx"]

aten = ops_namespace("aten")

_warned_no_compiler = False


def compile_fx(gm, example_inputs: list):
    """Compile an ATen-level GraphModule; returns a callable taking the graph's inputs.
    Example inputs may be fake tensors: only their metadata is read."""
    return CompiledGraph(gm, [_plain(x) for x in example_inputs])


def _plain(x):
    """A plain tensor with x's metadata for a fake (or other subclass) example input."""
    if isinstance(x, Tensor) and type(x) is not Tensor:
        return aten.empty_strided.default(list(x.shape), list(x.stride()), dtype=x.dtype,
                                          device=x.device)
    return x


class CompiledGraph:
    """The compiled graph. Kernels are specialised to the inputs' shapes, strides and dtypes;
    inputs laid out otherwise compile again (cached by that signature)."""

    def __init__(self, gm, example_inputs):
        self.gm, self.constants = lift_constants(gm)
        self._constants = tuple(self.constants)
        self._arity = len(example_inputs)
        self._compiled: dict = {}
        self._last = None
        self._compile(example_inputs)

    def _compile(self, inputs):
        key = _signature(inputs)
        try:
            artefacts = _cached_compile(self.gm, list(inputs) + self.constants)
            runner = artefacts.run
        except GraphNotCompilable as e:
            debug.emit("fusion", f"graph runs eagerly: {e}")
            artefacts, runner = None, lambda args: self.gm(*args)
        self._compiled[key] = (runner, artefacts)
        self._last = (key, runner)
        return runner

    @property
    def artefacts(self):
        """The last compile's `Artefacts` (sources, schedule), None if it ran eagerly."""
        key, _ = self._last
        return self._compiled[key][1]

    def kernel_times(self, *args) -> dict:
        """{kernel name: seconds} of one call on `args`, kernel by kernel (empty when the
        graph runs eagerly)."""
        self(*args)                                  # compiles for these inputs if needed
        artefacts = self.artefacts
        return {} if artefacts is None else artefacts.kernel_times(args + self._constants)

    def __call__(self, *args):
        key = _signature(args)
        if self._last is not None and self._last[0] == key:
            runner = self._last[1]
        else:
            if len(args) != self._arity:
                raise TypeError(f"the compiled graph takes {self._arity} inputs, got "
                                f"{len(args)}")
            entry = self._compiled.get(key)
            runner = entry[0] if entry else self._compile(list(args))
            self._last = (key, runner)
        with no_grad():
            return runner(args + self._constants)


def _signature(args) -> tuple:
    """What kernels are specialised to: each input's shape, strides, dtype and device (read
    from the tensor's fields: this runs on every call)."""
    return tuple([(a._shape, a._stride, a.dtype, a._storage.device) if isinstance(a, Tensor)
                  else (type(a), a) for a in args])


class Artefacts:
    """What one compile produced: the decomposed graph, the lowering and schedule, the
    kernel source (C or NumPy), the host code, and `run(args)`."""

    def __init__(self, graph, lowering, schedule, language, kernel_source, host_source,
                 namespace):
        self.graph, self.lowering, self.schedule = graph, lowering, schedule
        self.language, self.kernel_source, self.host_source = language, kernel_source, host_source
        self.namespace = namespace
        self.run = namespace["call"]

    def kernel_times(self, args) -> dict:
        """{kernel name: seconds} of one run of the host code on `args` (inputs, then the
        graph's constants), each kernel timed on its own: which fused kernel costs what."""
        times = {}

        sync = _synchronize if self.language == "cuda" else _no_sync

        def timed(name, fn):
            def call(*a):
                sync()
                start = time.perf_counter()
                fn(*a)
                sync()                               # a launch returns before the work ends
                times[name] = times.get(name, 0.0) + time.perf_counter() - start
            return call
        namespace = dict(self.namespace)
        namespace.update({k.name: timed(k.name, self.namespace[k.name]) for k in self.kernels})
        exec(compile(self.host_source, "<glasstorch-inductor-host>", "exec"), namespace)  # noqa: S102
        with no_grad():
            namespace["call"](tuple(args))
        return times

    @property
    def kernels(self) -> list:
        return [s for s in self.schedule.program if isinstance(s, Kernel)]

    def cuda_source(self) -> tuple:
        """The same kernels as CUDA C (one translation unit), with each kernel's launch
        shape: (source, {kernel name: ("elements" | "rows", count)})."""
        builders = {k.name: CudaKernelBuilder(k) for k in self.kernels}
        source = cuda_source([generate(k, builders[k.name]) for k in self.kernels])
        return source, {name: kb.launch for name, kb in builders.items()}


def _no_sync() -> None:
    """CPU kernels have finished when they return."""


def _synchronize() -> None:
    from ... import cuda
    cuda.synchronize()


def _cached_compile(gm, inputs) -> Artefacts:
    """`_compile_graph`, or the artefacts of an equal graph compiled before (`graph_cache`)."""
    key, artefacts = graph_cache.lookup(gm, inputs)
    if artefacts is not None:
        _report(gm, artefacts)
        return artefacts
    artefacts = _compile_graph(gm, inputs)
    graph_cache.store(key, artefacts)
    return artefacts


def _compile_graph(gm, inputs) -> Artefacts:
    if any(not isinstance(x, Tensor) for x in inputs):
        raise GraphNotCompilable("an input is not a tensor")
    graph = decompose(gm, inputs)
    lowering = GraphLowering(graph, inputs).run()
    _restride_outputs(_output_metas(gm, inputs), lowering)
    schedule = Schedule(lowering).run()
    if lowering.device.type == "cuda":
        artefacts = _generate_cuda(graph, lowering, schedule)
        _report(gm, artefacts)
        return artefacts
    numpy = build.compiler() is None
    if numpy:
        _warn_no_compiler()
    try:
        artefacts = _generate(graph, lowering, schedule, numpy)
    except build.BuildError as e:          # a compiler that rejects our C (no _Float16, ...)
        warnings.warn(f"glasstorch inductor: the C compiler failed, generating NumPy code "
                      f"instead: {str(e).splitlines()[-1] if str(e) else e}", RuntimeWarning,
                      stacklevel=4)
        artefacts = _generate(graph, lowering, schedule, numpy=True)
    _report(gm, artefacts)
    return artefacts


def _generate(graph, lowering, schedule, numpy: bool) -> Artefacts:
    """Kernel sources (C, or NumPy), the host code, and the function running them."""
    kernels = [s for s in schedule.program if isinstance(s, Kernel)]
    builders = {k.name: NumpyKernelBuilder(k) if numpy else CKernelBuilder(k) for k in kernels}
    sources = [generate(k, builders[k.name]) for k in kernels]
    kernel_args = {name: kb.arguments() for name, kb in builders.items()}
    host = HostCode(schedule, kernel_args, threads=not numpy)
    host_source = host.write(lowering.inputs, lowering.outputs, _output_structure(graph))
    namespace = runtime_namespace(numpy)
    namespace.update(host.constants)
    if numpy:
        language, kernel_source = "numpy", "\n".join(sources)
        kernel_ns = dict(NUMPY_NAMESPACE, _at=namespace["_at"], _bf16=_bf16())
        exec(compile(kernel_source, "<glasstorch-inductor-kernels>", "exec"), kernel_ns)  # noqa: S102
        namespace.update({k.name: kernel_ns[k.name] for k in kernels})
    else:
        with process.kernel_library_load():
            vector = build.vector_math_available()
            language, kernel_source = "c", c_source(sources, vector)
            lib = build.load(kernel_source, build.libs(vector)[:-1]) if kernels else None
        if kernels:
            for k in kernels:
                fn = getattr(lib, k.name)
                fn.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * len(kernel_args[k.name])
                fn.restype = None
                namespace[k.name] = fn
    exec(compile(host_source, "<glasstorch-inductor-host>", "exec"), namespace)  # noqa: S102
    return Artefacts(graph, lowering, schedule, language, kernel_source, host_source, namespace)


def _generate_cuda(graph, lowering, schedule) -> Artefacts:
    """CUDA C for the kernels, compiled now by NVRTC, and host code that makes buffers on
    the graph's GPU and launches the kernels there; extern ops (matrix products, attention)
    go through the dispatcher to the CUDA backend, as in eager. Source that NVRTC rejects
    leaves the graph to run eagerly, with a warning."""
    kernels = [s for s in schedule.program if isinstance(s, Kernel)]
    builders = {k.name: CudaKernelBuilder(k) for k in kernels}
    kernel_source = cuda_source([generate(k, builders[k.name]) for k in kernels])
    names, index = tuple(k.name for k in kernels), lowering.device.index or 0
    try:
        module = load_kernels(kernel_source, names, index) if kernels else None
    except nvrtc.CompileError as e:
        warnings.warn(f"glasstorch inductor: NVRTC rejected the generated CUDA C; the graph "
                      f"runs eagerly: {e.log.strip().splitlines()[:1] or e}", RuntimeWarning,
                      stacklevel=4)
        raise GraphNotCompilable("NVRTC rejected its CUDA C") from e
    kernel_args = {name: kb.arguments() for name, kb in builders.items()}
    host = HostCode(schedule, kernel_args, threads=False)
    host_source = host.write(lowering.inputs, lowering.outputs, _output_structure(graph))
    namespace = runtime_namespace(numpy=False, device=lowering.device)
    namespace.update(host.constants)
    namespace.update({k.name: CudaLaunch(module[k.name], builders[k.name].launch, index)
                      for k in kernels})
    exec(compile(host_source, "<glasstorch-inductor-host>", "exec"), namespace)  # noqa: S102
    return Artefacts(graph, lowering, schedule, "cuda", kernel_source, host_source, namespace)


def _bf16():
    from ...core import dtype as dt
    return dt.bfloat16.np


def _output_structure(graph):
    out = next(n for n in graph.graph.nodes if n.op == "output")
    return _shape_of(out.args[0])


def _shape_of(tree):
    if isinstance(tree, (list, tuple)):
        return type(tree)(_shape_of(x) for x in tree)
    return None


def _output_metas(gm, inputs) -> list:
    """Each output's metadata before decomposition (a tensor or fake, or None): the values
    its nodes carry (capture and `make_fx` record them) when its placeholders' are laid out
    as `inputs`, else (other inputs' strides, an output node without one) those of a fake
    retrace of the graph."""
    leaves = _leaves(next(n for n in gm.graph.nodes if n.op == "output").args[0])
    placeholders = [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]
    if any(isinstance(n, Node) and "val" not in n.meta for n in leaves) or \
            len(placeholders) != len(inputs) or \
            any(not isinstance(p, Tensor) or not _same_layout(p, x)
                for p, x in zip(placeholders, inputs)):
        gm = make_fx(gm, tracing_mode="fake")(*inputs)
        leaves = _leaves(next(n for n in gm.graph.nodes if n.op == "output").args[0])
    return [getattr(n, "meta", {}).get("val") for n in leaves]


def _same_layout(a: Tensor, b: Tensor) -> bool:
    return tuple(a.shape) == tuple(b.shape) and tuple(a.stride()) == tuple(b.stride()) and \
        a.dtype == b.dtype


def _restride_outputs(metas, lowering):
    """Outputs computed by a kernel take the strides eager gives them (the graph's output
    metadata, traced before decomposition), where no view was built on the buffer yet."""
    seen = set()
    for value, meta in zip(lowering.outputs, metas):
        if isinstance(value, ComputedBuffer) and isinstance(meta, Tensor) and \
                value not in seen and tuple(meta.shape) == value.shape and \
                not getattr(value, "viewed", False):
            value.stride = tuple(meta.stride())
        seen.add(value)


def _leaves(tree):
    if isinstance(tree, (list, tuple)):
        return [x for t in tree for x in _leaves(t)]
    return [tree]


def _warn_no_compiler():
    global _warned_no_compiler
    if not _warned_no_compiler:
        _warned_no_compiler = True
        warnings.warn("glasstorch inductor: no C compiler found (or GLASSTORCH_INDUCTOR_CPP="
                      "0); generating NumPy code instead", RuntimeWarning, stacklevel=4)


def _report(gm, art: Artefacts):
    lines = []
    for k in art.kernels:
        lines.append(f"{k.name}: loops {list(k.outer)} x {list(k.inner)}: " + ", ".join(
            f"{n.name} ({type(n.value).__name__.lower()}, {k.level[n]}"
            f"{', stored' if n in k.stored else ''})" for n in k.nodes))
    for op, reason in art.lowering.fallbacks:
        lines.append(f"extern {op}: {reason}")
    lines += art.schedule.fusion_log
    debug.emit("fusion", "\n".join(lines))
    debug.emit("output_code", f"# kernels ({art.language})\n{art.kernel_source}\n"
                              f"# host code\n{art.host_source}")
    path = debug.debug_dir()
    if path is not None:
        (path / "fx_graph.py").write_text(gm.code)
        (path / "fx_graph_decomposed.py").write_text(art.graph.code)
        (path / "ir.txt").write_text("\n".join(repr(s) for s in art.lowering.steps) + "\n")
        (path / "fusion.txt").write_text("\n".join(lines) + "\n")
        suffix = {"c": "c", "cuda": "cu", "numpy": "py"}[art.language]
        (path / f"kernels.{suffix}").write_text(art.kernel_source)
        (path / "host.py").write_text(art.host_source)
