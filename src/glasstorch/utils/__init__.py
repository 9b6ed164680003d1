"""glasstorch.utils: data loading, checkpointing."""
from . import data  # noqa: F401
