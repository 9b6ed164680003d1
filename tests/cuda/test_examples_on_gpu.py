"""The examples train with `--device cuda`, every training op on a GPU kernel (a host-path
op would warn, and warnings are errors here), and the caching allocator stops asking the
driver for memory once the loop is steady."""
import warnings

import glasstorch as gt
from glasstorch.examples import chargpt, digits


def test_digits_trains_on_the_gpu_without_the_host_path(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        accuracy = digits.main(["--device", "cuda", "--epochs", "2",
                                "--checkpoint", str(tmp_path / "digits.pt")])
    assert accuracy > 0.8
    stats = gt.cuda.memory_stats()
    assert stats["segment.all.allocated"] * 100 < stats["allocation.all.allocated"]


def test_chargpt_trains_and_samples_on_the_gpu(tmp_path):
    loss = chargpt.main(["--device", "cuda", "--steps", "5", "--sample-length", "5",
                         "--checkpoint", str(tmp_path / "chargpt.pt")])
    assert 0 < loss < 5


def test_digits_trains_under_float16_autocast_with_a_grad_scaler(tmp_path):
    accuracy = digits.main(["--device", "cuda", "--epochs", "2", "--amp",
                            "--checkpoint", str(tmp_path / "digits.pt")])
    assert accuracy > 0.8
