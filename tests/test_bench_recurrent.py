"""bench/recurrent.py's and bench/transformer_lm.py's language-model workloads pass their check: one training step of each
library from the same weights gives the same loss, gradients and updated weights."""
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import glasstorch  # noqa: E402
from bench import cli, harness, recurrent, transformer_lm  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _torch_single_thread():
    """torch's threads wait on each other on a small shared machine; restore after."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.mark.parametrize("name", ["lstm", "gru", "rnn", "transformer_lm"])  # cells: too long
def test_language_model_workloads_agree_with_torch(name):
    (workload,) = cli.select(name)
    assert workload in recurrent.WORKLOADS + transformer_lm.WORKLOADS
    observed = {}
    for lib in (glasstorch, torch):
        case = workload.setup(lib)
        observed[lib] = case.observe(case.call())
    assert harness.compare(observed[glasstorch], observed[torch], workload.rtol,
                           workload.atol) == ""
    assert np.isfinite(harness.to_numpy(observed[glasstorch][0]))
