"""Legacy types, constants, top-level function forms and global switches, against PyTorch."""
import math
import warnings

import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")


def test_legacy_tensor_types():
    for lib in (gt, torch):
        x = lib.FloatTensor([1, 2])
        assert x.type() == "torch.FloatTensor" and x.dtype == lib.float32
        assert isinstance(x, lib.FloatTensor) and not isinstance(x, lib.LongTensor)
        assert lib.LongTensor(3).shape == (3,) and lib.LongTensor(3).dtype == lib.int64
        assert lib.Tensor(2, 3).shape == (2, 3)
        assert x.type(lib.DoubleTensor).dtype == lib.float64
        assert x.type("torch.LongTensor").dtype == lib.int64
        assert lib.ByteTensor([1, 2]).dtype == lib.uint8
        assert lib.BoolTensor([1, 0]).tolist() == [True, False]
        assert lib.FloatTensor.dtype == lib.float32
        assert lib.FloatTensor(lib.ones(2, 2)).shape == (2, 2)
        with pytest.raises(TypeError):
            lib.FloatTensor(lib.ones(2, dtype=lib.int64))
        with pytest.raises(ValueError, match="invalid type"):
            x.type("torch.NoSuchTensor")
    assert repr(gt.FloatTensor) == repr(torch.FloatTensor)
    assert repr(gt.cuda.FloatTensor) == repr(torch.cuda.FloatTensor)


def test_typed_storages():
    for lib in (gt, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = lib.FloatStorage([1, 2, 3])
            assert s.size() == 3 and s.tolist() == [1.0, 2.0, 3.0] and s.dtype == lib.float32
            assert isinstance(s, lib.FloatStorage) and not isinstance(s, lib.LongStorage)
            assert lib.LongStorage(4).size() == 4
            assert s[1] == 2.0 and s.element_size() == 4 and s.nbytes() == 12
            assert s.type() == "torch.FloatStorage"


def test_constants():
    for lib in (gt, torch):
        assert lib.pi == math.pi and lib.e == math.e and lib.inf == math.inf
        assert math.isnan(lib.nan) and lib.newaxis is None


@pytest.mark.parametrize("name", ["exp_", "sigmoid_", "tanh_", "sqrt_", "abs_", "neg_",
                                  "floor_", "round_", "sin_", "zero_", "frac_", "trunc_"])
def test_top_level_inplace_forms(name):
    values = [0.3, 1.7, 2.2]
    g, t = gt.tensor(values), torch.tensor(values)
    assert getattr(gt, name)(g) is g
    getattr(torch, name)(t)
    np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-6)


def test_small_functions_match_pytorch():
    a, b = [[1.0, 2.0], [3.0, -1.0]], [[0.5, 0.0], [1.0, 2.0]]
    for p in (1, 2, 3.5, math.inf):
        np.testing.assert_allclose(gt.dist(gt.tensor(a), gt.tensor(b), p).item(),
                                   torch.dist(torch.tensor(a), torch.tensor(b), p).item(),
                                   rtol=1e-6)
    assert gt.ravel(gt.tensor(a)).tolist() == torch.ravel(torch.tensor(a)).tolist()
    for x, n, inc in (([1, 2, 3], None, False), ([1.5, 2.0], 4, True), ([2, 3], 0, False)):
        ours, theirs = gt.vander(gt.tensor(x), N=n, increasing=inc), \
            torch.vander(torch.tensor(x), N=n, increasing=inc)
        assert ours.tolist() == theirs.tolist() and str(ours.dtype) == str(theirs.dtype)
    assert gt.scalar_tensor(3).dtype == gt.float32 and torch.scalar_tensor(3).dtype == \
        torch.float32
    for lib in (gt, torch):
        assert lib.is_nonzero(lib.tensor([2.0])) and not lib.is_nonzero(lib.tensor(0))
        with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
            lib.is_nonzero(lib.ones(2))
        with pytest.raises(RuntimeError, match="no values is ambiguous"):
            lib.is_nonzero(lib.ones(0))
        assert lib.is_same_size(lib.ones(2, 3), lib.zeros(2, 3))
        assert lib.typename(lib.ones(1)) == "torch.FloatTensor"
        y = lib.empty_permuted((2, 3, 4), (0, 2, 1))
        assert y.shape == (2, 3, 4) and y.stride() == (12, 1, 3)
        z = lib.nonzero_static(lib.tensor([0, 1, 0, 2]), size=4)
        assert z.tolist() == [[1], [3], [-1], [-1]]
        assert lib.frombuffer(bytearray(b"\x01\x00\x00\x00"), dtype=lib.int32).tolist() == [1]
        assert lib.fill(lib.zeros(2), 3).tolist() == [3.0, 3.0]
        assert lib.adjoint(lib.ones(2, 3)).shape == (3, 2)


