"""`torch.jit.trace`: a function or module run once on example inputs, recorded as a graph.

The trace is make_fx's recording mode on the real example inputs: each operator becomes a
node (parameters and buffers are read with get_attr at their module paths), and later calls
run the graph, so Python control flow is fixed at the branch the examples took. While the
trace runs, Python that reads a tensor's value (`bool(t)`, `.item()`, `.tolist()`, ...)
warns with PyTorch's TracerWarning at the user's line.
"""
from __future__ import annotations

import contextlib
import os
import sys
import warnings

from ..core.tensor import Tensor
from ..fx.experimental.proxy_tensor import ProxyTorchDispatchMode, PythonKeyTracer
from ..fx.graph_module import GraphModule, _assign_attr
from ..nn.modules.module import Module
from ..utils._pytree import tree_flatten, tree_unflatten
from ._script import ScriptFunction, ScriptModule

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_tracing = [False]


class TracerWarning(Warning):
    """Python in a traced function that the trace records as a constant."""

    @staticmethod
    def ignore_lib_warnings():
        warnings.filterwarnings("ignore", category=TracerWarning, module=r"glasstorch\.")


def is_tracing() -> bool:
    """True while `torch.jit.trace` runs the function being traced."""
    return _tracing[0]


_READERS = {
    "__bool__": "Converting a tensor to a Python boolean",
    "item": "Converting a tensor to a Python number",
    "tolist": "Converting a tensor to a Python list",
    "__float__": "Converting a tensor to a Python float",
    "__int__": "Converting a tensor to a Python integer",
    "__index__": "Converting a tensor to a Python index",
    "numpy": "Converting a tensor to a NumPy array",
}
_WARNING = (" might cause the trace to be incorrect. We can't record the data flow of Python "
            "values, so this value will be treated as a constant in the future. This means "
            "that the trace might not generalize to other inputs!")


@contextlib.contextmanager
def _warning_on_data_reads():
    """For the trace's duration, a Tensor method that hands its value to Python warns when
    the user's code (not glasstorch's) calls it."""
    originals = {name: Tensor.__dict__[name] for name in _READERS}

    def wrap(name, method):
        def reader(self, *args, **kwargs):
            caller = sys._getframe(1)
            if not caller.f_code.co_filename.startswith(_PACKAGE_DIR):
                warnings.warn_explicit(_READERS[name] + _WARNING, TracerWarning,
                                       caller.f_code.co_filename, caller.f_lineno)
            return method(self, *args, **kwargs)
        reader.__name__ = name
        return reader

    for name, method in originals.items():
        setattr(Tensor, name, wrap(name, method))
    _tracing[0] = True
    try:
        yield
    finally:
        _tracing[0] = False
        for name, method in originals.items():
            setattr(Tensor, name, method)


def _record(fn, root: Module | None, example_inputs) -> tuple:
    """(graph module, input spec, output spec) of `fn(*example_inputs)`."""
    leaves, in_spec = tree_flatten(tuple(example_inputs))
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"Type '{type(leaf).__name__}' cannot be traced. Only Tensors "
                               "and (possibly nested) Lists, Dicts, and Tuples of Tensors "
                               "can be traced")
    tracer = PythonKeyTracer()
    graph = tracer.graph
    names = _argument_names(fn, len(leaves))
    for name, leaf in zip(names, leaves):
        tracer.track(leaf, graph.placeholder(name))
    if root is not None:        # the module's tensors, at their paths, shared
        for path, value in list(root.named_parameters()) + list(root.named_buffers()):
            _assign_attr(value, tracer.root, path)
            node = graph.get_attr(path)
            node.meta["val"] = value
            tracer.track(value, node)
    with _warning_on_data_reads(), ProxyTorchDispatchMode(tracer):
        result = fn(*tree_unflatten(leaves, in_spec))
    outputs, out_spec = tree_flatten(result)
    graph.output(tuple(tracer.create_arg(v) for v in outputs))
    graph.eliminate_dead_code()
    return GraphModule(tracer.root, graph, "GraphModule"), in_spec, out_spec


def _argument_names(fn, count: int) -> list:
    import inspect
    try:
        parameters = [p.name for p in inspect.signature(fn).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        parameters = []
    return [parameters[i] if i < len(parameters) else f"args_{i}" for i in range(count)]


def trace(func, example_inputs=None, optimize=None, check_trace: bool = True,
          check_inputs=None, check_tolerance: float = 1e-5, strict: bool = True,
          _force_outplace: bool = False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs: bool = True):
    """Trace `func` (a function or an nn.Module's forward) on `example_inputs` (a tensor or
    a tuple of them) into a ScriptFunction or a TopLevelTracedModule."""
    if example_kwarg_inputs is not None:
        raise NotImplementedError("torch.jit.trace(example_kwarg_inputs=...) is not "
                                  "supported by glasstorch; pass the inputs positionally")
    if example_inputs is None:
        raise RuntimeError("example_inputs should not be None")
    inputs = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    if isinstance(func, ScriptModule):
        return func
    if isinstance(func, Module):
        return trace_module(func, {"forward": inputs})
    gm, in_spec, out_spec = _record(func, None, inputs)
    return ScriptFunction(_traced_call(gm, in_spec, out_spec),
                          getattr(func, "__name__", "forward"), gm)


def trace_module(mod: Module, inputs: dict, optimize=None, check_trace: bool = True,
                 check_inputs=None, check_tolerance: float = 1e-5, strict: bool = True,
                 _force_outplace: bool = False, _module_class=None, _compilation_unit=None,
                 example_inputs_is_kwarg: bool = False, _store_inputs: bool = True):
    """Trace `mod`'s methods named in `inputs` ({"forward": example inputs}); the result
    shares the module's parameters and buffers."""
    if not isinstance(mod, Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if set(inputs) != {"forward"}:
        raise NotImplementedError("torch.jit.trace_module: glasstorch traces `forward` only")
    example = inputs["forward"]
    example = example if isinstance(example, tuple) else (example,)
    gm, in_spec, out_spec = _record(mod.forward, mod, example)
    traced = TopLevelTracedModule(gm, gm.graph, type(mod).__name__)
    traced.__dict__["_specs"] = (in_spec, out_spec)
    traced.__dict__["original_name"] = type(mod).__name__
    traced.train(mod.training)
    return traced


def _traced_call(gm, in_spec, out_spec):
    def call(*args):
        leaves, spec = tree_flatten(tuple(args))
        if spec != in_spec:
            raise RuntimeError(f"the traced function takes inputs structured as {in_spec}, "
                               f"got {spec}")
        return tree_unflatten(list(gm(*leaves)), out_spec)
    call.specs = (in_spec, out_spec)
    return call


class TopLevelTracedModule(GraphModule, ScriptModule):
    """A traced module: a GraphModule whose parameters are the original module's."""

    def __call__(self, *args, **kwargs):
        in_spec, out_spec = self.__dict__["_specs"]
        leaves, spec = tree_flatten(tuple(args))
        if spec != in_spec or kwargs:
            raise RuntimeError(f"forward() takes inputs structured as {in_spec}, got {spec}")
        return tree_unflatten(list(super().__call__(*leaves)), out_spec)
