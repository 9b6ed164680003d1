"""`torch.export`: a model as a standalone ATen-level graph for deployment.

`export(model, args)` traces `model` on fake tensors into an `ExportedProgram` (parameters
and buffers lifted to graph inputs, PyTorch's form); `save`/`load` write and read it as a
zip archive of glasstorch's own format (see serde.py). `Dim` marks dynamic dimensions,
whose ranges `ExportedProgram.module()` checks (glasstorch has no symbolic shapes: see
dynamic_shapes.py for what that means).
"""
from .dynamic_shapes import Dim, dims
from .exported_program import ExportedProgram
from .graph_signature import (ExportGraphSignature, InputKind, InputSpec, OutputKind,
                              OutputSpec, TensorArgument)
from ._trace import GuardOnDataDependentSymNode, export
from .serde import load, save

__all__ = ["Dim", "ExportGraphSignature", "ExportedProgram", "GuardOnDataDependentSymNode",
           "InputKind", "InputSpec", "OutputKind", "OutputSpec", "TensorArgument", "dims",
           "export", "load", "save"]
