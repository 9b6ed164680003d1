"""NumPy's protocols on a Tensor behave as on a PyTorch tensor: ufuncs return Tensors,
np.asarray shares memory, a tensor requiring grad refuses."""
import warnings

import numpy as np
import pytest

import glasstorch as torch

CASES = {
    "exp": lambda lib: np.exp(lib.tensor([1.0, 2.0])),
    "add_scalar": lambda lib: np.add(lib.tensor([1.0, 2.0]), 1),
    "exp_int": lambda lib: np.exp(lib.tensor([1, 2])),
    "exp_0d": lambda lib: np.exp(lib.tensor(1.0)),
    "maximum": lambda lib: np.maximum(lib.tensor([1.0, 5.0]), lib.tensor([3.0, 2.0])),
    "equal": lambda lib: np.equal(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 3.0])),
    "sqrt_2d": lambda lib: np.sqrt(lib.ones(2, 3)),
    "modf": lambda lib: np.modf(lib.tensor([1.5, -2.25])),
    "tensor_plus_array": lambda lib: lib.tensor([1.0, 2.0]) + np.ones(2),
    "tensor_times_float64": lambda lib: lib.tensor([1.0, 2.0]) * np.float64(2),
    "float64_times_tensor": lambda lib: np.float64(2) * lib.tensor([1.0, 2.0]),
}


def _describe(value):
    if isinstance(value, tuple):
        return tuple(_describe(v) for v in value)
    return type(value).__name__, str(value.dtype).replace("torch.", ""), value.tolist()


@pytest.mark.parametrize("case", sorted(CASES))
def test_ufunc_results_match_pytorch(case):
    torch_ = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # PyTorch's old __array_wrap__
        expected = _describe(CASES[case](torch_))
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # ours takes NumPy 2's arguments: no warning
        got = _describe(CASES[case](torch))
    assert got == expected


def test_reductions_fail_as_in_pytorch():
    with pytest.raises(TypeError, match="axis"):
        np.sum(torch.ones(3))


def test_asarray_shares_memory():
    t = torch.zeros(3)
    a = np.asarray(t)
    a[0] = 7.0
    assert t[0].item() == 7.0
    assert np.asarray(t, dtype=np.float64).dtype == np.float64


def test_requires_grad_refuses_numpy_as_pytorch():
    torch_ = pytest.importorskip("torch")
    for fn in (lambda lib: lib.ones(2, requires_grad=True).numpy(),
               lambda lib: np.asarray(lib.ones(2, requires_grad=True)),
               lambda lib: np.exp(lib.ones(2, requires_grad=True))):
        with pytest.raises(RuntimeError) as theirs:
            fn(torch_)
        with pytest.raises(RuntimeError) as ours:
            fn(torch)
        assert str(ours.value) == str(theirs.value)


def test_array_priority_matches():
    torch_ = pytest.importorskip("torch")
    assert torch.Tensor.__array_priority__ == torch_.Tensor.__array_priority__
