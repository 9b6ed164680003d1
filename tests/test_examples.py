"""The examples train for real (shortened here), save a checkpoint and resume from it."""
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
