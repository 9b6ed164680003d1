"""nn.Module: parameters, buffers and submodules registered by attribute, hooks, state_dict."""

__all__: list[str] = []
