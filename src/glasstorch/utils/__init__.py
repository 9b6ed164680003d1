"""glasstorch.utils: data loading, checkpointing."""
from . import data  # noqa: F401
from . import checkpoint  # noqa: F401
