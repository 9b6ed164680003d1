"""linear and bilinear as in torch.nn.functional (composites in ops/normalization.py)."""
from ...ops.nn.normalization import bilinear, linear

__all__ = ["linear", "bilinear"]
