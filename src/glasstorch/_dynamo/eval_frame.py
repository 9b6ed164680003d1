"""`torch._dynamo.eval_frame`: where PyTorch keeps OptimizedModule."""
from ..compiler.eval_frame import OptimizedModule, disable, is_compiling  # noqa: F401
