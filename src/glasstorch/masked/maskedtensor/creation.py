"""The two ways to make a MaskedTensor, as torch.tensor and torch.as_tensor."""
from .core import MaskedTensor

__all__ = ["as_masked_tensor", "masked_tensor"]


def masked_tensor(data, mask, requires_grad=False):
    """A new MaskedTensor (a leaf) holding copies of data and mask."""
    return MaskedTensor(data, mask, requires_grad)


def as_masked_tensor(data, mask):
    """A MaskedTensor that keeps data's autograd history: gradients flow back to data."""
    return MaskedTensor._from_values(data, mask)
