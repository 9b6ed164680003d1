"""The examples train for real (shortened here), save a checkpoint and resume from it."""
import sys

import pytest

pytest.importorskip("tqdm")

from glasstorch.examples import chargpt, digits  # noqa: E402


def test_digits_learns_and_resumes(tmp_path, capsys):
    ckpt = str(tmp_path / "digits.pt")
    accuracy = digits.main(["--epochs", "2", "--checkpoint", ckpt])
    assert accuracy > 0.85                 # two epochs already separate most digits
    resumed = digits.main(["--epochs", "3", "--checkpoint", ckpt, "--resume"])
    out = capsys.readouterr().out
    assert "resumed from" in out and "after epoch 2" in out and "test accuracy:" in out
    assert resumed > 0.85


def test_digits_learns_under_bfloat16_autocast(tmp_path):
    accuracy = digits.main(["--epochs", "2", "--amp", "--checkpoint",
                            str(tmp_path / "digits.pt")])
    assert accuracy > 0.85


def test_digits_resume_without_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="no checkpoint"):
        digits.main(["--checkpoint", str(tmp_path / "missing.pt"), "--resume"])


def test_chargpt_trains_samples_and_resumes(tmp_path, capsys):
    ckpt = str(tmp_path / "gpt.pt")
    first = chargpt.main(["--steps", "6", "--sample-length", "20", "--checkpoint", ckpt])
    second = chargpt.main(["--steps", "12", "--sample-length", "20", "--checkpoint", ckpt,
                           "--resume"])
    out = capsys.readouterr().out
    assert "resumed from" in out and "at step 6" in out and "sample:\ndef " in out
    assert second < first < 6.0            # below log(vocab): it learned something


def test_digits_resume_past_the_total_says_how_to_train_more(tmp_path, capsys):
    ckpt = str(tmp_path / "digits.pt")
    digits.main(["--epochs", "1", "--checkpoint", ckpt])
    out = capsys.readouterr().out
    assert "epoch 1/1: loss" in out and "test accuracy" in out       # printed every epoch
    digits.main(["--epochs", "1", "--checkpoint", ckpt, "--resume"])
    out = capsys.readouterr().out
    assert "already trained 1 epochs" in out and "--epochs 6" in out
    assert "trained 0 epochs" in out


@pytest.mark.parametrize("example", [digits, chargpt])
def test_help_shows_the_whole_description_and_every_default(example, capsys):
    with pytest.raises(SystemExit):
        example.main(["--help"])
    out = capsys.readouterr().out
    assert example.__doc__.split()[-1] in out                       # not cut at a colon
    assert f"usage: python -m {example.__name__}" in out
    assert "(default: 0.003)" in out
    assert "in all" in out                                          # --resume: a total


def test_examples_without_tqdm_name_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)                  # as if not installed
    with pytest.raises(SystemExit, match=r"glasstorch\[examples\]"):
        digits.main(["--epochs", "1", "--checkpoint", str(tmp_path / "d.pt")])
