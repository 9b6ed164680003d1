"""Which autograd flags are per thread and which are the process's, as PyTorch's: grad mode
and inference mode belong to a thread (another thread keeps its own), anomaly mode to the
process; and a backward that fails leaves its thread's flags as they were."""
import threading

import pytest

import glasstorch as gt
from glasstorch import overrides
from glasstorch.core.grad_state import inference_anywhere, state as grad_state

torch = pytest.importorskip("torch")


def _in_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


@pytest.mark.parametrize("lib", [gt, torch], ids=["glasstorch", "torch"])
def test_anomaly_mode_is_the_processs_and_grad_mode_the_threads(lib):
    lib.autograd.set_detect_anomaly(True)
    try:
        with lib.no_grad():
            seen = _in_thread(lambda: (lib.is_anomaly_enabled(), lib.is_grad_enabled()))
    finally:
        lib.autograd.set_detect_anomaly(False)
    assert seen == (True, True)


@pytest.mark.parametrize("lib", [gt, torch], ids=["glasstorch", "torch"])
def test_inference_mode_in_one_thread_leaves_another_threads_tensors_ordinary(lib):
    entered, release = threading.Event(), threading.Event()
    made = {}

    def worker():
        with lib.inference_mode():
            made["inner"] = lib.ones(3) * 2
            entered.set()
            release.wait()

    t = threading.Thread(target=worker)
    t.start()
    entered.wait()
    x = lib.ones(3, requires_grad=True)
    y = (x * 2).sum()              # recorded while the other thread is in inference mode
    release.set()
    t.join()
    y.backward()
    assert made["inner"].is_inference() and not y.is_inference()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_the_count_of_open_inference_blocks_returns_to_zero():
    before = inference_anywhere.blocks
    with gt.inference_mode():
        assert inference_anywhere.blocks == before + 1
        with gt.inference_mode(False):
            assert not gt.is_inference_mode_enabled()
            assert not (gt.ones(2) * 2).is_inference()
        with pytest.raises(ValueError):
            with gt.inference_mode():
                raise ValueError
        assert (gt.ones(2) * 2).is_inference()
    assert inference_anywhere.blocks == before


def test_a_failing_backward_leaves_the_threads_flags_as_they_were():
    x = gt.ones(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: 1 / 0)
    flags = (grad_state.enabled, overrides._state.subclasses_off, overrides._state.all_off,
             overrides._state.user)
    with pytest.raises(ZeroDivisionError):
        y.sum().backward()
    assert (grad_state.enabled, overrides._state.subclasses_off, overrides._state.all_off,
            overrides._state.user) == flags
    (x * 3).sum().backward()       # the engine runs again from a clean state
    assert x.grad.tolist() == [3.0, 3.0, 3.0]
