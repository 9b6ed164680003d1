"""DistributedDataParallel: each process runs the model on its share of the batch; the
gradients are averaged across processes during backward, so every replica takes the same
optimizer step.

Parameters are grouped into buckets of about `bucket_cap_mb`, in the reverse of their
registration order (the order backward tends to produce their gradients). A hook after each
parameter's gradient is accumulated counts it ready; when a bucket is complete its gradients
are flattened and its all-reduce starts at once (asynchronously), so communication overlaps the
rest of the backward pass. When the last bucket has started, the hook waits for all of them
and writes the averages back into `.grad`.

After the first backward the buckets are rebuilt in the order the gradients actually became
ready (PyTorch's bucket rebuilding), so each bucket completes as early as the graph allows.
With `gradient_as_bucket_view=True` each bucket owns one flat buffer and the parameters'
`.grad` are views into it: backward accumulates straight into the buffer, which is
all-reduced in place, saving a flatten and a copy back per bucket and the memory of a second
copy of the gradients. With `static_graph=True` the set of unused parameters found in the
first iteration is reused instead of walking the graph each time."""
from __future__ import annotations

import contextlib

from ...autograd.grad_mode import no_grad
from ...core.tensor import Tensor
from ...ops.shape.joining import cat
from ..modules.module import Module


class _Bucket:
    def __init__(self, index: int, params: list):
        self.index, self.params = index, params
        self.ready = 0
        self.buffer = None          # the flat gradients, with gradient_as_bucket_view
        self.offsets, start = [], 0
        for p in params:
            self.offsets.append(start)
            start += p.numel()
        self.numel = start

    def slot(self, i: int):
        """Parameter i's gradient as a view of the bucket's buffer."""
        p = self.params[i]
        return self.buffer[self.offsets[i]:self.offsets[i] + p.numel()].view(p.shape)


class GradBucket:
    """What a communication hook receives: one bucket's gradients, flattened."""

    def __init__(self, index: int, buffer, params: list, is_last: bool):
        self._index, self._buffer, self._params, self._is_last = index, buffer, params, is_last

    def index(self) -> int:
        return self._index

    def buffer(self):
        return self._buffer

    def set_buffer(self, buffer) -> None:
        self._buffer = buffer

    def gradients(self) -> list:
        out, start = [], 0
        for p in self._params:
            out.append(self._buffer[start:start + p.numel()].view(p.shape))
            start += p.numel()
        return out

    def parameters(self) -> list:
        return list(self._params)

    def is_last(self) -> bool:
        return self._is_last


def _dist():
    from glasstorch import distributed
    return distributed


