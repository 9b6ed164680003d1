"""glasstorch.utils.data: datasets, samplers and the DataLoader, as torch.utils.data."""
