"""glasstorch.special: the special functions of torch.special."""
