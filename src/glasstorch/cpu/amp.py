"""torch.cpu.amp's spellings, kept for old code: prefer glasstorch.amp."""
from ..amp.legacy import device_autocast, device_grad_scaler

autocast = device_autocast("cpu")
GradScaler = device_grad_scaler("cpu")
