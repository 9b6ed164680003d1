"""glasstorch.save / glasstorch.load, safetensors, and reading PyTorch checkpoints."""

__all__: list[str] = []
