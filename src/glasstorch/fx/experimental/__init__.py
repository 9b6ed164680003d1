"""`torch.fx.experimental`: tracing below the Python level."""
