"""BatchNorm1d/2d/3d over torch's _NormBase layout: weight/bias parameters (affine), then
running_mean/running_var/num_batches_tracked buffers (track_running_stats), so their
state_dicts and reprs match torch's; the arithmetic is nn.functional's."""
from __future__ import annotations

from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...core import dtype as dt
from ...ops.creation.factories import empty, full, ones, tensor, zeros
from ...ops.shape.joining import cat
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "SyncBatchNorm"]


class _NormBase(Module):
    """Parameters and running statistics common to batch and instance norm."""

    _version = 2   # version 2 added num_batches_tracked
    _dims = ()     # the accepted input ranks

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(empty(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device,
                                                       dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device,
                                                     dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=dt.int64,
                                                               device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input) -> None:
        if input.dim() not in self._dims:
            expected = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {expected} input (got {input.dim()}D input)")

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"   # checkpoints older than version 2
            if key not in state_dict:
                state_dict[key] = (self.num_batches_tracked
                                   if self.num_batches_tracked is not None
                                   else tensor(0, dtype=dt.int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    """Normalizes each channel over the batch; training updates the running statistics
    (exponential average with momentum, cumulative average when momentum is None)."""

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        use_batch_stats = self.training or (self.running_mean is None
                                            and self.running_var is None)
        pass_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if pass_stats else None,
                            self.running_var if pass_stats else None, self.weight,
                            self.bias, use_batch_stats, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) inputs."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) inputs."""

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W) inputs."""

    _dims = (5,)


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """A norm whose num_features is its first input's dim 1; weight, bias and running
    statistics are placeholders until then."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(0, eps, momentum, False, False, device=device, dtype=dtype,
                         bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=dt.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            with no_grad():
                for name in ("weight", "bias", "running_mean", "running_var"):
                    value = getattr(self, name)
                    if value is not None:
                        value.materialize((self.num_features,))
                self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """BatchNorm1d whose num_features comes from its first input; becomes a BatchNorm1d."""

    cls_to_become = BatchNorm1d
    _dims = BatchNorm1d._dims


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """BatchNorm2d whose num_features comes from its first input; becomes a BatchNorm2d."""

    cls_to_become = BatchNorm2d
    _dims = BatchNorm2d._dims


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """BatchNorm3d whose num_features comes from its first input; becomes a BatchNorm3d."""

    cls_to_become = BatchNorm3d
    _dims = BatchNorm3d._dims


class _SyncBatchNormFunction(Function):
    """Batch norm whose statistics cover every rank's batch: forward all-reduces each
    channel's count, sum and sum of squares; backward all-reduces the two sums the input
    gradient needs. The weight and bias gradients stay local (DDP averages them)."""

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, group):
        from ... import distributed as dist
        channels = input.shape[1]
        dims = [d for d in range(input.dim()) if d != 1]
        local = cat([input.sum(dims), (input * input).sum(dims),
                     full((1,), input.numel() // channels, dtype=input.dtype)])
        dist.all_reduce(local, group=group)
        total = local[2 * channels]
        mean = local[:channels] / total
        var = (local[channels:2 * channels] / total - mean * mean).clamp(min=0)
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean * momentum)
        if running_var is not None:
            unbiased = var * total / (total - 1) if float(total) > 1 else var
            running_var.mul_(1 - momentum).add_(unbiased * momentum)
        shape = [1, channels] + [1] * (input.dim() - 2)
        invstd = (var + eps).rsqrt()
        xhat = (input - mean.reshape(shape)) * invstd.reshape(shape)
        ctx.save_for_backward(xhat, weight, invstd)
        ctx.group, ctx.total, ctx.shape, ctx.dims = group, total, shape, dims
        out = xhat
        if weight is not None:
            out = out * weight.reshape(shape)
        if bias is not None:
            out = out + bias.reshape(shape)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        from ... import distributed as dist
        xhat, weight, invstd = ctx.saved_tensors
        shape, dims = ctx.shape, ctx.dims
        sum_dy = grad_output.sum(dims)
        sum_dy_xhat = (grad_output * xhat).sum(dims)
        grad_weight = sum_dy_xhat if weight is not None and ctx.needs_input_grad[1] else None
        grad_bias = sum_dy.clone() if ctx.needs_input_grad[2] else None
        sums = cat([sum_dy, sum_dy_xhat])
        dist.all_reduce(sums, group=ctx.group)
        channels = sum_dy.shape[0]
        mean_dy = (sums[:channels] / ctx.total).reshape(shape)
        mean_dy_xhat = (sums[channels:] / ctx.total).reshape(shape)
        scale = invstd if weight is None else invstd * weight
        grad_input = (grad_output - mean_dy - xhat * mean_dy_xhat) * scale.reshape(shape)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose training statistics are those of the whole batch across the ranks
    of `process_group` (the default group when None). Without an initialized process
    group, in a world of one, or in eval mode it is BatchNorm. glasstorch's collectives
    run on the CPU, so CPU inputs synchronize too (PyTorch's need a GPU)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group=None, device=None, dtype=None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         device=device, dtype=dtype)
        self.process_group = process_group

    def _check_input_dim(self, input) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input) -> None:
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def _world(self):
        """The group to synchronize over, or None when there is nothing to synchronize."""
        from ... import distributed as dist
        if not (dist.is_available() and dist.is_initialized()):
            return None
        group = self.process_group or dist.group.WORLD
        return group if dist.get_world_size(group) > 1 else None

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        group = self._world() if self.training else None
        if group is None:
            return super().forward(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        keep = self.track_running_stats
        return _SyncBatchNormFunction.apply(
            input, self.weight, self.bias, self.running_mean if keep else None,
            self.running_var if keep else None, self.eps, factor, group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm*d inside it replaced by a SyncBatchNorm holding the
        same parameters and running statistics (the module itself if it is one)."""
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group)
            if module.affine:
                with no_grad():
                    converted.weight = module.weight
                    converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
            if hasattr(module, "qconfig"):
                converted.qconfig = module.qconfig
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted
