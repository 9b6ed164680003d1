"""torch's top-level runtime names: sym_* on plain numbers, autocast/anomaly state functions,
Stream/Event on the CPU, cond, fork/wait, from_file, Tag, dispatch keys, schemas and build
flags, each compared with PyTorch."""
import math
import warnings

import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name, args", [
    ("sym_max", (2, 3.0)), ("sym_max", (3, 2.0)), ("sym_max", (5, 2)), ("sym_min", (2.0, 3)),
    ("sym_min", (7, 4)), ("sym_float", (3,)), ("sym_float", (True,)), ("sym_int", (3.7,)),
    ("sym_int", (-3.7,)), ("sym_not", (True,)), ("sym_not", (0,)), ("sym_sqrt", (2,)),
    ("sym_sum", ([1, 2, 3],)), ("sym_sum", (1, 2.5)), ("sym_ite", (True, 1, 2)),
    ("sym_ite", (False, 1, 2)), ("sym_fresh_size", (5,)),
])
def test_sym_functions_on_plain_numbers_as_torch(name, args):
    ours, theirs = getattr(gt, name)(*args), getattr(torch, name)(*args)
    assert ours == theirs and type(ours) is type(theirs)


def test_sym_errors_and_constraints_as_torch():
    for lib in (gt, torch):
        with pytest.raises(AssertionError, match="expected SymBool or bool"):
            lib.sym_ite(1, 1, 2)
        assert lib.sym_constrain_range(3, min=0, max=5) is None
        with pytest.raises(RuntimeError, match=r"Invalid value range for 7 between \[0, 5\]"):
            lib.sym_constrain_range(7, min=0, max=5)
        with pytest.raises(RuntimeError, match="Invalid value range for -1 between"):
            lib.sym_constrain_range_for_size(-1)


def test_sym_number_classes_behave_as_their_values():
    n, f = gt.SymInt(4), gt.SymFloat(2.5)
    assert isinstance(n + 1, gt.SymInt) and int(n + 1) == 5 and n * 2 == 8
    assert isinstance(n / 2, gt.SymFloat) and float(n / 2) == 2.0
    assert bool(n > 3) and isinstance(n > 3, gt.SymBool)
    assert float(gt.sym_max(n, f)) == 4.0 and isinstance(gt.sym_max(n, f), gt.SymFloat)
    assert int(gt.sym_int(gt.SymFloat(-2.5))) == -2 and gt.sym_ite(gt.SymBool(False), 1, 2) == 2
    assert not isinstance(3, gt.SymInt) and not isinstance(3, torch.SymInt)
    assert list(range(n)) == [0, 1, 2, 3] and math.isclose(float(gt.sym_sqrt(n)), 2.0)


