"""Every activation as a module, and Softmax/LogSoftmax/Softmin."""

__all__: list[str] = []
