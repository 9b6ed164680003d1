"""Which submodules FullyShardedDataParallel wraps in units of their own (auto_wrap_policy).

A policy is called as PyTorch calls it, `policy(module, recurse, nonwrapped_numel)`: with
recurse=True it says whether to look inside `module`, with recurse=False whether to wrap it.
Each unit gathers its parameters only while it runs, so smaller units mean a lower peak."""
from __future__ import annotations


def size_based_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int,
                                min_num_params: int = int(1e8), force_leaf_modules=None,
                                exclude_wrap_modules=None) -> bool:
    """Wrap a module once the parameters not yet in a unit reach min_num_params."""
    if recurse:
        return not isinstance(module, tuple(force_leaf_modules or ()))
    if isinstance(module, tuple(exclude_wrap_modules or ())):
        return False
    return nonwrapped_numel >= min_num_params


def transformer_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int,
                                 transformer_layer_cls=()) -> bool:
    """Wrap every instance of the given layer classes (a transformer's blocks)."""
    return True if recurse else isinstance(module, tuple(transformer_layer_cls))


class ModuleWrapPolicy:
    """Wrap every instance of the given module classes."""

    def __init__(self, module_classes):
        self._module_classes = tuple(module_classes)

    def __call__(self, module, recurse: bool, nonwrapped_numel: int) -> bool:
        return True if recurse else isinstance(module, self._module_classes)
