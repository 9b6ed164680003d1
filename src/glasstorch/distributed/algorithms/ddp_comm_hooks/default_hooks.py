"""The hooks PyTorch ships for DistributedDataParallel.register_comm_hook: plain averaging,
and averaging in float16 or bfloat16 to halve the bytes sent."""
from __future__ import annotations

import glasstorch
import glasstorch.distributed as dist

__all__ = ["allreduce_hook", "bf16_compress_hook", "bf16_compress_wrapper",
           "fp16_compress_hook", "fp16_compress_wrapper"]


def _group(process_group):
    return process_group if process_group is not None else dist.group.WORLD


def _average(process_group, tensor):
    """A future of `tensor` divided by the group size and all-reduced."""
    group = _group(process_group)
    tensor.div_(dist.get_world_size(group))
    work = dist.all_reduce(tensor, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """The default: average the bucket's gradients over the ranks."""
    return _average(process_group, bucket.buffer())


def _compress_hook(dtype):
    def hook(process_group, bucket):
        buffer = bucket.buffer()
        compressed = buffer.to(dtype)
        fut = _average(process_group, compressed)

        def decompress(fut):
            buffer.copy_(fut.value())
            return buffer
        return fut.then(decompress)
    hook.__name__ = f"{dtype}_compress_hook"
    return hook


fp16_compress_hook = _compress_hook(glasstorch.float16)
fp16_compress_hook.__doc__ = "Average the bucket in float16 (half the bytes), then cast back."
bf16_compress_hook = _compress_hook(glasstorch.bfloat16)
bf16_compress_hook.__doc__ = "Average the bucket in bfloat16 (half the bytes), then cast back."


def _compress_wrapper(dtype):
    def wrapper(hook):
        def wrapped(hook_state, bucket):
            buffer = bucket.buffer()
            bucket.set_buffer(buffer.to(dtype))
            fut = hook(hook_state, bucket)

            def decompress(fut):
                buffer.copy_(fut.value())
                return buffer
            return fut.then(decompress)
        return wrapped
    return wrapper


fp16_compress_wrapper = _compress_wrapper(glasstorch.float16)
bf16_compress_wrapper = _compress_wrapper(glasstorch.bfloat16)
