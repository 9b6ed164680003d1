"""Tracing a module into an ExportedProgram: make_fx's recording mode on fake tensors.

The module's parameters and buffers are swapped for fakes for the duration of the trace and
become placeholders (`p_<path>`, `b_<path>`), followed by the user's inputs under their
`forward` argument names: PyTorch's lifted form. Running on fakes means no data exists, so
Python that branches on a tensor's values cannot be exported; the error names the user's
line, as PyTorch's does.
"""
from __future__ import annotations

import contextlib
import inspect
import os
import traceback

from ..core.shape import contiguous_strides
from ..core.tensor import Tensor
from ..fx.experimental.proxy_tensor import ProxyTorchDispatchMode, PythonKeyTracer
from ..fx.graph_module import GraphModule
from ..nn.modules.module import Module
from ..utils._pytree import tree_flatten, tree_unflatten
from .._subclasses.fake_tensor import (DataDependentOutputException,
                                       DynamicOutputShapeException, FakeTensor,
                                       FakeTensorMode)
from .dynamic_shapes import ranges_of
from ._sizes import fit_sizes
from .exported_program import ExportedProgram, fake_like
from .graph_signature import (ExportGraphSignature, InputKind, InputSpec, OutputKind,
                              OutputSpec, TensorArgument)

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class GuardOnDataDependentSymNode(RuntimeError):
    """The model's Python reads a tensor's values (`if x.sum() > 0:`, `.item()`), which an
    exported graph cannot hold (PyTorch's error of the same name)."""


def export(mod: Module, args: tuple, kwargs: dict | None = None, *, dynamic_shapes=None,
           strict: bool = False, preserve_module_call_signature: tuple = ()) -> ExportedProgram:
    """Trace `mod(*args, **kwargs)` into an ExportedProgram: an ATen-level graph with the
    parameters and buffers lifted to inputs. `strict` is accepted for PyTorch's signature;
    both modes trace the same way here."""
    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got "
                         f"{type(mod)}.")
    if not isinstance(args, tuple):
        raise ValueError(f"Expected `args` to be a tuple, got {type(args)}")
    kwargs = dict(kwargs or {})
    bound = _bound(mod, args, kwargs)             # the inputs must fit forward
    arguments = list(bound)
    names, leaves, in_spec = _user_inputs(mod, args, kwargs)
    tensor_positions = [i for i, v in enumerate(leaves) if isinstance(v, Tensor)]
    tensor_names = [names[i] for i in tensor_positions]
    tensors = [leaves[i] for i in tensor_positions]
    ranges = {(tensor_names.index(arguments[position]), d): limits for (position, d), limits
              in ranges_of(dynamic_shapes, arguments, list(bound.values())).items()}

    traced = _trace_once(mod, leaves, in_spec, tensor_positions, tensor_names)
    gm, input_specs, output_nodes, out_spec, state = traced
    sizes = fit_sizes(gm, ranges, [tuple(t.shape) for t in tensors],
                      lambda shapes: _trace_once(mod, leaves, in_spec, tensor_positions,
                                                 tensor_names, shapes)[0])
    output_specs = [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(n.name), None)
                    for n in output_nodes]
    fixed_inputs = {name: leaves[i] for i, name in enumerate(names)
                    if not isinstance(leaves[i], Tensor)}
    persistent = {s.target for s in input_specs if s.persistent is not False}
    return ExportedProgram(
        gm, ExportGraphSignature(input_specs, output_specs),
        {k: v for k, v in state.items() if k in persistent},
        constants={k: v for k, v in state.items() if k not in persistent},
        in_spec=in_spec, out_spec=out_spec, input_names=names, fixed_inputs=fixed_inputs,
        example_shapes=[tuple(t.shape) for t in tensors], ranges=ranges,
        sizes=sizes, training=mod.training)