def test_global_switches():
    for lib in (gt, torch):
        try:
            lib.use_deterministic_algorithms(True, warn_only=True)
            assert lib.are_deterministic_algorithms_enabled()
            assert lib.is_deterministic_algorithms_warn_only_enabled()
            assert lib.get_deterministic_debug_mode() == 1
            lib.set_deterministic_debug_mode("error")
            assert lib.get_deterministic_debug_mode() == 2
            with pytest.raises(RuntimeError):
                lib.set_deterministic_debug_mode(5)
        finally:
            lib.use_deterministic_algorithms(False)
        assert lib.get_deterministic_debug_mode() == 0
        lib.set_float32_matmul_precision("high")
        assert lib.get_float32_matmul_precision() == "high"
        lib.set_float32_matmul_precision("highest")
        with pytest.warns(UserWarning, match="has no effect"):
            lib.set_float32_matmul_precision("fastest")
        assert lib.get_float32_matmul_precision() == "highest"
        assert lib.is_warn_always_enabled() is False


def test_set_default_tensor_type():
    for lib in (gt, torch):
        try:
            with pytest.warns(UserWarning, match="deprecated"):
                lib.set_default_tensor_type(lib.DoubleTensor)
            assert lib.ones(1).dtype == lib.float64
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lib.set_default_tensor_type("torch.FloatTensor")
            assert lib.ones(1).dtype == lib.float32
        finally:
            lib.set_default_dtype(lib.float32)


def test_tensor_method_forms_match_pytorch():
    for lib in (gt, torch):
        x = lib.arange(24.0).reshape(2, 3, 4)
        assert x.sum_to_size(3, 1).tolist() == [[60.0], [92.0], [124.0]]
        assert x.sum_to_size((1, 3, 4)).shape == (1, 3, 4)
        with pytest.raises(RuntimeError, match=r"size \{\[5\]\} is not expandable to size "
                                               r"\{\[2, 3, 4\]\}"):
            x.sum_to_size(5)
        assert x.ravel().shape == (24,) and x.broadcast_to((2, 2, 3, 4)).shape == (2, 2, 3, 4)
        a = lib.zeros(7, 3)
        assert a.fill_diagonal_(5, wrap=True) is a
        assert a.nonzero().tolist() == [[0, 0], [1, 1], [2, 2], [4, 0], [5, 1], [6, 2]]
        b = lib.zeros(3, 3, 3)
        b.fill_diagonal_(2)
        assert b.sum().item() == 6.0 and b[1, 1, 1].item() == 2.0
        with pytest.raises(RuntimeError, match="all dimensions of input must be of equal "
                                               "length"):
            lib.zeros(2, 3, 3).fill_diagonal_(1)
        assert lib.ones(1).is_nonzero() and lib.ones(2, 3).adjoint().shape == (3, 2)
        assert abs(lib.ones(3).dist(lib.zeros(3)).item() - 3 ** 0.5) < 1e-6
        assert not lib.ones(2).is_neg()
