"""DDP communication hooks: what DistributedDataParallel does with each bucket of gradients."""
from . import default_hooks  # noqa: F401
