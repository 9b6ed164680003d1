"""torch.accelerator on this machine, torch.hub with local sources and no network, and
torch.nn.attention's backend selection, against PyTorch."""
import os
import textwrap

import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")


@pytest.mark.skipif(gt.cuda.is_available() or torch.cuda.is_available(),
                    reason="compares the no-accelerator behaviour")
def test_accelerator_without_a_gpu_matches_pytorch():
    for lib in (gt, torch):
        A = lib.accelerator
        assert A.is_available() is False and A.current_accelerator() is None
        assert A.device_count() == 0
        for call in (A.current_device_index, A.synchronize, A.empty_cache, A.memory_allocated,
                     A.memory_stats, A.get_memory_info, lambda: A.set_device_index(0)):
            with pytest.raises(RuntimeError, match="Cannot access accelerator device when "
                                                   "none is available."):
                call()
        with pytest.warns(FutureWarning, match="current_device_index"):
            with pytest.raises(RuntimeError):
                A.current_device_idx()
    assert set(torch.accelerator.__all__) - {"Graph"} <= set(dir(gt.accelerator))


@pytest.mark.skipif(not gt.cuda.is_available(), reason="needs a GPU")
def test_accelerator_with_a_gpu_is_cuda():
    A = gt.accelerator
    assert A.current_accelerator() == gt.device("cuda") and A.device_count() >= 1
    with A.device_index(0):
        assert A.current_device_index() == 0
    A.synchronize()


@pytest.fixture
def hub_repo(tmp_path):
    (tmp_path / "hubconf.py").write_text(textwrap.dedent('''
        dependencies = []

        def tiny(out_features=3, *, bias=True):
            """A Linear(2, out_features)."""
            lib = __import__("{lib}")
            return lib.nn.Linear(2, out_features, bias=bias)

        def _private():
            pass
    '''))
    return tmp_path


def test_hub_loads_local_repositories(hub_repo):
    for lib in (gt, torch):
        conf = hub_repo / "hubconf.py"
        conf.write_text(conf.read_text().replace("{lib}", lib.__name__))
        model = lib.hub.load(str(hub_repo), "tiny", 4, source="local", bias=False)
        assert isinstance(model, lib.nn.Linear) and model.out_features == 4
        assert model.bias is None
        with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
            lib.hub.load(str(hub_repo), "nope", source="local")
        with pytest.raises(ValueError, match='Unknown source: "web"'):
            lib.hub.load(str(hub_repo), "tiny", source="web")
        conf.write_text(conf.read_text().replace(lib.__name__, "{lib}"))
    # PyTorch's list/help take GitHub repositories only; glasstorch's read a local one too
    assert gt.hub.list(str(hub_repo)) == ["tiny"]
    assert gt.hub.help(str(hub_repo), "tiny") == "A Linear(2, out_features)."


def test_hub_dirs_and_missing_dependencies(hub_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    assert gt.hub.get_dir() == torch.hub.get_dir() == str(tmp_path / "home" / "hub")
    gt.hub.set_dir(str(tmp_path / "elsewhere"))
    try:
        assert gt.hub.get_dir() == str(tmp_path / "elsewhere")
    finally:
        gt.hub.set_dir(str(tmp_path / "home" / "hub"))
        gt.hub._hub_dir = None
    conf = hub_repo / "hubconf.py"
    conf.write_text(conf.read_text().replace("dependencies = []",
                                             "dependencies = ['no_such_package_xyz']"))
    for lib in (gt, torch):
        with pytest.raises(RuntimeError, match="Missing dependencies: no_such_package_xyz"):
            lib.hub.load(str(hub_repo), "tiny", source="local")


def test_load_state_dict_from_url_uses_the_cache_and_says_when_offline(tmp_path):
    sd = gt.nn.Linear(2, 2).state_dict()
    gt.save(sd, str(tmp_path / "weights-abc.pt"))
    loaded = gt.hub.load_state_dict_from_url("https://example.invalid/weights-abc.pt",
                                             model_dir=str(tmp_path))
    assert set(loaded) == {"weight", "bias"}
    gt.testing.assert_close(loaded["weight"], sd["weight"])
    with pytest.raises(RuntimeError, match="Could not download .* put the file at"):
        gt.hub.download_url_to_file("http://127.0.0.1:9/missing.pt", str(tmp_path / "x.pt"))
    assert not (tmp_path / "x.pt").exists()


def test_sdpa_kernel_matches_pytorch():
    from glasstorch.nn.attention import SDPBackend, _cur_sdpa_kernel_backends, sdpa_kernel
    tb = torch.nn.attention.SDPBackend
    assert [(m.name, m.value) for m in SDPBackend] == [(m.name, m.value) for m in
                                                         tb.__members__.values()]
    assert repr(SDPBackend.MATH) == repr(tb.MATH)
    q = gt.randn(1, 2, 3, 4)
    expected = gt.nn.functional.scaled_dot_product_attention(q, q, q)
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]) as k:
        assert k == {}
        assert _cur_sdpa_kernel_backends() == [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]
        gt.testing.assert_close(gt.nn.functional.scaled_dot_product_attention(q, q, q),
                                expected)
    assert len(_cur_sdpa_kernel_backends()) == 5
    for lib in (gt, torch):
        with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
            with lib.nn.attention.sdpa_kernel("math"):
                pass
        with pytest.raises(ValueError, match="Unknown flash attention impl 'nope'"):
            lib.nn.attention.activate_flash_attention_impl("nope")
        assert lib.nn.attention.current_flash_attention_impl() is None
