"""The benchmark harness (`python -m bench`): a few cheap workloads through the real check
and timing code with tiny settings, and the check's refusal of results that differ."""
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

# bench/ lives at the repository root, next to tests/; plain `pytest` does not put the root
# on sys.path (`python -m pytest` does).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import glasstorch  # noqa: E402
from bench import cli, harness, report  # noqa: E402

MODULES = {"glasstorch": glasstorch, "torch": torch, "numpy": np}
TINY = harness.Settings(rounds=1, min_time=0.001, warmup_time=0.001, quick=True)


@pytest.mark.parametrize("name", ["add", "transpose", "autograd"])
def test_cheap_workloads_check_and_time(name):
    (workload,) = cli.select(name)
    row = harness.measure(workload, MODULES, TINY)
    assert row.error == ""
    assert set(row.times) == {"glasstorch", "torch"}
    assert all(t > 0 for t in row.times.values())
    assert row.metric == pytest.approx(row.times["glasstorch"] / row.times["torch"])
    assert row.met is (row.metric <= workload.target.bound)


def test_compare_refuses_other_values_dtypes_shapes_and_strides():
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    ours = glasstorch.from_numpy(values.copy())
    assert harness.compare([ours], [torch.from_numpy(values.copy())], 1e-5, 1e-6) == ""
    changed = values.copy()
    changed[1, 2] += 0.5
    assert "values differ" in harness.compare([ours], [torch.from_numpy(changed)], 1e-5, 1e-6)
    assert "dtype" in harness.compare([ours], [torch.from_numpy(values.astype(np.float64))],
                                      1e-5, 1e-6)
    assert "shape" in harness.compare([ours], [torch.from_numpy(values.reshape(3, 2))],
                                      1e-5, 1e-6)
    transposed = torch.from_numpy(values.T.copy()).t()          # same values, other strides
    assert "strides" in harness.compare([ours], [transposed], 1e-5, 1e-6)
    assert "outputs" in harness.compare([ours, ours], [transposed], 1e-5, 1e-6)


def _disagreeing(lib):
    value = 1.0 if lib is glasstorch else 2.0
    return harness.Case(lambda: lib.full((3,), value))


def _failing(lib):
    if lib is glasstorch:
        raise NotImplementedError("no kernel for this op")
    return harness.Case(lambda: lib.ones(3))


def _failing_later(lib):
    calls = []

    def call():
        calls.append(1)
        if len(calls) > 1 and lib is glasstorch:
            raise RuntimeError("out of memory")
        return lib.ones(3)
    return harness.Case(call)


def test_a_wrong_or_failing_library_is_reported_not_timed():
    for setup, message in [(_disagreeing, "glasstorch differs from torch: output: values"),
                           (_failing, "error: glasstorch: NotImplementedError: no kernel"),
                           (_failing_later, "error: while timing: RuntimeError: out of memory")]:
        row = harness.measure(harness.Workload("w", "d", setup, harness.Target(1.0)),
                              MODULES, TINY)
        assert row.error.startswith("error: ") and message in row.error
        assert row.times == {} and row.met is None
        assert "error" in report.text_table([row])


def test_write_section_replaces_only_the_generated_part(tmp_path):
    path = tmp_path / "BENCHMARKS.md"
    path.write_text(f"# B\n\nintro\n\n{report.BEGIN}\nold\n{report.END}\n\n## History\nkept\n")
    report.write_section(f"{report.BEGIN}\nnew\n{report.END}", str(path))
    assert path.read_text() == (f"# B\n\nintro\n\n{report.BEGIN}\nnew\n{report.END}\n\n"
                                "## History\nkept\n")


def test_list_and_unknown_names(capsys):
    assert cli.main(["--list", "--only", "add,sum16"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["add", "sum16"]
    with pytest.raises(SystemExit, match="unknown workload"):
        cli.select("add,nonsense")
