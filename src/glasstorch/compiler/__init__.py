"""The compiler: torch.compile, graph capture and its backends."""
