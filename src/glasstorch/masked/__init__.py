"""torch.masked: reductions and normalizations over the masked-in elements of a tensor, and
the MaskedTensor prototype."""
from ._ops import (_canonical_dim, _combine_input_and_mask, _input_mask,  # noqa: F401
                   _output_mask, _reduction_identity, _where, amax, amin, argmax, argmin,
                   cumprod, cumsum, log_softmax, logaddexp, logsumexp, mean, median, norm,
                   normalize, prod, softmax, softmin, std, sum, var)
from .maskedtensor import MaskedTensor, as_masked_tensor, is_masked_tensor, masked_tensor

__all__ = ["amax", "amin", "argmax", "argmin", "as_masked_tensor", "cumprod", "cumsum",
           "is_masked_tensor", "log_softmax", "logaddexp", "logsumexp", "masked_tensor",
           "MaskedTensor", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin",
           "std", "sum", "var"]
