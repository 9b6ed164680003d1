"""glasstorch.linalg: the functions of torch.linalg."""
