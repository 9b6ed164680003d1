"""torch.cuda.amp's spellings, kept for old code: prefer glasstorch.amp."""
from ..amp.legacy import device_autocast, device_grad_scaler

autocast = device_autocast("cuda")
GradScaler = device_grad_scaler("cuda")
