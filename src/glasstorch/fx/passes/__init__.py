"""`torch.fx.passes`: analyses and transformations over GraphModules."""
from . import shape_prop  # noqa: F401
