"""torch.utils.data._utils.worker: worker information."""
from .._worker import WorkerInfo, get_worker_info  # noqa: F401
