"""torch.func: composable function transforms (functorch).

`grad`, `vjp`, `jacrev` differentiate functions in reverse mode, `jvp`, `jacfwd`, `linearize`
in forward mode (autograd.forward_ad), `hessian` in both; `vmap` maps a function over a
batch dimension by running each op once on the whole batch (BatchedTensor and the
FuncTorchBatched dispatch key); `functional_call` and `stack_module_state` turn modules into
functions of their parameters, so the transforms compose with them; `functionalize` removes
a function's mutations. (`rearrange`, einops' in PyTorch, is not provided.)
"""
from .eager_transforms import (grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize,
                               vjp)
from .functional_call import functional_call, stack_module_state
from .functionalize import functionalize
from .rearrange import rearrange
from .utilities import debug_unwrap, replace_all_batch_norm_modules_
from .vmap import vmap

__all__ = ["grad", "grad_and_value", "vjp", "jacrev", "hessian", "functional_call",
           "stack_module_state", "vmap", "jvp", "jacfwd", "linearize", "functionalize",
           "debug_unwrap", "replace_all_batch_norm_modules_", "rearrange"]
