"""Hooks on the tensors autograd saves for backward: torch.autograd.graph.saved_tensors_hooks.

Inside `saved_tensors_hooks(pack, unpack)` every tensor an op saves for its backward is
handed to `pack`, and the node keeps whatever `pack` returned; the backward pass calls
`unpack` on it to get a tensor back. That is how activations are moved off the device
(`save_on_cpu`), compressed, or dropped and recomputed; FSDP uses it to drop the gathered
parameters after forward and gather them again in backward. The version check still guards
the original tensor: changing it in place after it was saved fails at backward, as without
hooks.
"""
from __future__ import annotations

import threading


class _SavedTensorHooks(threading.local):
    """The (pack, unpack) pairs of the contexts open on this thread, innermost last, and the
    message of an open `disable_saved_tensors_hooks`."""

    def __init__(self):
        self.stack: list = []
        self.disabled: str | None = None


saved_tensor_hooks = _SavedTensorHooks()
hooks_open = [0]      # contexts open on any thread: saving checks this before the thread-local


class saved_tensors_hooks:
    """Context manager: pack_hook(tensor) -> anything, unpack_hook(anything) -> Tensor."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        if saved_tensor_hooks.disabled is not None:
            raise RuntimeError(saved_tensor_hooks.disabled)
        saved_tensor_hooks.stack.append((self.pack_hook, self.unpack_hook))
        hooks_open[0] += 1
        return self

    def __exit__(self, *exc):
        saved_tensor_hooks.stack.pop()
        hooks_open[0] -= 1


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors wait for backward in host memory (pinned if asked), and go back to
    their device when backward needs them."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack(tensor):
            if tensor.device.type == "cpu":
                return tensor.device, tensor
            host = tensor.to("cpu")
            return tensor.device, host.pin_memory() if pin_memory else host

        def unpack(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Within it, entering saved_tensors_hooks raises RuntimeError(error_message): for code
    whose correctness depends on saved tensors being the tensors themselves."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        self._previous = saved_tensor_hooks.disabled
        saved_tensor_hooks.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        saved_tensor_hooks.disabled = self._previous
