"""torch.jit.fork / torch.jit.wait (also torch.fork / torch.wait): start a call and collect
its result later. Run eagerly, the call runs when forked, as PyTorch's eager fork does (an
exception it raises comes out of fork), and the Future it returns is complete."""
from __future__ import annotations

from ..futures import Future

__all__ = ["fork", "wait"]


def fork(func, *args, **kwargs) -> Future:
    """A Future holding `func(*args, **kwargs)`."""
    future = Future()
    future.set_result(func(*args, **kwargs))
    return future


def wait(future: Future):
    """The value of a Future `fork` returned."""
    return future.wait()
