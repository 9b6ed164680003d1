"""torch.multiprocessing: Python's multiprocessing, with tensors travelling between processes
through shared memory (the reductions registered by utils/data/_sharing.py on every
multiprocessing pickler), and spawn()/start_processes() that start N copies of a function and
report the first failure with its traceback."""
from multiprocessing import *  # noqa: F401,F403
import multiprocessing  # noqa: F401

from . import shared_storage  # noqa: F401  (Tensor.share_memory_, is_shared)
from .spawn import (ProcessContext, ProcessException, ProcessExitedException,  # noqa: F401
                    ProcessRaisedException, spawn, start_processes)

_SHARING_STRATEGIES = {"file_descriptor", "file_system"}
_sharing_strategy = "file_descriptor"


def get_all_sharing_strategies() -> set:
    """The ways shared tensors can be named between processes (POSIX shared memory serves
    both here)."""
    return set(_SHARING_STRATEGIES)


def get_sharing_strategy() -> str:
    return _sharing_strategy


def set_sharing_strategy(new_strategy: str) -> None:
    global _sharing_strategy
    if new_strategy not in _SHARING_STRATEGIES:
        raise ValueError(f"{new_strategy!r} is not a sharing strategy: "
                         f"{sorted(_SHARING_STRATEGIES)}")
    _sharing_strategy = new_strategy


def init_reductions() -> None:
    """Tensor reductions are registered when glasstorch is imported; kept for PyTorch code."""
