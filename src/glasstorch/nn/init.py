"""nn.init: in-place initialisation of parameters, as torch.nn.init."""