def test_autocast_state_functions_as_torch():
    for lib in (gt, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            assert lib.get_autocast_cpu_dtype() == getattr(lib, "bfloat16")
            assert lib.get_autocast_gpu_dtype() == lib.float16
            assert lib.get_autocast_ipu_dtype() == lib.float16
            assert lib.get_autocast_xla_dtype() == lib.bfloat16
            assert not lib.is_autocast_cpu_enabled() and not lib.is_autocast_ipu_enabled()
            lib.set_autocast_enabled("cpu", True)
            assert lib.is_autocast_enabled("cpu") and lib.is_autocast_cpu_enabled()
            lib.set_autocast_enabled("cpu", False)
            lib.set_autocast_cpu_enabled(True)
            assert lib.is_autocast_enabled("cpu")
            lib.set_autocast_cpu_enabled(False)
            lib.set_autocast_cpu_dtype(lib.float16)
            assert lib.get_autocast_dtype("cpu") == lib.float16
            lib.set_autocast_cpu_dtype(lib.bfloat16)
            lib.set_autocast_xla_enabled(True)
            assert lib.is_autocast_xla_enabled()
            lib.set_autocast_xla_enabled(False)
        first = lib.autocast_increment_nesting()
        assert lib.autocast_increment_nesting() == first + 1
        assert lib.autocast_decrement_nesting() == first
        assert lib.autocast_decrement_nesting() == first - 1
    with pytest.warns(DeprecationWarning, match=r"torch.get_autocast_cpu_dtype\(\) is "
                                                r"deprecated. Please use torch.get_autocast"):
        gt.get_autocast_cpu_dtype()


def test_set_autocast_enabled_changes_what_ops_do():
    a, b = gt.ones(2, 2), gt.ones(2, 2)
    gt.set_autocast_enabled("cpu", True)
    try:
        assert (a @ b).dtype == gt.bfloat16
    finally:
        gt.set_autocast_enabled("cpu", False)
    assert (a @ b).dtype == gt.float32


def test_anomaly_functions_as_torch():
    for lib in (gt, torch):
        assert not lib.is_anomaly_enabled()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.set_anomaly_enabled(True, False)
        assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        lib.set_anomaly_enabled(False)
        assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()


def test_cpu_stream_and_event_as_torch():
    for lib in (gt, torch):
        s, e = lib.Stream("cpu"), lib.Event("cpu", enable_timing=True)
        assert str(s) == "torch.Stream device_type=cpu, device_index=-1, stream_id=0"
        assert s.query() and s.synchronize() is None and s == lib.Stream("cpu")
        assert (s.device_index, s.stream_id) == (-1, 0) and e.query()
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events"):
            e.record()
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events"):
            s.wait_stream(s)
        with pytest.raises(ValueError, match="Both events must be created with argument"):
            e.elapsed_time(lib.Event("cpu"))
        assert e.synchronize() is None and e.wait() is None
    assert str(gt.Event("cpu", enable_timing=True)) == \
        str(torch.Event("cpu", enable_timing=True))


def test_cond_fork_wait_as_torch():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    for pred in (True, False, 0, 2.5):
        for as_list in (False, True):
            ops = [gt.tensor(x)] if as_list else (gt.tensor(x),)
            ours = gt.cond(pred, lambda a: a + 1, lambda a: a * 2, ops)
            theirs = torch.cond(pred, lambda a: a + 1, lambda a: a * 2, (torch.tensor(x),))
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert float(gt.cond(gt.tensor(x).sum() > 5, lambda a: a.sum(), lambda a: -a.sum(),
                         (gt.tensor(x),))) == 6.0
    for lib in (gt, torch):
        with pytest.raises(RuntimeError, match="Expected pred to be bool or single-element"):
            lib.cond(lib.ones(2) > 0, lambda a: a, lambda a: a, (lib.ones(1),))
        with pytest.raises(RuntimeError, match="Expected pred to be bool or tensor, but got s"):
            lib.cond("s", lambda a: a, lambda a: a, (lib.ones(1),))
        future = lib.fork(lambda a, b=1: a + b, 2, b=5)
        assert lib.wait(future) == 7 and future.done()
        with pytest.raises(ZeroDivisionError):
            lib.fork(lambda: 1 / 0)


def test_from_file_as_torch(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(6, dtype=np.float32).tofile(path)
    for lib in (gt, torch):
        private = lib.from_file(str(path), shared=False, size=4)
        private[0] = 9
        assert np.fromfile(path, np.float32)[0] == 0 and private.tolist() == [9, 1, 2, 3]
        assert lib.from_file(str(path)).numel() == 0
        with pytest.raises(RuntimeError, match="size <24> is smaller than the required "
                                               "mapping size <400>"):
            lib.from_file(str(path), size=100)
        with pytest.raises(RuntimeError, match="unable to open file"):
            lib.from_file(str(tmp_path / "missing.bin"), size=3)
    shared = gt.from_file(str(path), shared=True, size=4, dtype=gt.float32)
    shared[1] = 7
    del shared
    assert np.fromfile(path, np.float32).tolist() == [0, 7, 2, 3, 4, 5]
    made = gt.from_file(str(tmp_path / "new.bin"), shared=True, size=3, dtype=gt.int32)
    assert made.tolist() == [0, 0, 0] and (tmp_path / "new.bin").stat().st_size == 12


def test_tags_keys_schema_and_flags_as_torch():
    assert [t.name for t in gt.Tag] == list(torch.Tag.__members__)
    assert gt.Tag.pointwise in gt.ops.aten.add.Tensor.tags
    assert str(gt.Tag.pointwise) == str(torch.Tag.pointwise)
    ks = gt.DispatchKeySet(gt.DispatchKey.CPU)
    assert ks.has(gt.DispatchKey.CPU) and str(ks) == str(torch.DispatchKeySet(
        torch.DispatchKey.CPU))
    text = "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    ours, theirs = gt.parse_schema(text), torch.parse_schema(text)
    assert isinstance(ours, gt.FunctionSchema) and str(ours) == str(theirs)
    assert (ours.name, ours.overload_name) == ("add", "Tensor") == \
        (theirs.name.split("::")[-1], theirs.overload_name)
    assert [a.name for a in ours.arguments] == [a.name for a in theirs.arguments]
    assert [a.kwarg_only for a in ours.arguments] == [a.kwarg_only for a in theirs.arguments]
    assert (int(gt.SUM), int(gt.AVG)) == (0, 1) and gt.AVG.name == torch.AVG.name
    assert gt.has_lapack and gt.has_spectral and not gt.is_distributed(gt.ones(2))
    assert not torch.is_distributed(torch.ones(2))
    assert issubclass(gt.AcceleratorError, RuntimeError)
    assert gt.GradScaler is gt.amp.GradScaler and gt.thread_safe_generator() is None
    assert gt.random.thread_safe_generator() is torch.random.thread_safe_generator() is None
