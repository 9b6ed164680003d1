"""`torch._subclasses`: tensor subclasses used by the graph tools (FakeTensor)."""
from .fake_tensor import (DynamicOutputShapeException, FakeTensor, FakeTensorMode,  # noqa: F401
                          UnsupportedFakeTensorException)

__all__ = ["FakeTensor", "FakeTensorMode", "UnsupportedFakeTensorException",
           "DynamicOutputShapeException"]
