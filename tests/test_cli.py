"""The `glasstorch` command: `glasstorch info`, as a function and as `python -m glasstorch`."""
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
import types

import ml_dtypes
import numpy as np
import pytest

import glasstorch as gt
from glasstorch import cli


def test_info_reports_versions_and_backends(capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    rows = dict(re.match(r"^(\S.*?)\s{2,}(.*)$", line).groups()
                for line in out.splitlines() if not line.startswith(("  ", "backends:")))
    assert rows["glasstorch"] == gt.version.glasstorch
    assert rows["NumPy"] == np.__version__
    assert rows["ml_dtypes"] == ml_dtypes.__version__
    assert rows["Python"].split()[0] == platform.python_version()
    assert rows["CPU count"] == str(os.cpu_count())
    assert rows["threads"].startswith(f"{gt.get_num_threads()} ")
    assert rows["BLAS threads"]
    backends = {line.split()[0]: line.split()[1] for line in out.splitlines()
                if line.startswith("  ")}
    assert backends["cpu"] == "yes" and backends["meta"] == "yes"
    assert backends["cuda"] in ("yes", "no")


@pytest.mark.parametrize("env,says", [({}, "C kernels for the hot ops (built by "),
                                      ({"GLASSTORCH_NATIVE": "0"}, "C kernels off"),
                                      ({"CC": "no-such-cc"}, "no C compiler")])
def test_info_says_whether_the_c_kernels_run(env, says, monkeypatch):
    from glasstorch.backends.cpu import native
    from glasstorch.compiler.inductor import build
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(native, "ENABLED", env.get("GLASSTORCH_NATIVE") != "0")
    if not env and build.compiler() is None:
        pytest.skip("no C compiler")
    assert says in cli.collect_info()["backends"]["cpu"]["detail"]


def test_info_says_what_multiplies_matrices(monkeypatch):
    """The own kernel where it can be built (what split_gemm says after building it),
    NumPy's BLAS with the C kernels off."""
    from glasstorch.backends.cpu import native, split_gemm
    says = cli.collect_info()["products"]
    assert ("own AVX-512 kernel" in says) == split_gemm.own_kernel_available()
    monkeypatch.setattr(native, "ENABLED", False)
    assert cli.collect_info()["products"].startswith("NumPy's BLAS")


def test_info_blas_comes_from_numpy_config():
    config = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    assert cli.collect_info()["blas"].startswith(config["name"])


def test_info_json(capsys):
    assert cli.main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["numpy"] == np.__version__ and info["glasstorch"] == gt.version.glasstorch
    assert info["backends"]["cpu"]["available"] is True
    assert info["backends"]["meta"]["available"] is True
    assert isinstance(info["backends"]["cuda"]["available"], bool)


def test_no_command_prints_help_and_fails(capsys):
    assert cli.main([]) == 2
    assert "info" in capsys.readouterr().out


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"glasstorch {gt.version.glasstorch}"


def test_python_dash_m_glasstorch_info():
    result = subprocess.run([sys.executable, "-m", "glasstorch", "info"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("glasstorch")
    assert f"NumPy         {np.__version__}" in result.stdout


def test_console_script_is_declared():
    scripts = importlib.metadata.entry_points(group="console_scripts")
    assert any(ep.name == "glasstorch" and ep.value == "glasstorch.cli:main" for ep in scripts)


# ---- why CUDA is or is not available ---------------------------------------------------

def _fake_cupy(monkeypatch, runtime):
    module = types.ModuleType("cupy")
    module.__version__ = "13.0.0"
    module.cuda = types.SimpleNamespace(runtime=runtime)
    monkeypatch.setitem(sys.modules, "cupy", module)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "cupy" else real(name, *a))


def test_cuda_without_cupy(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "cupy" else real(name, *a))
    assert cli._cuda() == (False, "cupy not installed")


def test_cuda_with_cupy_but_no_device(monkeypatch):
    class CUDARuntimeError(RuntimeError):
        pass

    def no_driver():
        raise CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
    _fake_cupy(monkeypatch, types.SimpleNamespace(getDeviceCount=no_driver))
    available, detail = cli._cuda()
    assert not available
    assert detail.startswith("no CUDA device (CUDARuntimeError: cudaErrorNoDevice")


def test_cuda_with_a_device(monkeypatch):
    _fake_cupy(monkeypatch, types.SimpleNamespace(
        getDeviceCount=lambda: 1, getDeviceProperties=lambda i: {"name": b"NVIDIA H200"}))
    assert cli._cuda() == (True, "1 device(s): NVIDIA H200 (cupy 13.0.0)")
    assert "cuda  yes  1 device(s): NVIDIA H200" in cli.format_info(cli.collect_info())


def test_demo_subcommand_runs_the_tour(capsys):
    assert cli.main(["demo"]) == 0
    assert "A tensor is a view over a storage" in capsys.readouterr().out


def test_bench_subcommand_passes_its_options_to_bench(capsys, monkeypatch):
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))       # a checkout's root
    assert cli.main(["bench", "--list"]) == 0
    assert "a + b, 16 float32" in capsys.readouterr().out


def test_bench_subcommand_outside_a_checkout_says_where_to_run_it(capsys, monkeypatch,
                                                                   tmp_path):
    monkeypatch.chdir(tmp_path)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", root)])
    for name in [m for m in sys.modules if m == "bench" or m.startswith("bench.")]:
        monkeypatch.delitem(sys.modules, name)
    assert cli.main(["bench", "--list"]) == 2
    assert "from the repository's root" in capsys.readouterr().err
