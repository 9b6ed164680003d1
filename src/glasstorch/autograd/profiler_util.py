"""torch.autograd.profiler_util: the profiler's event classes, where PyTorch keeps them."""
from ..profiler.events import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401
from ..profiler.events import _format_memory, _format_time  # noqa: F401
