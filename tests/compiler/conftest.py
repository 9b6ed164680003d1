import pytest

import glasstorch as gt
from compile_helpers import CountingBackend


@pytest.fixture
def counter():
    return CountingBackend()


@pytest.fixture(autouse=True)
def fresh_compiler():
    gt._dynamo.reset()
    yield
    gt._dynamo.reset()
