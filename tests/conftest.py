import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # lets tests import `oracle`

import gc

import pytest


@pytest.fixture
def quiet_gc():
    """Exact memory counts: collect earlier tests' cyclic garbage first, and keep the cyclic
    collector from freeing more of it in the middle of the measurement."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
