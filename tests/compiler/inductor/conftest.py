import pytest


@pytest.fixture(autouse=True, scope="session")
def kernel_cache(tmp_path_factory):
    """Kernels built by these tests go to a cache of their own, shared by the session."""
    mp = pytest.MonkeyPatch()
    mp.setenv("GLASSTORCH_CACHE_DIR", str(tmp_path_factory.mktemp("inductor-cache")))
    yield
    mp.undo()
