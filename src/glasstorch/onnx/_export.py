"""`torch.onnx.export`: an exported program's ATen graph, node by node, as an ONNX model.

The model is exported with `torch.export.export` (dynamic axes become `Dim`s), then each
node is translated by `_aten.TRANSLATIONS`. Parameters and buffers become initializers
named by their state_dict keys; the user's inputs and outputs take `input_names` /
`output_names` (else the graph's names).
"""
from __future__ import annotations

import contextlib
import inspect
import operator
import os

import numpy as np

from ..core.tensor import Tensor
from ..dispatch.dispatcher import bind_arguments
from ..export import Dim, ExportedProgram, export as export_program
from ..export.graph_signature import InputKind
from ..nn.modules.module import Module
from ..utils._pytree import tree_flatten
from ._aten import TRANSLATIONS, Call, OnnxExporterError
from ._builder import GraphBuilder, onnx_type

DEFAULT_OPSET = 20          # PyTorch 2.13's torch.onnx default
_exporting = [False]


def is_in_onnx_export() -> bool:
    """True while `torch.onnx.export` traces a model."""
    return _exporting[0]


@contextlib.contextmanager
def _in_export():
    _exporting[0] = True
    try:
        yield
    finally:
        _exporting[0] = False


class ONNXProgram:
    """What `export(..., dynamo=True)` returns: the ModelProto, `save(path)`, and a call
    that runs it with onnxruntime."""

    def __init__(self, model_proto, exported_program: ExportedProgram):
        self.model_proto = model_proto
        self.exported_program = exported_program
        self._session = None

    def save(self, destination) -> None:
        import onnx
        onnx.save(self.model_proto, os.fspath(destination))

    def __call__(self, *args, **kwargs):
        import onnxruntime
        if self._session is None:
            self._session = onnxruntime.InferenceSession(
                self.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
        leaves = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, Tensor)]
        names = [i.name for i in self._session.get_inputs()]
        feeds = {n: t.detach().cpu().numpy() for n, t in zip(names, leaves)}
        from ..ops.creation.factories import from_numpy
        return [from_numpy(np.asarray(v)) for v in self._session.run(None, feeds)]


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None,
           output_names=None, opset_version=None, dynamo: bool = True,
           external_data: bool = True, dynamic_shapes=None, export_params: bool = True,
           keep_initializers_as_inputs: bool = False, dynamic_axes=None,
           do_constant_folding: bool = True, training=None, **unsupported):
    """Export `model` (an nn.Module or an ExportedProgram) to ONNX; write it to `f` when
    given. Returns an ONNXProgram with `dynamo=True` (PyTorch's default), else None."""
    try:
        import onnx
    except ImportError:
        raise ModuleNotFoundError("torch.onnx.export needs the `onnx` package: pip install "
                                  "'glasstorch[export]'") from None
    if unsupported:
        raise TypeError(f"torch.onnx.export: unsupported options {sorted(unsupported)}")
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if opset < 17:
        raise OnnxExporterError(f"opset_version={opset}: glasstorch writes opsets 17 and up")
    if not export_params:
        raise OnnxExporterError("export_params=False is not supported by glasstorch")
    args = args if isinstance(args, tuple) else (args,)
    with _in_export():
        program = _program(model, args, kwargs, input_names, dynamic_axes, dynamic_shapes)
    proto = _translate(onnx, program, opset, input_names, output_names, dynamic_axes or {},
                       keep_initializers_as_inputs, do_constant_folding)
    onnx.checker.check_model(proto)
    if f is not None:
        if isinstance(f, (str, os.PathLike)):
            onnx.save(proto, os.fspath(f))
        else:
            f.write(proto.SerializeToString())
    return ONNXProgram(proto, program) if dynamo else None


def _program(model, args, kwargs, input_names, dynamic_axes, dynamic_shapes) -> ExportedProgram:
    if isinstance(model, ExportedProgram):
        return model
    if not isinstance(model, Module):
        raise OnnxExporterError(f"torch.onnx.export expects an nn.Module or an "
                                f"ExportedProgram, got {type(model).__name__}")
    if dynamic_axes and dynamic_shapes is None:
        dynamic_shapes = _dims_from_axes(model, args, input_names, dynamic_axes)
    was_training = model.training
    model.eval()
    try:
        return export_program(model, args, kwargs, dynamic_shapes=dynamic_shapes)
    finally:
        model.train(was_training)


