"""glasstorch.nn: neural-network building blocks, as torch.nn."""
from . import attention, functional, init, parallel, utils  # noqa: F401
from . import common_types, grad  # noqa: F401
from .factory import factory_kwargs  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import *  # noqa: F401,F403
from .parallel import DataParallel  # noqa: F401
