"""glasstorch.amp: mixed precision (torch.amp): autocast and GradScaler."""
from .autocast_mode import (autocast, custom_bwd, custom_fwd,  # noqa: F401
                            is_autocast_available)
from .grad_scaler import GradScaler  # noqa: F401
