import tempfile
from pathlib import Path

import pytest


@pytest.fixture(autouse=True, scope="session")
def kernel_cache():
    """Kernels built by these tests go to a cache of their own under the system's temporary
    directory (not the user's), kept between runs: a rerun builds nothing. Entries are keyed
    by source, compiler, flags and CPU, so a stale one is never used."""
    mp = pytest.MonkeyPatch()
    mp.setenv("GLASSTORCH_CACHE_DIR", str(Path(tempfile.gettempdir()) /
                                          "glasstorch-inductor-test-cache"))
    yield
    mp.undo()
