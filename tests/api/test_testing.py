"""torch.testing against PyTorch: assert_close's messages and make_tensor's values."""
import re

import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")

CASES = [
    ("tensor", [1.0, 2.0, 3.0], "tensor", [1.0, 2.5, 3.0], {}),
    ("tensor", [[1.0, 2.0], [3.0, 4.0]], "tensor", [[1.0, 2.0], [3.0, 5.0]], {}),
    ("tensor", [1, 2, 3], "tensor", [1, 4, 3], {}),
    ("tensor", 1.0, "tensor", 1.5, {}),
    ("number", 1.0, "number", 1.5, {}),
    ("number", 3, "number", 4, {}),
    ("tensor", [float("nan")], "tensor", [float("nan")], {}),
    ("tensor", [float("nan")], "tensor", [float("nan")], {"equal_nan": True}),
    ("tensor", [True, False], "tensor", [True, True], {}),
    ("tensor", [0.0, 1.0], "tensor", [1e-9, 1.0], {}),
    ("tensor", [1.0, 2.0], "tensor", [1.0, 2.0001], {"rtol": 0, "atol": 1e-6}),
    ("tensor", [1e-9, 0.0], "tensor", [0.0, 0.0], {"rtol": 0, "atol": 0}),
    ("tensor", [1.0, float("inf")], "tensor", [1.0, 2.0], {}),
    ("tensor", [1.0, 2.0], "tensor", [1.0, 2.0001], {"rtol": 1e-6}),
    ("tensor", [1.0, 2.0], "tensor", [1.0, 2.5], {"msg": "custom"}),
]


def _outcome(lib, fn):
    try:
        fn()
        return "ok"
    except (AssertionError, ValueError, TypeError) as e:
        return type(e).__name__, re.sub(r"<class '[\w.]+Tensor'>", "<Tensor>", str(e))


def _make(lib, kind, value):
    return lib.tensor(value) if kind == "tensor" else value


@pytest.mark.parametrize("ka,a,ke,e,kwargs", CASES)
def test_assert_close_messages_match_pytorch(ka, a, ke, e, kwargs):
    ours = _outcome(gt, lambda: gt.testing.assert_close(_make(gt, ka, a), _make(gt, ke, e),
                                                        **kwargs))
    theirs = _outcome(torch, lambda: torch.testing.assert_close(
        _make(torch, ka, a), _make(torch, ke, e), **kwargs))
    assert ours == theirs


def test_attribute_and_container_failures_match_pytorch():
    cases = [lambda lib: (lib.ones(2), lib.ones(3)),
             lambda lib: (lib.ones(2), lib.ones(2, dtype=lib.float64)),
             lambda lib: ([lib.ones(2), lib.zeros(2)], [lib.ones(2), lib.ones(2)]),
             lambda lib: ({"a": lib.ones(2)}, {"a": lib.zeros(2)}),
             lambda lib: (lib.ones(2, 3).t(), lib.ones(3, 2)),
             lambda lib: (lib.ones(2), [1.0, 1.0]),
             lambda lib: ([lib.ones(1)], [lib.ones(1), lib.ones(1)])]
    for make in cases:
        ours = _outcome(gt, lambda: gt.testing.assert_close(*make(gt), check_stride=True))
        theirs = _outcome(torch, lambda: torch.testing.assert_close(*make(torch),
                                                                    check_stride=True))
        assert ours == theirs
    gt.testing.assert_close(gt.ones(2), gt.ones(2, dtype=gt.float64), check_dtype=False)
    gt.testing.assert_close(np.ones(3), np.ones(3))


@pytest.mark.parametrize("dtype,kwargs", [
    ("float32", {}), ("float64", {"low": -1, "high": 1}), ("int64", {}), ("uint8", {}),
    ("bool", {}), ("int32", {"low": 3, "high": 7}), ("float32", {"noncontiguous": True}),
    ("float32", {"exclude_zero": True, "low": 0, "high": 1}), ("complex64", {}),
    ("float16", {"requires_grad": True})])
def test_make_tensor_draws_pytorch_values(dtype, kwargs):
    results = []
    for lib in (gt, torch):
        lib.manual_seed(7)
        t = lib.testing.make_tensor((3, 4), dtype=getattr(lib, dtype), device="cpu", **kwargs)
        results.append((t.detach().cpu().numpy().tolist(), t.shape, t.is_contiguous(),
                        t.requires_grad))
    assert results[0] == results[1]


def test_make_tensor_errors_match_pytorch():
    for kwargs in ({"low": 5, "high": 2}, {"low": float("nan")}, {"requires_grad": True}):
        for lib in (gt, torch):
            with pytest.raises(ValueError):
                lib.testing.make_tensor(2, dtype=lib.int64 if "requires_grad" in kwargs
                                        else lib.float32, device="cpu", **kwargs)
