"""`torch.export.save` / `load`: an ExportedProgram as a zip archive of glasstorch's format.

The archive holds three members:

* `version`: the text `glasstorch-export 1`;
* `program.json`: the graph, one object per node (`name`, `op`, `target`, `args`, `kwargs`,
  and `meta` with the shape, strides, dtype, device and requires_grad of a tensor result),
  the graph signature, the input and output structures, the dynamic ranges and the int
  arguments that follow them (export/_sizes.py). An operator
  target is its OpOverload's name (`aten.addmm.default`), `operator.getitem` for tuple
  items. In arguments a node is `{"node": name}`, a float `{"float": "1.5"}` (so `inf`,
  `nan` and `-0.0` survive), a dtype `{"dtype": "float32"}`, a device `{"device": "cpu"}`,
  a list or tuple `{"list": [...]}` / `{"tuple": [...]}`; ints, bools, strings and None
  are themselves;
* `weights.pt`: the state_dict, the non-persistent buffers (`constants`) and the tensors
  the graph reads with get_attr, by name, written with
  `torch.save` (so `load` reads it with `weights_only=True`).

Nothing in an archive is executed: `load` rebuilds nodes only from operators that exist.
"""
from __future__ import annotations

import io
import json
import math
import operator
import os
import zipfile

from ..core import dtype as dt
from ..core.device import device as Device
from ..core import tensor as tensor_module
from ..core.tensor import Tensor
from ..fx.graph import Graph
from ..fx.graph_module import GraphModule
from ..fx.node import Node
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from ..serialization import load as load_tensors, save as save_tensors
from ..utils._pytree import LeafSpec, TreeSpec
from .._ops import OpOverload, ops_namespace
from .._subclasses.fake_tensor import FakeTensorMode
from .exported_program import ExportedProgram, fake_like
from .graph_signature import (ExportGraphSignature, InputKind, InputSpec, OutputKind,
                              OutputSpec, TensorArgument)

FORMAT = "glasstorch-export 1"
_CONTAINERS = {"tuple": tuple, "list": list, "dict": dict}


def save(ep: ExportedProgram, f, *, extra_files: dict | None = None, opset_version=None,
         pickle_protocol: int = 2) -> None:
    """Write `ep` to a path or a writable binary file."""
    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"The 'ep' parameter must be an instance of 'ExportedProgram', got "
                        f"'{type(ep).__name__}' instead.")
    attributes = {n.target: getattr(ep.graph_module, n.target) for n in ep.graph.nodes
                  if n.op == "get_attr"}
    weights = io.BytesIO()
    save_tensors({"state_dict": dict(ep.state_dict), "constants": dict(ep.constants),
                  "attributes": attributes}, weights)
    program = {
        "nodes": [node_to_json(n) for n in ep.graph.nodes],
        "inputs": [[s.kind.name, s.arg.name, s.target, s.persistent]
                   for s in ep.graph_signature.input_specs],
        "outputs": [[s.kind.name, s.arg.name, s.target]
                    for s in ep.graph_signature.output_specs],
        "in_spec": _spec(ep._in_spec), "out_spec": _spec(ep._out_spec),
        "input_names": ep._input_names, "fixed_inputs": ep._fixed_inputs,
        "example_shapes": ep._example_shapes,
        "ranges": [[p, d, *limits] for (p, d), limits in ep._ranges.items()],
        "sizes": {name: [[list(path), base, [[[list(dim) for dim in key], c]
                                              for key, c in coefficients.items()]]
                         for path, base, coefficients in entries]
                  for name, entries in ep._sizes.items()},
        "training": ep._training,
    }
    with _open(f, "w") as archive:
        archive.writestr("version", FORMAT)
        archive.writestr("program.json", json.dumps(program))
        archive.writestr("weights.pt", weights.getvalue())
        for name, data in (extra_files or {}).items():
            archive.writestr(f"extra/{name}", data)


def load(f, *, extra_files: dict | None = None, expected_opset_version=None) -> ExportedProgram:
    """Read an ExportedProgram written by `save`."""
    with _open(f, "r") as archive:
        names = set(archive.namelist())
        if "version" not in names or archive.read("version").decode() != FORMAT:
            raise RuntimeError("torch.export.load: not an archive written by glasstorch's "
                               f"torch.export.save (expected a 'version' of {FORMAT!r})")
        program = json.loads(archive.read("program.json"))
        weights = load_tensors(io.BytesIO(archive.read("weights.pt")), weights_only=True)
        for name in extra_files or {}:
            if f"extra/{name}" in names:
                extra_files[name] = archive.read(f"extra/{name}").decode()
    graph = graph_from_json(program["nodes"])
    gm = GraphModule(weights["attributes"] or Module(), graph, "GraphModule")
    signature = ExportGraphSignature(
        [InputSpec(InputKind[k], TensorArgument(n), t, p) for k, n, t, p in program["inputs"]],
        [OutputSpec(OutputKind[k], TensorArgument(n), t) for k, n, t in program["outputs"]])
    state = {k: Parameter(v) if _is_parameter(signature, k) else v
             for k, v in weights["state_dict"].items()}
    return ExportedProgram(
        gm, signature, state, in_spec=_unspec(program["in_spec"]),
        out_spec=_unspec(program["out_spec"]), input_names=program["input_names"],
        fixed_inputs=program["fixed_inputs"], constants=weights["constants"],
        example_shapes=[tuple(s) for s in program["example_shapes"]],
        ranges={(p, d): (name, lo, hi) for p, d, name, lo, hi in program["ranges"]},
        sizes={name: [(_path(path), base, {tuple(tuple(dim) for dim in key): c
                                           for key, c in coefficients})
                      for path, base, coefficients in entries]
               for name, entries in program["sizes"].items()},
        training=program["training"])