def _trace_once(mod, leaves, in_spec, tensor_positions, tensor_names, shapes=None) -> tuple:
    """One trace: (graph module, input specs, output nodes, output spec, state_dict). With
    `shapes`, the user's tensors are fakes of those shapes instead of the examples'."""
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    tracer = PythonKeyTracer()
    graph = tracer.graph
    input_specs = []
    state = {}
    lifted = {}                                   # path -> fake, swapped into the module
    for kind, prefix, named in ((InputKind.PARAMETER, "p_", mod.named_parameters()),
                                (InputKind.BUFFER, "b_", mod.named_buffers())):
        for path, value in named:
            node = graph.placeholder(prefix + path.replace(".", "_"))
            fake = fake_mode.from_tensor(value)
            tracer.track(fake, node)
            lifted[path] = fake
            state[path] = value
            persistent = None if kind is InputKind.PARAMETER else _persistent(mod, path)
            input_specs.append(InputSpec(kind, TensorArgument(node.name), path, persistent))
    fake_leaves = list(leaves)
    for k, (i, name) in enumerate(zip(tensor_positions, tensor_names)):
        node = graph.placeholder(name)
        value = leaves[i]
        if shapes is None:
            fake_leaves[i] = fake_mode.from_tensor(value)
        else:
            shape = tuple(shapes[k])
            fake_leaves[i] = fake_like(shape, contiguous_strides(shape), value.dtype,
                                       value.device, value.requires_grad, fake_mode)
        tracer.track(fake_leaves[i], node)
        input_specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(node.name), None))
    fake_args, fake_kwargs = tree_unflatten(fake_leaves, in_spec)

    mode = ProxyTorchDispatchMode(tracer)
    try:
        with _swapped(mod, lifted), fake_mode, mode:
            result = mod(*fake_args, **fake_kwargs)
    except (DataDependentOutputException, DynamicOutputShapeException) as e:
        raise GuardOnDataDependentSymNode(_data_dependent_message(e)) from None
    outputs, out_spec = tree_flatten(result)
    for value in outputs:
        if not isinstance(value, FakeTensor):
            raise ValueError(f"torch.export: the model returned a {type(value).__name__} "
                             "among its outputs; only tensors (in tuples, lists and dicts) "
                             "can be exported")
    output_nodes = [tracer.create_arg(v) for v in outputs]
    graph.output(tuple(output_nodes))
    return GraphModule(tracer.root, graph, "GraphModule"), input_specs, output_nodes, \
        out_spec, state


def _bound(mod, args, kwargs) -> dict:
    """forward's arguments by name (`*args` as `args_<i>`)."""
    try:
        signature = inspect.signature(mod.forward)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TypeError(f"torch.export: the example inputs do not fit "
                        f"{type(mod).__name__}.forward: {e}") from None
    named = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            named.update((f"{name}_{i}", v) for i, v in enumerate(value))
        elif kind is inspect.Parameter.VAR_KEYWORD:
            named.update(value)
        else:
            named[name] = value
    return named


def _user_inputs(mod, args, kwargs) -> tuple:
    """(a name per leaf of (args, kwargs), the leaves, their spec): an argument that is a
    tensor keeps its name; the leaves inside a container argument are `<name>_<i>`."""
    signature = inspect.signature(mod.forward)
    positional = [p for p in signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = []
    for i, value in enumerate(args):
        base = positional[i].name if i < len(positional) else f"args_{i - len(positional)}"
        names += _leaf_names(base, value)
    for key, value in kwargs.items():
        names += _leaf_names(key, value)
    leaves, spec = tree_flatten((args, kwargs))
    return names, leaves, spec


def _leaf_names(base: str, value) -> list:
    leaves, _ = tree_flatten(value)
    if len(leaves) == 1 and leaves[0] is value:
        return [base]
    return [f"{base}_{i}" for i in range(len(leaves))]


def _persistent(mod: Module, path: str) -> bool:
    owner_path, _, field = path.rpartition(".")
    owner = mod.get_submodule(owner_path) if owner_path else mod
    return field not in owner._non_persistent_buffers_set


@contextlib.contextmanager
def _swapped(mod: Module, values: dict):
    """Put `values` (path -> tensor) in place of the module's parameters and buffers; put
    the originals back afterwards, whatever happens."""
    saved = []
    try:
        for path, value in values.items():
            owner_path, _, field = path.rpartition(".")
            owner = mod.get_submodule(owner_path) if owner_path else mod
            table = owner._parameters if field in owner._parameters else owner._buffers
            saved.append((table, field, table[field]))
            table[field] = value
        yield
    finally:
        for table, field, original in reversed(saved):
            table[field] = original


_READERS = {"__bool__": "bool(Tensor) (data-dependent control flow)", "item": "Tensor.item()",
            "tolist": "Tensor.tolist()", "__float__": "float(Tensor)", "__int__": "int(Tensor)",
            "__index__": "Tensor.__index__()", "numpy": "Tensor.numpy()",
            "__array__": "Tensor.__array__()", "__repr__": "printing a Tensor",
            "__format__": "formatting a Tensor"}


def _data_dependent_message(error: Exception) -> str:
    """What read the data, and the user's line that did it."""
    frames = traceback.extract_tb(error.__traceback__)
    what = f"an operator whose result depends on the data ({error})"
    for frame in frames:
        if frame.filename.endswith(os.path.join("core", "tensor.py")) and frame.name in _READERS:
            what = f"{_READERS[frame.name]} reads the tensor's data"
            break
    user = [f for f in frames if not f.filename.startswith(_PACKAGE_DIR)]
    where = ""
    if user:
        frame = user[-1]
        where = (f"\n\nThe following call raised this error:\n  File \"{frame.filename}\", "
                 f"line {frame.lineno}, in {frame.name}\n    {frame.line}")
    return (f"Could not export: {what}, which a graph traced without data cannot hold."
            f"{where}\n\nMake the decision from shapes or Python values, or compute both "
            "branches and choose with torch.where.")
