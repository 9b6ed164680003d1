"""`torch.onnx`: models written as ONNX, from the exported ATen graph (see _export.py).

Needs the `onnx` package (and `onnxruntime` to run the result): the `[export]` extra.
"""
from ._aten import OnnxExporterError
from ._export import ONNXProgram, export, is_in_onnx_export

__all__ = ["ONNXProgram", "OnnxExporterError", "export", "is_in_onnx_export"]
