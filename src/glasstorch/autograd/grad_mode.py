"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode (all thread-local).

Each is a context manager and a decorator, as in PyTorch. Grad mode is read by the
Autograd kernel; it does not change the dispatch key sets (PyTorch's no_grad doesn't either).
"""
from __future__ import annotations

import functools
import threading
import inspect

from ..core.grad_state import count_inference_block, state


def is_grad_enabled() -> bool:
    return state.enabled


def is_inference_mode_enabled() -> bool:
    return state.inference


class _DecoratorContextManager:
    """A context manager that can also decorate functions (and generator functions)."""

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def generator(*args, **kwargs):
                gen = fn(*args, **kwargs)
                with self.clone():
                    value = next(gen)
                while True:
                    try:
                        with self.clone():
                            sent = yield value
                            value = gen.send(sent)
                    except StopIteration as stop:
                        return stop.value
            return generator

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Ops inside record no graph: outputs have requires_grad=False and no grad_fn."""

    def __enter__(self):
        self._prev = state.enabled
        state.enabled = False

    def __exit__(self, *exc):
        state.enabled = self._prev


class enable_grad(_DecoratorContextManager):
    """Turn recording back on inside no_grad."""

    def __enter__(self):
        self._prev = state.enabled
        state.enabled = True

    def __exit__(self, *exc):
        state.enabled = self._prev


class set_grad_enabled(_DecoratorContextManager):
    """set_grad_enabled(False) switches recording off now; as a context manager, for a block."""

    def __init__(self, mode: bool):
        if mode.__class__ is not bool:            # as PyTorch: not even 0/1 or numpy.bool
            kind = type(mode)
            name = kind.__name__ if kind.__module__ == "builtins" else \
                f"{kind.__module__.split('.')[0]}.{kind.__name__}"
            raise TypeError("set_grad_enabled(): argument 'enabled' (position 1) must be "
                            f"bool, not {name}")
        self._prev = state.enabled
        self.mode = mode
        state.enabled = mode

    def __enter__(self):
        state.enabled = self.mode

    def __exit__(self, *exc):
        state.enabled = self._prev

    def clone(self):
        return set_grad_enabled(self.mode)


class inference_mode(_DecoratorContextManager):
    """Stronger than no_grad: tensors made inside are inference tensors (no version counter,
    never usable in recorded computations)."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def __enter__(self):
        from ..dispatch.keys import AUTOGRAD_MASK, DispatchKey, exclude_keys
        self._prev = (state.enabled, state.inference)
        if self.mode:
            state.enabled, state.inference = False, True
            self._keys = exclude_keys(AUTOGRAD_MASK | (1 << DispatchKey.ADInplaceOrView))
            self._keys.__enter__()
            count_inference_block(1)
        else:
            self._keys = None
            state.inference = False

    def __exit__(self, *exc):
        if self._keys is not None:
            self._keys.__exit__(*exc)
        state.enabled, state.inference = self._prev
        if self.mode:
            count_inference_block(-1)

    def clone(self):
        return inference_mode(self.mode)


class _EngineFlags(threading.local):
    def __init__(self):
        self.multithreading = True
        self.grad_layout_enforced = True


engine_flags = _EngineFlags()


class set_multithreading_enabled(_DecoratorContextManager):
    """Whether backward may run its device work on worker threads (on, by default).
    glasstorch's engine always runs backward on the calling thread, so either setting gives
    the same results; the setting is kept for code that switches and reads it."""

    def __init__(self, mode: bool):
        self._prev = engine_flags.multithreading
        self.mode = bool(mode)
        engine_flags.multithreading = self.mode

    def __enter__(self):
        engine_flags.multithreading = self.mode

    def __exit__(self, *exc):
        engine_flags.multithreading = self._prev

    def clone(self):
        return set_multithreading_enabled(self.mode)


class enforce_grad_layout_policy(_DecoratorContextManager):
    """Whether accumulated .grad tensors must take their parameter's strides (on, by
    default). glasstorch's engine always gives a new .grad its parameter's layout, which
    the relaxed policy also allows; the setting is kept and read back."""

    def __init__(self, enable: bool = True):
        self._prev = engine_flags.grad_layout_enforced
        self.mode = bool(enable)
        engine_flags.grad_layout_enforced = self.mode

    def __enter__(self):
        engine_flags.grad_layout_enforced = self.mode

    def __exit__(self, *exc):
        engine_flags.grad_layout_enforced = self._prev

    def clone(self):
        return enforce_grad_layout_policy(self.mode)
