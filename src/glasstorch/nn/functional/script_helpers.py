"""Helpers torch.nn.functional exposes for code written in its style: the
__torch_function__ checks (`has_torch_function*`, `handle_torch_function`),
`boolean_dispatch` (one public function over two implementations, chosen by a bool argument
such as max_pool's return_indices), `assert_int_or_pair`, and TorchScript's
`BroadcastingList` annotations (an int or a list of N ints)."""
from __future__ import annotations

from ...core.tensor import Tensor  # noqa: F401  (torch.nn.functional.Tensor)
from ...overrides import (handle_torch_function, has_torch_function,  # noqa: F401
                          has_torch_function_unary, has_torch_function_variadic)

__all__ = ["boolean_dispatch", "assert_int_or_pair", "BroadcastingList1", "BroadcastingList2",
           "BroadcastingList3", "has_torch_function", "has_torch_function_unary",
           "has_torch_function_variadic", "handle_torch_function", "Tensor"]


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name,
                     func_name):
    """A function that calls `if_true` or `if_false` with its arguments, by the bool
    argument `arg_name` (keyword, or positional at `arg_index`; `default` when absent)."""
    def fn(*args, **kwargs):
        if arg_name in kwargs:
            flag = kwargs[arg_name]
        elif arg_index < len(args):
            flag = args[arg_index]
        else:
            flag = default
        return (if_true if flag else if_false)(*args, **kwargs)

    fn.__doc__ = if_true.__doc__ or if_false.__doc__
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = fn.__qualname__ = func_name
    return fn


def assert_int_or_pair(arg, arg_name: str, message: str) -> None:
    """AssertionError(message.format(arg_name)) unless `arg` is an int or has 2 items."""
    assert isinstance(arg, int) or len(arg) == 2, message.format(arg_name)


class _BroadcastingList:
    """`BroadcastingList2[int]`: TorchScript's "an int, or a list of 2 ints" annotation;
    in Python it is just the annotation `int | list[int]`."""

    def __init__(self, length: int):
        self.length = length

    def __getitem__(self, types):
        return types | list[types] if isinstance(types, type) else None

    def __repr__(self):
        return f"BroadcastingList{self.length}"


BroadcastingList1, BroadcastingList2, BroadcastingList3 = (_BroadcastingList(n)
                                                          for n in (1, 2, 3))
