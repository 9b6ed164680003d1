"""`glasstorch profile` and `glasstorch memory`: run a script, report on it."""
import json
import textwrap

from glasstorch import cli

SCRIPT = textwrap.dedent("""
    import sys
    import glasstorch as torch
    n = int(sys.argv[1])
    m = torch.nn.Linear(n, 4)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        m(torch.ones(8, n)).relu().sum().backward()
        opt.step()
    if len(sys.argv) > 2:
        raise SystemExit(int(sys.argv[2]))
""")


def _script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return str(path)


def test_profile_prints_the_table_and_writes_a_trace(tmp_path, capsys):
    trace = tmp_path / "out.json"
    status = cli.main(["profile", "--row-limit", "-1", "--trace", str(trace),
                       _script(tmp_path), "16"])
    out = capsys.readouterr().out
    assert status == 0
    rows = {line.strip().split("  ")[0]: line.split()[-1] for line in out.splitlines()
            if "%" in line}
    assert rows["aten::addmm"] == "3" and rows["Optimizer.step#SGD.step"] == "3"
    assert rows["Optimizer.zero_grad#SGD.zero_grad"] == "3"
    assert rows["aten::_fused_sgd_"] == "6"
    assert "Self CPU time total:" in out
    events = json.load(open(trace))["traceEvents"]
    assert sum(e["name"] == "aten::addmm" for e in events) == 3


def test_profile_passes_on_the_exit_status(tmp_path, capsys):
    assert cli.main(["profile", _script(tmp_path), "4", "3"]) == 3
    assert "aten::addmm" in capsys.readouterr().out


def test_memory_reports_peak_and_summary(tmp_path, capsys):
    assert cli.main(["memory", _script(tmp_path), "1000"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("peak cpu memory allocated: ")
    # at least the weight (4 x 1000 float32) and the input (8 x 1000) were live together
    assert "KiB" in first and float(first.split(": ")[1].split()[0]) >= 12 * 4000 / 1024
    assert "glasstorch CPU memory summary" in out
