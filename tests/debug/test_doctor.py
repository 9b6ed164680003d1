"""The doctor on a corpus of small training scripts: each buggy script's problem is found,
with the right kind, at the right line; each clean look-alike gives `No problems found.`."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from glasstorch.debug import doctor

CORPUS = Path(__file__).parent / "doctor_corpus"

# script -> (kind of the first finding, the text of the line it points at, or None)
BUGS = {
    "nan_log.py": ("NaN appeared", "torch.log(p)"),
    "diverging_lr.py": ("the loss diverges", "lr=0.5"),
    "never_zeroed.py": ("gradients were never zeroed", "loss.backward()"),
    "zeroed_too_rarely.py": ("gradients are zeroed too rarely", "loss.backward()"),
    "detached_layer.py": ("a parameter never receives a gradient", ".detach()"),
    "unused_layer.py": ("a parameter never receives a gradient", "self.conv2 ="),
    "unregistered_list.py": ("a parameter is not registered", "self.hidden ="),
    "unregistered_tensor.py": ("a parameter is not registered", "self.scale ="),
    "linear_shape.py": ("shape mismatch in a Linear layer", "self.fc(x)"),
    "dtype_numpy.py": ("dtype mismatch", "model(X)"),
    "device_mismatch.py": ("device mismatch", "model(x)"),
    "rnn_hidden_freed.py": ("backward through a graph already freed", "loss.backward()"),
    "double_backward.py": ("backward through a graph already freed", "loss_reg.backward()"),
    "inplace_saved.py": ("in-place write to a tensor saved for backward", "a += 1"),
    "kept_losses.py": ("the loss is kept with its graph across iterations",
                       "losses.append(loss)"),
    "retain_graph_growth.py": ("retain_graph makes each step walk all earlier ones",
                               "retain_graph=True"),
    "retain_graph_stale.py": ("retain_graph makes each step walk all earlier ones",
                              "retain_graph=True"),
    "exploding.py": ("gradients explode", "loss.backward()"),
    "vanishing.py": ("gradients vanish", "backward()"),
    "eval_in_train_mode.py": ("evaluation in training mode", "model(x_val)"),
    "loss_broadcast.py": ("silent broadcasting in a loss", "criterion(model(x), y)"),
    "softmax_into_ce.py": ("probabilities fed to a loss that expects logits",
                           "criterion(model(x), y)"),
    "scheduler_first.py": ("a scheduler stepped before the optimizer", "scheduler.step()"),
    "checkpoint_loaded_nothing.py": ("a checkpoint load that loaded nothing", "strict=False"),
    "hooks_pile_up.py": ("hooks that pile up", "register_forward_hook"),
    "train_in_eval_mode.py": ("training in evaluation mode", "model(x[i:i + 16])"),
    "not_a_leaf.py": ("a parameter never receives a gradient", "w -= lr * w.grad"),
    "no_grad_forward.py": ("a parameter never receives a gradient", "model(x)"),
    "item_retensor.py": ("a parameter never receives a gradient", ".item()"),
    "numpy_roundtrip.py": ("a parameter never receives a gradient", ".numpy()"),
    "loss_no_graph.py": ("the loss has no graph", ".item()"),
    "running_total_tensor.py": ("the loss is kept with its graph across iterations",
                                "epoch_loss += loss"),
    "nan_in_backward.py": ("NaN appeared", "torch.sqrt("),
    "nan_in_backward_module.py": ("NaN appeared", ".pow(0.5)"),
    "bce_on_raw_scores.py": ("logits fed to a loss that expects probabilities",
                             "loss_fn(model(X), y)"),
    "no_grad_forward_all.py": ("a parameter never receives a gradient", "preds = model(X)"),
    "exploding_to_nan.py": ("gradients explode", "loss.backward()"),
    "optimizer_before_model_rebuilt.py": ("the optimizer does not hold the model's parameters",
                                          "torch.optim.SGD"),
    "parameter_data_in_forward.py": ("a parameter never receives a gradient", "self.gain.data"),
    "trainer_never_zeroed.py": ("gradients were never zeroed", "loss.backward()"),
    "kept_outputs.py": ("outputs are kept with their graphs across iterations",
                        "all_logits.append(logits)"),
    "nll_on_logits.py": ("logits fed to a loss that expects log-probabilities",
                         "criterion(model(x), y)"),
    "softmax_over_batch.py": ("normalisation over the wrong dimension", "F.nll_loss"),
    "slow_data_loading.py": ("data loading starves compute", "DataLoader(SlowImages()"),
    "saved_view.py": ("a small view pins a large storage", "torch.save"),
    "views_kept_in_list.py": ("small views kept in a list pin large storages",
                              "first_class_scores.append("),
    "backward_not_called.py": ("backward() is never called", "loss.backward"),
    "zero_grad_before_step.py": ("gradients are zeroed before the step uses them",
                                 "optimizer.zero_grad()"),
    "eval_mode_from_start.py": ("training in evaluation mode", "model(x)"),
    "optimizer_never_steps.py": ("the optimizer never steps", "loss.backward()"),
    "optimizer_stale_model.py": ("the optimizer does not hold the model's parameters",
                                 "torch.optim.Adam"),
}

# crashes in one line each: (code, kind of the finding, a piece of its evidence)
CRASHES = {
    "bce_target_shape": ("nn.BCELoss()(torch.sigmoid(torch.randn(4, 1)), torch.rand(4))",
                         "shape mismatch in the loss", "torch.Size([4, 1])"),
    "bce_on_logits": ("nn.BCELoss()(torch.randn(4) * 5, torch.rand(4))",
                      "logits fed to a loss that expects probabilities", "[0, 1]"),
    "class_out_of_range": ("F.cross_entropy(torch.randn(4, 3), torch.tensor([0, 1, 2, 3]))",
                           "class index out of range", "3 classes"),
    "conv_channels": ("nn.Conv2d(3, 4, 3)(torch.randn(2, 1, 8, 8))",
                      "shape mismatch in a convolution", "[2, 1, 8, 8]"),
    "view": ("torch.randn(3, 4).t().view(12)", "a view of a non-contiguous tensor", "view()"),
    "non_leaf_to_optimizer": ("torch.optim.SGD([torch.randn(3, requires_grad=True) * 2], lr=1)",
                              "a parameter never receives a gradient", "not a leaf"),
    "non_scalar_backward": ("(torch.randn(3, requires_grad=True) * 2).backward()",
                            "backward of a non-scalar loss", "[3]"),
    "embedding_float": ("nn.Embedding(5, 2)(torch.tensor([1.0, 2.0]))", "dtype mismatch",
                        "float indices"),
    "embedding_range": ("nn.Embedding(5, 2)(torch.tensor([1, 7]))",
                        "index out of range in an Embedding", "num_embeddings=5"),
    "broadcast": ("torch.randn(2, 3) + torch.randn(4, 3)", "shape mismatch", "[4, 3]"),
    "linear_long_input": ("nn.Linear(3, 2)(torch.tensor([[1, 2, 3]]))", "dtype mismatch",
                          "int64"),
}
CLEAN = sorted(p.name for p in CORPUS.glob("clean_*.py"))


def _run(name):
    status, doc = doctor.run_script(str(CORPUS / name), print_report=False)
    return status, doc


@pytest.mark.parametrize("name", sorted(BUGS))
def test_finds_the_bug(name):
    kind, line = BUGS[name]
    status, doc = _run(name)
    kinds = [f.kind for f in doc.findings]
    assert kind in kinds, doc.report
    finding = doc.findings[kinds.index(kind)]
    assert finding.site is not None and Path(finding.site.filename).name == name, doc.report
    assert line in finding.site.source, doc.report
    assert finding.evidence and finding.cause and finding.fix


@pytest.mark.parametrize("name", sorted(CRASHES))
def test_crash_explained_by_its_cause(name):
    code, kind, evidence = CRASHES[name]
    with pytest.raises(Exception):
        with doctor(print_report=False) as doc:
            import torch
            from torch import nn
            import torch.nn.functional as F
            exec(code, {"torch": torch, "nn": nn, "F": F})
    assert doc.findings[0].kind == kind, doc.report
    assert evidence in doc.findings[0].evidence, doc.report


@pytest.mark.parametrize("name", CLEAN)
def test_clean_scripts_give_one_verdict_line(name):
    status, doc = _run(name)
    assert status == 0
    assert doc.report == "No problems found."


def test_crash_exit_status_and_torch_restored():
    torch = pytest.importorskip("torch")        # a real PyTorch is set aside, then restored
    status, doc = _run("linear_shape.py")
    assert status == 1
    import torch as again
    assert again is torch
    assert "glasstorch" not in type(again.ones(1)).__module__


def test_context_manager_and_decorator(capsys):
    with doctor() as doc:
        import torch
        x = torch.ones(3, requires_grad=True)
        (x * 2).sum().backward()
    assert doc.findings == []
    assert capsys.readouterr().out.strip() == "No problems found."

    @doctor(print_report=False)
    def train():
        import torch
        w = torch.zeros(2, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        for _ in range(4):
            (w - 1).pow(2).sum().backward()
            opt.step()
    train()
    assert capsys.readouterr().out == ""


def test_context_manager_explains_a_crash_and_reraises():
    with pytest.raises(RuntimeError, match="second time"):
        with doctor(print_report=False) as doc:
            import torch
            x = torch.ones(2, requires_grad=True)
            y = (x.exp() * 2).sum()
            y.backward()
            y.backward()
    assert doc.findings[0].kind == "backward through a graph already freed"


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2] / "src"))
    return subprocess.run([sys.executable, "-m", "glasstorch", "doctor", *args],
                          capture_output=True, text=True, env=env, timeout=120)


def test_cli_clean_script_in_process(capsys):
    from glasstorch import cli
    status = cli.main(["doctor", str(CORPUS / "clean_numpy_converted.py")])
    out = capsys.readouterr().out.splitlines()
    assert status == 0
    assert out[0].startswith("final loss") and out[-1] == "No problems found."


def test_script_gets_its_argv_main_name_and_exit_status(tmp_path, capsys):
    from glasstorch import cli
    script = tmp_path / "train.py"
    script.write_text("import sys, torch\n"
                      "print(__name__, sys.argv[1:], torch.__name__)\n"
                      "sys.exit(3)\n")
    argv = list(sys.argv)
    status = cli.main(["doctor", str(script), "--epochs", "2"])
    assert status == 3 and sys.argv == argv
    assert capsys.readouterr().out.splitlines() == [
        "__main__ ['--epochs', '2'] glasstorch", "No problems found."]


def test_cli_explains_a_crash():
    """The one subprocess: `python -m glasstorch doctor` as a user runs it."""
    r = _cli(str(CORPUS / "device_mismatch.py"))
    assert r.returncode == 1
    assert "Traceback" in r.stderr
    assert "1. device mismatch" in r.stdout
    assert "device_mismatch.py:8" in r.stdout


def test_a_failing_check_never_breaks_the_run(monkeypatch, capsys):
    import importlib
    diagnose = importlib.import_module("glasstorch.debug.doctor.diagnose")
    mode = importlib.import_module("glasstorch.debug.doctor.mode")

    def boom(*args):
        raise ValueError("boom")
    monkeypatch.setattr(mode, "all_finite", boom)
    monkeypatch.setattr(diagnose, "DETECTORS", (boom,) + diagnose.DETECTORS)
    status, doc = _run("clean_numpy_converted.py")
    assert status == 0 and doc.report == "No problems found."
    assert "internal error(s), please report" in capsys.readouterr().err


@pytest.mark.parametrize("name, made", [("device_mismatch.py", "x = torch.randn(4, 3)"),
                                        ("dtype_numpy.py", "X = torch.from_numpy(features)")])
def test_mismatch_names_where_the_input_was_made(name, made):
    status, doc = _run(name)
    assert doc.findings[0].evidence.endswith(made), doc.report
