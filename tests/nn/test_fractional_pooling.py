"""Fractional max pooling against PyTorch: with the same seed the same windows (PyTorch's
random stream), values, indices and gradients."""
import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")

CASES = [(2, (2, 3, 9, 7), 2, {"output_size": (4, 3)}),
         (2, (3, 8, 8), 3, {"output_ratio": (0.5, 0.6)}),
         (2, (1, 2, 5, 5), (2, 3), {"output_size": 3}),
         (3, (2, 2, 6, 7, 5), (2, 3, 2), {"output_size": (3, 4, 2)}),
         (3, (2, 6, 6, 6), 2, {"output_ratio": (0.5, 0.5, 0.7)})]


@pytest.mark.parametrize("nd,shape,kernel,kwargs", CASES)
def test_matches_pytorch(nd, shape, kernel, kwargs):
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    results = []
    for lib in (gt, torch):
        lib.manual_seed(5)
        t = lib.tensor(x, requires_grad=True)
        pool = getattr(lib.nn, f"FractionalMaxPool{nd}d")(kernel, return_indices=True, **kwargs)
        out, idx = pool(t)
        (out * lib.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
        results.append((out.detach().numpy(), idx.numpy(), t.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


def test_given_samples_and_errors_match_pytorch():
    x = np.random.default_rng(1).normal(size=(1, 2, 7, 7)).astype(np.float32)
    samples = np.array([[[0.1, 0.9], [0.5, 0.3]]], np.float32)
    ours = gt.nn.functional.fractional_max_pool2d(gt.tensor(x), 2, output_size=4,
                                                  _random_samples=gt.tensor(samples))
    theirs = torch.nn.functional.fractional_max_pool2d(torch.tensor(x), 2, output_size=4,
                                                       _random_samples=torch.tensor(samples))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    for lib in (gt, torch):
        with pytest.raises(ValueError, match="requires specifying either an output size"):
            lib.nn.FractionalMaxPool2d(2)
        with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
            lib.nn.FractionalMaxPool2d(2, output_ratio=1.5)
        assert repr(lib.nn.FractionalMaxPool2d(2, output_size=3)) == "FractionalMaxPool2d()"
