"""glasstorch.fft: the functions of torch.fft."""
