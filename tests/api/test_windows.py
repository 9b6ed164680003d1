"""Window functions against PyTorch: torch.signal.windows and torch.*_window."""
import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")

SIGNAL = [("hann", {}), ("hamming", {}), ("blackman", {}), ("nuttall", {}), ("bartlett", {}),
          ("cosine", {}), ("gaussian", {"std": 1.7}), ("exponential", {"tau": 2.0}),
          ("kaiser", {"beta": 5.0}), ("general_hamming", {"alpha": 0.6}),
          ("general_cosine", {"a": [0.4, 0.5, 0.1]})]


@pytest.mark.parametrize("name,kwargs", SIGNAL)
@pytest.mark.parametrize("M", [0, 1, 2, 7, 10])
@pytest.mark.parametrize("sym", [True, False])
def test_signal_windows_match_pytorch(name, kwargs, M, sym):
    ours = getattr(gt.signal.windows, name)(M, sym=sym, **kwargs)
    theirs = getattr(torch.signal.windows, name)(M, sym=sym, **kwargs)
    assert ours.dtype == gt.float32 and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name,args", [("hann_window", ()), ("hamming_window", ()),
                                       ("hamming_window", (0.6, 0.4)),
                                       ("blackman_window", ()), ("bartlett_window", ()),
                                       ("kaiser_window", ()), ("kaiser_window", (4.0,))])
@pytest.mark.parametrize("length", [0, 1, 5, 8])
@pytest.mark.parametrize("periodic", [True, False])
def test_window_functions_match_pytorch(name, args, length, periodic):
    ours = getattr(gt, name)(length, periodic, *args, dtype=gt.float64)
    theirs = getattr(torch, name)(length, periodic, *args, dtype=torch.float64)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


def test_window_errors_match_pytorch():
    for lib in (gt, torch):
        with pytest.raises(RuntimeError, match="non-negative window_length"):
            lib.hann_window(-1)
        with pytest.raises(RuntimeError, match="expects floating point dtypes"):
            lib.hann_window(4, dtype=lib.int64)
        with pytest.raises(ValueError, match="Standard deviation must be positive"):
            lib.signal.windows.gaussian(4, std=0)
        with pytest.raises(ValueError, match="Center must be None for symmetric windows"):
            lib.signal.windows.exponential(4, center=1.0)
