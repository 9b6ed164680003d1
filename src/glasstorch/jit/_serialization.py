"""`torch.jit.save` / `load`: traced modules and functions as a zip archive.

The archive holds `version` (`glasstorch-jit 1`), `program.json` (the graph in
torch.export's node format, see export/serde.py; its input and output structures; the
module's class name and training flag) and `weights.pt` (the tensors the graph reads with
get_attr, by path, written with torch.save). A scripted module or function runs its Python
source, which glasstorch does not write into archives: trace it to save it.
"""
from __future__ import annotations

import io
import json
import os
import zipfile

from ..export.serde import _spec, _unspec, graph_from_json, node_to_json
from ..fx.graph_module import GraphModule
from ..serialization import load as load_tensors, save as save_tensors
from ._script import ScriptFunction, ScriptModule
from ._trace import TopLevelTracedModule, _traced_call

FORMAT = "glasstorch-jit 1"


def save(m, f, _extra_files=None) -> None:
    """Write a traced module or function to a path or a writable binary file."""
    if isinstance(m, TopLevelTracedModule):
        graph_module, (in_spec, out_spec) = m, m.__dict__["_specs"]
        name, training = m.__dict__.get("original_name", "Module"), m.training
    elif isinstance(m, ScriptFunction) and m._graph_module is not None:
        graph_module, name, training = m._graph_module, m.name, False
        in_spec, out_spec = m._call.specs
    elif isinstance(m, (ScriptModule, ScriptFunction)):
        raise NotImplementedError(
            "torch.jit.save: a scripted module or function runs its Python source, which "
            "glasstorch does not write into archives; save a torch.jit.trace of it, or use "
            "torch.export")
    else:
        raise TypeError(f"torch.jit.save expects a ScriptModule or ScriptFunction, got "
                        f"{type(m).__name__}")
    tensors = {n.target: _fetch(graph_module, n.target) for n in graph_module.graph.nodes
               if n.op == "get_attr"}
    weights = io.BytesIO()
    save_tensors({k: v.detach() for k, v in tensors.items()}, weights)
    program = {"kind": "module" if isinstance(m, ScriptModule) else "function",
               "name": name, "training": training,
               "parameters": [k for k, v in tensors.items() if _is_parameter(graph_module, k)],
               "nodes": [node_to_json(n) for n in graph_module.graph.nodes],
               "in_spec": _spec(in_spec), "out_spec": _spec(out_spec)}
    archive = zipfile.ZipFile(os.fspath(f) if isinstance(f, (str, os.PathLike)) else f, "w")
    with archive:
        archive.writestr("version", FORMAT)
        archive.writestr("program.json", json.dumps(program))
        archive.writestr("weights.pt", weights.getvalue())
        for key, data in (_extra_files or {}).items():
            archive.writestr(f"extra/{key}", data)


def _fetch(module, path: str):
    for name in path.split("."):
        module = getattr(module, name)
    return module


def _is_parameter(module, path: str) -> bool:
    owner, _, field = path.rpartition(".")
    try:
        holder = module.get_submodule(owner) if owner else module
    except AttributeError:
        return False
    return field in holder._parameters


def load(f, map_location=None, _extra_files=None):
    """Read a module or function written by `save`."""
    archive = zipfile.ZipFile(os.fspath(f) if isinstance(f, (str, os.PathLike)) else f, "r")
    with archive:
        names = set(archive.namelist())
        if "version" not in names or archive.read("version").decode() != FORMAT:
            raise RuntimeError("torch.jit.load: not an archive written by glasstorch's "
                               f"torch.jit.save (expected a 'version' of {FORMAT!r})")
        program = json.loads(archive.read("program.json"))
        weights = load_tensors(io.BytesIO(archive.read("weights.pt")),
                               map_location=map_location, weights_only=True)
        for key in _extra_files or {}:
            if f"extra/{key}" in names:
                _extra_files[key] = archive.read(f"extra/{key}")
    from ..nn.parameter import Parameter
    root = {k: Parameter(v) if k in program["parameters"] else v for k, v in weights.items()}
    graph = graph_from_json(program["nodes"])
    in_spec, out_spec = _unspec(program["in_spec"]), _unspec(program["out_spec"])
    if program["kind"] == "function":
        gm = GraphModule(root, graph, "GraphModule")
        return ScriptFunction(_traced_call(gm, in_spec, out_spec), program["name"], gm)
    module = TopLevelTracedModule(root, graph, program["name"])
    module.__dict__["_specs"] = (in_spec, out_spec)
    module.__dict__["original_name"] = program["name"]
    module.train(program["training"])
    return module
