"""torch._native_batch_norm_legit: native_batch_norm in the form functionalization and export
use, whose two overloads say whether running statistics exist (with them: input, weight,
bias, running_mean, running_var, training, momentum, eps; without: input, weight, bias,
training, momentum, eps). Same outputs: (output, save_mean, save_rstd)."""
from __future__ import annotations

from ..registry import composite
from .normalization import native_batch_norm


@composite()
def _native_batch_norm_legit(input, weight, bias, *args):
    """(output, save_mean, save_rstd), updating the running statistics when given."""
    if len(args) == 3:                         # no running statistics
        training, momentum, eps = args
        running_mean = running_var = None
    elif len(args) == 5:
        running_mean, running_var, training, momentum, eps = args
    else:
        raise TypeError(f"_native_batch_norm_legit() takes 6 or 8 arguments, but got "
                        f"{3 + len(args)}")
    return native_batch_norm(input, weight, bias, running_mean, running_var, training,
                             momentum, eps)
