"""`torch._dynamo.backends`: PyTorch's package of compiler backends."""
