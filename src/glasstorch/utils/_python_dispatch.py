"""`torch.utils._python_dispatch`: dispatch modes (glasstorch/dispatch/modes.py)."""
from ..dispatch.modes import (TorchDispatchMode, _disable_current_modes,  # noqa: F401
                              _get_current_dispatch_mode, _get_current_dispatch_mode_stack,
                              _len_torch_dispatch_stack, _pop_mode, _pop_mode_temporarily,
                              _push_mode)
