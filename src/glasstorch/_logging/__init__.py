"""`torch._logging`: turn the compiler's log artifacts on from Python."""
from ..compiler.logs import set_logs  # noqa: F401
