"""BatchNorm1d/2d/3d over torch's _NormBase layout: weight/bias parameters (affine), then
running_mean/running_var/num_batches_tracked buffers (track_running_stats), so their
state_dicts and reprs match torch's; the arithmetic is nn.functional's."""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...core import dtype as dt
from ...ops.creation.factories import empty, ones, tensor, zeros
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d"]


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
