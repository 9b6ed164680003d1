import pickle

import pytest

import glasstorch as gt


def test_device_parsing_and_printing():
    d = gt.device("cuda:1")
    assert (d.type, d.index) == ("cuda", 1)
    assert repr(d) == "device(type='cuda', index=1)" and str(d) == "cuda:1"
    assert gt.device("cuda", 1) == d
    assert repr(gt.device("cpu")) == "device(type='cpu')" and gt.device("cpu").index is None
    assert gt.device(d) is d
    assert gt.device("meta").type == "meta"


def test_device_equality_and_hash_like_torch():
    assert gt.device("cpu") == gt.device("cpu")
    assert gt.device("cpu") != "cpu"          # torch.device compares unequal to strings
    assert len({gt.device("cuda:0"), gt.device("cuda", 0)}) == 1
    assert pickle.loads(pickle.dumps(gt.device("cuda:2"))) == gt.device("cuda:2")


@pytest.mark.parametrize("bad,exc", [("gpu", RuntimeError), ("cuda:x", RuntimeError),
                                     (3.5, TypeError)])
def test_bad_device_strings_raise(bad, exc):
    with pytest.raises(exc):
        gt.device(bad)


def test_tensor_device_attributes():
    t = gt.ones(2)
    assert t.device == gt.device("cpu") and t.is_cpu and not t.is_cuda and t.get_device() == -1
    m = gt.empty(2, device="meta")
    assert m.is_meta and m.device.type == "meta"


@pytest.mark.skipif(gt.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_a_gpu_fails_clearly_and_cleanly(quiet_gc):
    # torch without CUDA raises AssertionError ("not compiled with CUDA"); with CUDA but no
    # driver, RuntimeError. glasstorch says which: CuPy missing, or no driver/GPU.
    before = gt.memory.memory_allocated("cpu")
    with pytest.raises((AssertionError, RuntimeError), match="CUDA is not available|no NVIDIA"):
        gt.empty(2, device="cuda")
    assert gt.memory.memory_allocated("cpu") == before


def test_copying_out_of_a_meta_tensor_is_refused():
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        gt.empty(2, device="meta").to("cpu")


def test_torch_backends_switches_that_gpu_scripts_set_exist():
    # Training scripts set these before anything else; they must not fail here.
    gt.backends.cudnn.benchmark = True
    gt.backends.cudnn.deterministic = False
    gt.backends.cuda.matmul.allow_tf32 = False
    assert gt.backends.cudnn.is_available() is False      # convolutions are matmuls here
    import importlib.util
    assert gt.backends.cuda.is_built() == (importlib.util.find_spec("cupy") is not None)
    gt.backends.cudnn.benchmark = False


def test_set_default_device_moves_factories():
    assert gt.get_default_device() == gt.device("cpu")
    gt.set_default_device("meta")
    try:
        assert gt.get_default_device() == gt.device("meta")
        for t in (gt.zeros(2), gt.ones(2, 3), gt.empty(1), gt.arange(3), gt.full((2,), 1.0),
                  gt.randn(2), gt.tensor([1.0, 2.0]), gt.eye(2)):
            assert t.device == gt.device("meta"), t
    finally:
        gt.set_default_device(None)
    assert gt.zeros(1).device == gt.device("cpu")


def test_a_device_as_a_context_manager_sets_the_default_in_its_block():
    """`with torch.device('meta'):` (PyTorch 2's way to build a model without memory):
    factories and modules given no device use it, blocks nest, the default comes back
    after, also after an error; compared with torch's."""
    from oracle import oracle_torch
    torch = oracle_torch()

    def devices(T):
        seen = []
        with T.device("meta") as d:
            seen += [str(d), str(T.arange(5).device), str(T.zeros(2).device),
                     str(T.get_default_device()), str(T.nn.Linear(2, 3).weight.device)]
            with T.device("cpu"):
                seen.append(str(T.ones(1).device))
            seen.append(str(T.ones(1).device))
        try:
            with T.device("meta"):
                raise KeyError
        except KeyError:
            pass
        return seen + [str(T.ones(1).device), str(T.get_default_device())]
    assert devices(gt) == devices(torch)
    assert devices(gt)[:2] == ["meta", "meta"] and devices(gt)[-1] == "cpu"


def test_a_broken_cupy_install_means_no_cuda_with_a_clear_reason(monkeypatch):
    import sys
    import types
    from glasstorch.backends.cuda import runtime

    class Broken(types.ModuleType):
        def __getattr__(self, name):
            raise OSError("libcudart.so.13: cannot open shared object file")

    broken = Broken("cupy")
    monkeypatch.setitem(sys.modules, "cupy", None)       # `import cupy` raises ImportError
    runtime.use_cupy(None)
    try:
        assert gt.cuda.is_available() is False and gt.cuda.device_count() == 0
        with pytest.raises(AssertionError, match="needs CuPy, which is not installed"):
            gt.zeros(1, device="cuda")
        monkeypatch.setitem(sys.modules, "cupy", broken)
        runtime.use_cupy(None)
        assert gt.cuda.is_available() is False        # never raises
        with pytest.raises((AssertionError, RuntimeError), match="CUDA|NVIDIA"):
            gt.zeros(1, device="cuda")

        class FailingImport:                           # the wheel's CUDA libraries missing
            def find_spec(self, name, path=None, target=None):
                if name == "cupy":
                    raise OSError("libcudart.so.13: cannot open shared object file")

        monkeypatch.delitem(sys.modules, "cupy")
        monkeypatch.setattr(sys, "meta_path", [FailingImport()] + sys.meta_path)
        runtime.use_cupy(None)
        assert gt.cuda.is_available() is False
        with pytest.raises(AssertionError, match="CuPy is installed but fails to import "
                                                 r"\(OSError: libcudart"):
            gt.zeros(1, device="cuda")
    finally:
        monkeypatch.undo()
        runtime.use_cupy(None)


def test_device_selection_idioms_run_as_on_a_machine_without_mps():
    """`'cuda' if ... else 'mps' if torch.backends.mps.is_available() else 'cpu'` runs
    (MPS neither built nor available, as torch's Linux build says); `mkldnn`'s switch can be
    set (glasstorch calls no oneDNN, so it is not available)."""
    from oracle import oracle_torch
    torch = oracle_torch()
    for T in (gt, torch):
        assert (T.backends.mps.is_available(), T.backends.mps.is_built()) == (False, False)
    assert gt.backends.mkldnn.is_available() is False
    before = gt.backends.mkldnn.enabled
    gt.backends.mkldnn.enabled = False
    gt.backends.mkldnn.enabled = before