def _dims_from_axes(model, args, input_names, dynamic_axes) -> tuple:
    """`dynamic_axes` ({input name: {axis: name} or [axes]}) as per-argument Dims; inputs
    are named by `input_names`, else by forward's parameters."""
    parameters = [p.name for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = list(input_names or []) + parameters[len(input_names or []):]
    shapes = []
    for i, value in enumerate(args):
        name = names[i] if i < len(names) else None
        axes = dynamic_axes.get(name) if name is not None else None
        if axes is None or not isinstance(value, Tensor):
            shapes.append(None)
            continue
        shapes.append({a: Dim(label if label.isidentifier() else f"{name}_dim{a}", min=1)
                       for a, label in _axis_labels(name, axes).items()})
    return tuple(shapes)


def _axis_labels(name: str, axes) -> dict:
    """{axis: label} of one `dynamic_axes` entry (a dict, or a list of axes: PyTorch's
    `<name>_dynamic_axes_<n>` labels)."""
    if isinstance(axes, dict):
        return dict(axes)
    return {a: f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}


def _translate(onnx, program: ExportedProgram, opset: int, input_names, output_names,
               dynamic_axes: dict, keep_initializers_as_inputs: bool,
               do_constant_folding: bool):
    helper = onnx.helper
    specs = {s.arg.name: s for s in program.graph_signature.input_specs}
    user_nodes = [n for n in program.graph.nodes
                  if n.op == "placeholder" and specs[n.name].kind is InputKind.USER_INPUT]
    own = [n for n in program._input_names if n not in program._fixed_inputs]
    names = list(input_names or []) + own[len(input_names or []):]
    dim_labels = {key: label for key, (label, _, _) in program._ranges.items()}
    dynamic_inputs = {key: (names[key[0]], program._example_shapes[key[0]][key[1]])
                      for key in program._ranges}
    b = GraphBuilder(onnx, opset, dynamic_inputs, fold=do_constant_folding)
    values: dict = {}
    graph_inputs = []
    for i, node in enumerate(user_nodes):
        val = node.meta["val"]
        shape = [dim_labels.get((i, d), size) for d, size in enumerate(val.shape)]
        values[node] = b.reserve(names[i])
        graph_inputs.append(helper.make_tensor_value_info(names[i], onnx_type(val.dtype),
                                                          shape))
    state = {**program.state_dict, **program.constants}
    live = _live_nodes(program.graph)
    for node in program.graph.nodes:
        if node not in live and node not in values:
            continue                     # a buffer never read, indices never used, ...
        if node.op == "placeholder" and node not in values:
            target = specs[node.name].target
            values[node] = b.initializer(target, state[target].detach().numpy())
        elif node.op == "get_attr":
            values[node] = b.initializer(
                node.target, getattr(program.graph_module, node.target).detach().numpy())
        elif node.op == "call_function":
            values[node] = _node(b, node, values, program._sizes.get(node.name, ()))
    output_node = next(n for n in program.graph.nodes if n.op == "output")
    results = [values[n] for n in output_node.args[0]]
    out_names = list(output_names or [])
    graph_outputs = []
    for i, (node, value) in enumerate(zip(output_node.args[0], results)):
        name = out_names[i] if i < len(out_names) else node.name
        if name != value:
            value = _name_output(b, value, name)
        val = node.meta["val"]
        shape = list(val.shape)
        if name in dynamic_axes:
            for axis, label in _axis_labels(name, dynamic_axes[name]).items():
                shape[axis] = label
        elif program._ranges:     # which sizes follow the inputs' is not known: symbolic
            shape = [f"{value}_dim{d}" for d in range(val.dim())]
        graph_outputs.append(helper.make_tensor_value_info(value, onnx_type(val.dtype), shape))
    initializers = b.used_initializers()
    if keep_initializers_as_inputs:
        graph_inputs += [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                         for t in initializers]
    graph = helper.make_graph(b.nodes, "main_graph", graph_inputs, graph_outputs,
                              initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             producer_name="glasstorch", ir_version=min(
                                 onnx.IR_VERSION, 10))


def _name_output(b: GraphBuilder, value: str, name: str) -> str:
    """Give the graph output `value` the name `name`: the producing node's output is
    renamed (and its readers updated), else (an input, an initializer, a name taken, a
    value already an output) an Identity node makes it."""
    value = b.renamed.get(value, value)
    producer = next((n for n in b.nodes if value in n.output), None)
    if producer is None or name in b._names or value in b.output_names:
        b.nodes.append(b.helper.make_node("Identity", [value], [b.reserve(name)],
                                          name=b.fresh("node_Identity")))
    else:
        b.reserve(name)
        for node in b.nodes:
            node.input[:] = [name if i == value else i for i in node.input]
            node.output[:] = [name if o == value else o for o in node.output]
        b.renamed[value] = name
    b.output_names.add(name)
    return name


def _live_nodes(graph) -> set:
    """The nodes the outputs depend on."""
    output = next(n for n in graph.nodes if n.op == "output")
    live, stack = set(), [output]
    while stack:
        node = stack.pop()
        if node not in live:
            live.add(node)
            stack.extend(node.all_input_nodes)
    return live


def _node(b: GraphBuilder, node, values: dict, sizes):
    if node.target is operator.getitem:
        source, index = node.args
        value = values[source][index]
        if value is None and node.users:
            raise OnnxExporterError(f"node {node.name!r} uses an output of {source.target} "
                                    "that the ONNX translation does not produce")
        return value
    name = str(node.target)
    translate = TRANSLATIONS.get(name)
    if translate is None:
        raise OnnxExporterError(f"Unsupported: the operator {name} (node {node.name!r}) has "
                                "no ONNX translation in glasstorch")
    bound = list(bind_arguments(node.target._op, node.args, node.kwargs))

    def value_of(a):
        if isinstance(a, (list, tuple)):
            return type(a)(value_of(x) for x in a)
        return values[a] if hasattr(a, "op") and a in values else a

    def meta_of(a):
        if isinstance(a, (list, tuple)):
            return [meta_of(x) for x in a]
        return a.meta.get("val") if hasattr(a, "op") else None

    arguments = node.target._schema.arguments
    dynamic: dict = {}
    for path, base, coefficients in sizes:
        where, key, *rest = path
        position = key if where == 0 else next(i for i, a in enumerate(arguments)
                                               if a.name == key)
        dynamic.setdefault(position, {})[rest[0] if rest else None] = (base, coefficients)
    return TRANSLATIONS[name](Call(b, node, [value_of(a) for a in bound],
                                   [meta_of(a) for a in bound], dynamic))
