"""torch.utils.data._utils.collate: the collate functions and the per-type map."""
from .._collate import *  # noqa: F401,F403
from .._collate import __all__  # noqa: F401