class DistributedDataParallel(Module):
    """torch.nn.parallel.DistributedDataParallel on glasstorch.distributed's process group."""

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool | None = True, init_sync: bool = True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False, **unused):
        super().__init__()
        dist = _dist()
        if not any(p.requires_grad for p in module.parameters()):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        if self.process_group is None:
            raise ValueError("Default process group has not been initialized, please make "
                             "sure to call init_process_group.")
        self.broadcast_buffers = True if broadcast_buffers is None else broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb)
                                    * 1024 * 1024)
        self._params = [p for p in module.parameters() if p.requires_grad]
        if init_sync:
            self._sync_module_states()
        self._set_buckets(self._build_buckets(reversed(self._params)))
        self._ready_order: list | None = []   # the first backward's order, for the rebuild
        self._static_unused: list | None = None
        self._comm_hook, self._comm_state = None, None
        self._pending: list = []
        self._in_backward = False
        self._hooks = [p.register_post_accumulate_grad_hook(self._on_grad_ready)
                       for p in self._params]

    # ---- setting up ------------------------------------------------------------------

    def _sync_module_states(self) -> None:
        """Every rank starts from rank 0's parameters and buffers."""
        dist = _dist()
        with no_grad():
            for t in list(self.module.parameters()) + list(self.module.buffers()):
                dist.broadcast(t, src=dist.get_global_rank(self.process_group, 0),
                               group=self.process_group)

    def _build_buckets(self, params) -> list:
        buckets, current, size = [], [], 0
        for p in params:
            nbytes = p.numel() * p.element_size()
            if current and (size + nbytes > self.bucket_bytes_cap
                            or p.dtype is not current[0].dtype):
                buckets.append(_Bucket(len(buckets), current))
                current, size = [], 0
            current.append(p)
            size += nbytes
        if current:
            buckets.append(_Bucket(len(buckets), current))
        return buckets

    def _set_buckets(self, buckets: list) -> None:
        """Use `buckets`; with gradient_as_bucket_view, existing gradients move into their
        new buffers and become views of them."""
        self._buckets = buckets
        self._bucket_of = {id(p): b for b in buckets for p in b.params}
        if self.gradient_as_bucket_view:
            with no_grad():
                for bucket in buckets:
                    first = bucket.params[0]
                    bucket.buffer = first.new_zeros(bucket.numel)
                    for i, p in enumerate(bucket.params):
                        if p.grad is not None:
                            bucket.slot(i).copy_(p.grad)
                            p.grad = bucket.slot(i)

    def _rebuild_buckets(self) -> None:
        """After the first iteration: buckets in the order gradients became ready on rank 0
        (every rank must bucket alike, or the all-reduces would pair different tensors)."""
        order, self._ready_order = self._ready_order, None
        index = {id(p): i for i, p in enumerate(self._params)}
        positions = [list(dict.fromkeys(index[id(p)] for p in order))]
        dist = _dist()
        if dist.get_world_size(self.process_group) > 1:
            dist.broadcast_object_list(positions, src=dist.get_global_rank(self.process_group, 0),
                                       group=self.process_group)
        first = [self._params[i] for i in positions[0]]
        seen = set(positions[0])
        rest = [p for i, p in reversed(list(enumerate(self._params))) if i not in seen]
        self._set_buckets(self._build_buckets(first + rest))

    def register_comm_hook(self, state, hook) -> None:
        """hook(state, GradBucket) -> torch.futures.Future of the bucket's reduced tensor."""
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        self._comm_state, self._comm_hook = state, hook

    @contextlib.contextmanager
    def no_sync(self):
        """Within it, backward accumulates gradients locally without communicating."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # ---- forward ---------------------------------------------------------------------

    def forward(self, *inputs, **kwargs):
        if self._in_backward:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. You can enable unused parameter detection by passing "
                "the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`.")
        dist = _dist()
        if self.broadcast_buffers and dist.get_world_size(self.process_group) > 1:
            with no_grad():
                for b in self.module.buffers():
                    dist.broadcast(b, src=dist.get_global_rank(self.process_group, 0),
                                   group=self.process_group)
        if self._ready_order and self.require_backward_grad_sync:
            self._rebuild_buckets()
        output = self.module(*inputs, **kwargs)
        for bucket in self._buckets:
            bucket.ready = 0
        if self.require_backward_grad_sync:
            if self.static_graph and self._static_unused is not None:
                for p in self._static_unused:
                    self._count_ready(p)
            elif self.find_unused_parameters or self.static_graph:
                self._mark_unused(output)
        return output

    def _set_static_graph(self) -> None:
        """PyTorch's way to turn static_graph on after construction."""
        self.static_graph = True

    def _mark_unused(self, output) -> None:
        """Parameters the output's graph does not reach will get no gradient: count them
        ready now, so their buckets complete. With static_graph the first answer is kept."""
        reached, stack, seen = set(), [], set()
        for t in _tensors(output):
            if t.grad_fn is not None:
                stack.append(t.grad_fn)
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            variable = getattr(node, "variable", None)
            if variable is not None:
                reached.add(id(variable))
            stack.extend(n for n, _ in node.next_functions)
        self._unused = [p for p in self._params if id(p) not in reached]
        if self.static_graph:
            self._static_unused = self._unused
        for p in self._unused:
            self._count_ready(p)

    # ---- backward --------------------------------------------------------------------

    def _on_grad_ready(self, param) -> None:
        if not self.require_backward_grad_sync:
            return
        self._count_ready(param)

    def _count_ready(self, param) -> None:
        bucket = self._bucket_of[id(param)]
        self._in_backward = True
        if self._ready_order is not None:
            self._ready_order.append(param)
        bucket.ready += 1
        if bucket.ready == len(bucket.params):
            self._launch(bucket)
            if len(self._pending) == len(self._buckets):
                self._finish()

    def _launch(self, bucket) -> None:
        if self.gradient_as_bucket_view:
            flat = self._gather_into_buffer(bucket)
        else:
            grads = [p.grad.reshape(-1) if p.grad is not None else p.new_zeros(p.numel())
                     for p in bucket.params]
            flat = cat(grads).detach()
        grad_bucket = GradBucket(bucket.index, flat, bucket.params,
                                 bucket.index == len(self._buckets) - 1)
        if self._comm_hook is not None:
            future = self._comm_hook(self._comm_state, grad_bucket)
        else:
            from glasstorch.distributed.algorithms.ddp_comm_hooks import default_hooks
            future = default_hooks.allreduce_hook(self.process_group, grad_bucket)
        self._pending.append((bucket, future))

    def _gather_into_buffer(self, bucket):
        """The bucket's buffer holding every gradient: a gradient autograd made anew (the
        first backward, or after zero_grad(set_to_none=True)) is moved in and made a view."""
        with no_grad():
            for i, p in enumerate(bucket.params):
                slot = bucket.slot(i)
                if p.grad is None:
                    slot.zero_()
                elif not _is_view_of(p.grad, slot):
                    slot.copy_(p.grad)
                    p.grad = slot
        return bucket.buffer

    def _finish(self) -> None:
        """Wait for every bucket's reduction and write the averages into .grad."""
        pending, self._pending = self._pending, []
        with no_grad():
            for bucket, future in pending:
                reduced = future.wait()
                if self.gradient_as_bucket_view and reduced is not bucket.buffer:
                    bucket.buffer.copy_(reduced)
                for i, p in enumerate(bucket.params):
                    start = bucket.offsets[i]
                    piece = reduced[start:start + p.numel()].view(p.shape)
                    if self.gradient_as_bucket_view:
                        if p.grad is None and bool((piece != 0).any()):
                            p.grad = bucket.slot(i)
                    elif p.grad is None:
                        if bool((piece != 0).any()):     # used on another rank
                            p.grad = piece.clone()
                    else:
                        p.grad.copy_(piece)
        self._in_backward = False


def _is_view_of(grad, slot) -> bool:
    return (grad.untyped_storage().data_ptr() == slot.untyped_storage().data_ptr()
            and grad.storage_offset() == slot.storage_offset())


def _tensors(output):
    if isinstance(output, Tensor):
        yield output
    elif isinstance(output, dict):
        for v in output.values():
            yield from _tensors(v)
    elif isinstance(output, (list, tuple)):
        for v in output:
            yield from _tensors(v)
