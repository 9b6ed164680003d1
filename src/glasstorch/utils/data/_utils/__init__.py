"""torch.utils.data._utils's import paths (`_utils.collate.default_collate_fn_map`, which
torch's docs use to extend default_collate, and `_utils.worker.get_worker_info`)."""
from . import collate, worker  # noqa: F401
