"""`torch._C`: the few names of PyTorch's C extension that Python code reaches for."""
from __future__ import annotations

from .overrides import (DisableTorchFunction, DisableTorchFunctionSubclass,  # noqa: F401
                        _disabled_torch_dispatch_impl, _disabled_torch_function_impl,
                        _is_torch_function_all_disabled, _is_torch_function_enabled,
                        _is_torch_function_mode_enabled, _len_torch_function_stack,
                        has_torch_function as _has_torch_function,
                        has_torch_function_unary as _has_torch_function_unary,
                        has_torch_function_variadic as _has_torch_function_variadic)

__all__ = ["DisableTorchFunction", "DisableTorchFunctionSubclass",
           "_disabled_torch_dispatch_impl", "_disabled_torch_function_impl",
           "_has_torch_function", "_has_torch_function_unary", "_has_torch_function_variadic",
           "_is_torch_function_all_disabled", "_is_torch_function_enabled",
           "_is_torch_function_mode_enabled", "_len_torch_function_stack"]
