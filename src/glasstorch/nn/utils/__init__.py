"""nn.utils: gradient clipping, parameter vectors, sequence packing, parametrizations."""
