"""LazyModuleMixin: modules whose parameter shapes come from their first input.

A lazy module (nn.LazyLinear, nn.LazyConv2d, ...) holds `UninitializedParameter`s until its
first forward: a forward pre-hook calls `initialize_parameters(*inputs)`, which materializes
them with the shapes the input implies and resets them as the eager class would; the module
then becomes `cls_to_become` (LazyLinear becomes Linear) and the hooks go away. Loading a
state_dict into a lazy module materializes its placeholders with the saved shapes instead.

    >>> import glasstorch as torch
    >>> layer = torch.nn.LazyLinear(4)
    >>> _ = layer(torch.ones(2, 3))
    >>> type(layer).__name__, tuple(layer.weight.shape)
    ('Linear', (4, 3))
"""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ..parameter import is_lazy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mix in before a Module class; subclasses define `initialize_parameters(*inputs)`."""

    cls_to_become = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        # a placeholder is saved as itself: detaching it would use it
        for name, param in self._parameters.items():
            if param is not None:
                keep = keep_vars or is_lazy(param)
                destination[prefix + name] = param if keep else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                keep = keep_vars or is_lazy(buf)
                destination[prefix + name] = buf if keep else buf.detach()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs) -> None:
        """Give each placeholder the shape of the tensor the state_dict has for it."""
        for name, value in (*self._parameters.items(), *self._buffers.items()):
            key = prefix + name
            if key in state_dict and value is not None and is_lazy(value):
                saved = state_dict[key]
                if not is_lazy(saved):
                    with no_grad():
                        value.materialize(saved.shape)

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Materialize the placeholders from the first input's shape (each subclass's)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer is still a placeholder."""
        return any(v is not None and is_lazy(v)
                   for v in (*self._parameters.values(), *self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        """The forward pre-hook: initialize from the first call's inputs, then stop being lazy."""
        self.initialize_parameters(*args, **(kwargs or {}))
        if self.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        self._initialize_hook.remove()
        self._load_hook.remove()
        delattr(self, "_initialize_hook")
        delattr(self, "_load_hook")
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DataParallel`. Run a dummy forward pass to correctly initialize "
                           "the modules")
