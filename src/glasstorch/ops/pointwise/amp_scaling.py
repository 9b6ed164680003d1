"""GradScaler's ATen ops: `torch._amp_foreach_non_finite_check_and_unscale_` (unscale a list
of gradients, noting an inf or NaN) and `torch._amp_update_scale_` (back off or grow the
scale), for code that drives the loss scaling itself (PyTorch's GradScaler calls them;
glasstorch's `amp.GradScaler` does the same arithmetic in its own methods)."""
from __future__ import annotations

from ...backends.cpu.amp_scaling import (check_unscale, check_update,
                                         non_finite_check_and_unscale, update_scale)
from ..derivative import not_differentiable
from ..registry import kernel_op

unscale = kernel_op("_amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, "
                    "Tensor(b!) found_inf, Tensor inv_scale) -> ()", method=False,
                    mutates=(0, 1))
scale_update = kernel_op("_amp_update_scale_(Tensor(a!) self, Tensor(b!) growth_tracker, "
                         "Tensor found_inf, float scale_growth_factor, "
                         "float scale_backoff_factor, int growth_interval) -> Tensor(a!)",
                         method=False, mutates=(0, 1))
for _decl, _kernel in ((unscale, non_finite_check_and_unscale), (scale_update, update_scale)):
    _decl.on_cuda = "shared"
    for _backend in ("CPU", "CUDA"):
        _decl.impl(_backend)(_kernel)
unscale.impl("Meta")(check_unscale)


@scale_update.impl("Meta")
def _update_scale_meta(self, growth_tracker, found_inf, *factors):
    check_update(self, growth_tracker, found_inf)
    return self


not_differentiable(unscale, scale_update)       # as PyTorch: no gradient flows through them
