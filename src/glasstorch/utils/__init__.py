"""glasstorch.utils: data loading, checkpointing, dispatch modes (_python_dispatch)."""
from . import data  # noqa: F401
from . import checkpoint  # noqa: F401
from . import _python_dispatch  # noqa: F401
