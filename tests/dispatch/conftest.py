"""The dispatch tests run most programs in both libraries: `T` is glasstorch or torch."""
import pytest

import glasstorch as gt
from oracle import oracle_torch


@pytest.fixture(params=["glasstorch", "torch"])
def T(request):
    return gt if request.param == "glasstorch" else oracle_torch()