def _path(items: list) -> tuple:
    """An argument path as `_sizes` walks it: positions, then a kwarg's name."""
    return tuple(items)


def _is_parameter(signature, target) -> bool:
    return any(s.kind is InputKind.PARAMETER and s.target == target
               for s in signature.input_specs)


def _open(f, mode: str):
    if isinstance(f, (str, os.PathLike)):
        return zipfile.ZipFile(os.fspath(f), mode)
    return zipfile.ZipFile(f, mode)


# ---- nodes -------------------------------------------------------------------------------
def graph_from_json(entries: list) -> Graph:
    """The Graph `node_to_json` wrote, node by node; tensor results get fake values."""
    graph = Graph()
    nodes: dict = {}
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    for entry in entries:
        node = _rebuild_node(graph, entry, nodes)
        meta = entry.get("meta")
        if meta is not None:
            node.meta["val"] = fake_like(meta["shape"], meta["stride"], getattr(dt, meta["dtype"]),
                                         Device(meta["device"]), meta["requires_grad"], mode)
        nodes[entry["name"]] = node
    return graph


def node_to_json(node: Node) -> dict:
    """One node as JSON (see the module docstring)."""
    entry = {"name": node.name, "op": node.op, "target": _target(node.target),
             "args": _value(node.args), "kwargs": {k: _value(v) for k, v in node.kwargs.items()}}
    val = node.meta.get("val")
    if isinstance(val, Tensor):
        entry["meta"] = {"shape": list(val.shape), "stride": list(val.stride()),
                         "dtype": str(val.dtype).removeprefix("torch."),
                         "device": str(val.device), "requires_grad": val.requires_grad}
    return entry


def _target(target):
    if isinstance(target, OpOverload):
        return str(target)
    if target is operator.getitem:
        return "operator.getitem"
    if isinstance(target, str):
        return target
    raise ValueError(f"torch.export.save: cannot write a node calling {target!r}")


def _value(value):
    if isinstance(value, Node):
        return {"node": value.name}
    if isinstance(value, (list, tuple)):
        return {type(value).__name__ if type(value) in (list, tuple) else "tuple":
                [_value(v) for v in value]}
    if isinstance(value, float):
        return {"float": repr(value)}
    if isinstance(value, dt.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, Device):
        return {"device": str(value)}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if str(value).startswith("torch."):          # memory_format, layout
        return {"torch": str(value).removeprefix("torch.")}
    raise ValueError(f"torch.export.save: cannot write the argument {value!r}")


def _rebuild_node(graph: Graph, entry: dict, nodes: dict) -> Node:
    op, name = entry["op"], entry["name"]
    args = _unvalue(entry["args"], nodes)
    if op == "placeholder":
        return graph.placeholder(name)
    if op == "get_attr":
        return graph.get_attr(entry["target"])
    if op == "output":
        return graph.output(args[0])
    if op != "call_function":
        raise RuntimeError(f"torch.export.load: unexpected node kind {op!r}")
    kwargs = {k: _unvalue(v, nodes) for k, v in entry["kwargs"].items()}
    return graph.create_node("call_function", _resolve(entry["target"]), tuple(args), kwargs,
                             name=name)


def _resolve(target: str):
    if target == "operator.getitem":
        return operator.getitem
    namespace, name, overload = target.split(".")
    try:
        return getattr(getattr(ops_namespace(namespace), name), overload)
    except AttributeError:
        raise RuntimeError(f"torch.export.load: the archive calls {target}, which this "
                           "glasstorch does not have") from None


def _unvalue(value, nodes: dict):
    if isinstance(value, list):
        return [_unvalue(v, nodes) for v in value]
    if not isinstance(value, dict):
        return value
    (kind, payload), = value.items()
    if kind == "node":
        return nodes[payload]
    if kind in ("list", "tuple"):
        items = [_unvalue(v, nodes) for v in payload]
        return items if kind == "list" else tuple(items)
    if kind == "float":
        return float(payload) if payload not in ("inf", "-inf", "nan") else \
            {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}[payload]
    if kind == "dtype":
        return getattr(dt, payload)
    if kind == "device":
        return Device(payload)
    if kind == "torch":                          # memory_format, layout
        return getattr(tensor_module, payload)
    raise RuntimeError(f"torch.export.load: unknown argument encoding {kind!r}")


# ---- input and output structures ---------------------------------------------------------
def _spec(spec: TreeSpec) -> dict:
    if spec.is_leaf():
        return {"type": "leaf"}
    kind = next((k for k, v in _CONTAINERS.items() if spec.type is v), None)
    if kind is None:
        raise ValueError(f"torch.export.save: cannot write an input or output that is a "
                         f"{spec.type}; use tuples, lists and dicts")
    return {"type": kind, "context": spec.context,
            "children": [_spec(c) for c in spec.children_specs]}


def _unspec(data: dict) -> TreeSpec:
    if data["type"] == "leaf":
        return LeafSpec()
    return TreeSpec(_CONTAINERS[data["type"]], data["context"],
                    [_unspec(c) for c in data["children"]])
