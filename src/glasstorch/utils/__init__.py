"""glasstorch.utils: data loading, checkpointing, dispatch modes (_python_dispatch), flop
counting (flop_counter), nested containers as leaves (_pytree), DLPack exchange (dlpack)."""
from . import data  # noqa: F401
from . import checkpoint  # noqa: F401
from . import _python_dispatch  # noqa: F401
from . import _pytree  # noqa: F401
from . import flop_counter  # noqa: F401
from . import dlpack  # noqa: F401
