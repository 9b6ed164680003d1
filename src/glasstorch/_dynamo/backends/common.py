"""`torch._dynamo.backends.common`: `aot_autograd`, a backend that compiles the backward."""
from ...compiler.backends import aot_autograd  # noqa: F401
