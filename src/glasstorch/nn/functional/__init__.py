"""glasstorch.nn.functional: torch.nn.functional's functions, one module per family."""
from .linear import *  # noqa: F401,F403
from .convolution import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .fractional_pooling import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .linear_cross_entropy import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .vision import *  # noqa: F401,F403
from .multi_head_attention import *  # noqa: F401,F403


# The functions that are built-ins in PyTorch: their handlers get the arguments as given.
_BUILTINS = {
    "adaptive_avg_pool1d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "bilinear", "celu_",
    "channel_shuffle", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "cosine_similarity", "elu_", "gelu",
    "hardshrink", "hardtanh_", "leaky_relu_", "linear", "logsigmoid",
    "native_channel_shuffle", "one_hot", "pairwise_distance", "pdist", "pixel_shuffle",
    "pixel_unshuffle", "prelu", "relu_", "rrelu_", "scaled_dot_product_attention", "selu_",
    "softplus", "softshrink", "threshold_"}


def _honour_torch_function() -> None:
    """Every public function here honours __torch_function__ (glasstorch.overrides): the
    ones glasstorch also exports as glasstorch.<name> are replaced by that export, the
    others are wrapped, passing arguments on as PyTorch's function of that name does (as
    given for its built-ins, required ones positionally and the rest by keyword for those
    written in Python). Calls between them inside the package stay direct."""
    import inspect
    from ... import overrides
    from ...ops.registry import functions
    namespace = globals()
    for name in [n for n in namespace if not n.startswith("_")]:
        fn = namespace[name]
        if not inspect.isfunction(fn) or hasattr(fn, "_schema") or hasattr(fn, "__wrapped__"):
            continue
        exported = functions.get(name)
        if exported is not None and getattr(exported, "__wrapped__", None) is fn:
            namespace[name] = exported
        else:
            namespace[name] = overrides.overridable(fn, builtin=name in _BUILTINS)


_honour_torch_function()

from .script_helpers import *  # noqa: E402,F401,F403  (boolean_dispatch, has_torch_function)
from .. import grad  # noqa: E402,F401  (torch.nn.functional.grad is torch.nn.grad)
