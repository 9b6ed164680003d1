"""torch.stft / torch.istft against PyTorch: every argument, the round trip, PyTorch's
errors, OpInfo's complex samples (the op_db walk runs only real dtypes), gradients."""
import warnings

import numpy as np
import pytest

import glasstorch as gt

torch = pytest.importorskip("torch")
cmi = pytest.importorskip("torch.testing._internal.common_methods_invocations")
from tests.ops.test_op_db import compare, convert  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SIGNAL = np.random.default_rng(0).standard_normal((2, 64))


def _both(f, x=SIGNAL):
    ours, theirs = f(gt, gt.tensor(x)), f(torch, torch.tensor(x))
    compare(ours, theirs, "stft")
    return ours


def _hann(lib, n):
    return lib.hann_window(n, dtype=lib.float64)


CASES = {
    "default": lambda L, t: L.stft(t, 16, return_complex=True),
    "one signal, real view": lambda L, t: L.stft(t[0], 16, return_complex=False),
    "hop, short window, normalized": lambda L, t: L.stft(
        t, 16, hop_length=5, win_length=10, window=_hann(L, 10), normalized=True,
        return_complex=True),
    "two-sided, not centred": lambda L, t: L.stft(t, 16, center=False, onesided=False,
                                                  return_complex=True),
    "odd n_fft, constant padding": lambda L, t: L.stft(t, 15, pad_mode="constant",
                                                       return_complex=True),
    "replicate padding": lambda L, t: L.stft(t, 12, pad_mode="replicate", return_complex=True),
    "complex input": lambda L, t: L.stft(t * (1 + 2j), 16),
    "aligned to the window": lambda L, t: L.stft(t, 8, hop_length=3, win_length=4,
                                                 center=False, return_complex=True,
                                                 align_to_window=True),
    "method": lambda L, t: t.stft(8, return_complex=True),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_stft(case):
    _both(CASES[case])


ROUND_TRIPS = {
    "default": (dict(n_fft=16), {}),
    "window, length shorter": (dict(n_fft=16, window="hann"), dict(length=50)),
    "length longer (zero-padded)": (dict(n_fft=16, window="hann"), dict(length=80)),
    "hop and win_length, normalized": (dict(n_fft=16, hop_length=3, win_length=12,
                                            normalized=True), {}),
    "not centred": (dict(n_fft=16, center=False), {}),
    "two-sided to complex": (dict(n_fft=16, onesided=False), dict(return_complex=True)),
}


@pytest.mark.parametrize("case", ROUND_TRIPS, ids=list(ROUND_TRIPS))
def test_istft_inverts_stft(case):
    forward, extra = ROUND_TRIPS[case]

    def run(L, t):
        kw = dict(forward)
        if kw.get("window") == "hann":
            kw["window"] = _hann(L, kw["n_fft"])
        spectrum = L.stft(t, return_complex=True, **kw)
        kw.pop("onesided", None)
        return L.istft(spectrum, **kw, **extra)

    signal = _both(run)
    if not extra:
        n = signal.shape[-1]                   # every sample a frame covers comes back
        np.testing.assert_allclose(signal.numpy(), SIGNAL[:, :n], atol=1e-12)


@pytest.mark.parametrize("name", ["stft", "istft"])
def test_opinfo_complex_samples(name):
    info = next(i for i in cmi.op_db if i.name == name)
    compared = 0
    for sample in info.sample_inputs("cpu", torch.complex128):
        try:
            expected = info.op(sample.input, *sample.args, **sample.kwargs)
        except RuntimeError:
            continue
        got = getattr(gt, name)(convert(sample.input), *convert(sample.args),
                                **convert(sample.kwargs))
        compare(got, expected, f"{name} {sample.kwargs}")
        compared += 1
    assert compared >= 5


def _message(f):
    for lib in (gt, torch):
        with pytest.raises(RuntimeError) as info:
            f(lib, lib.tensor(SIGNAL, dtype=lib.float32))
        yield str(info.value)


ERRORS = {
    "return_complex omitted": lambda L, t: L.stft(t, 16),
    "n_fft too large": lambda L, t: L.stft(t, 80, center=False, return_complex=True),
    "hop_length 0": lambda L, t: L.stft(t, 16, hop_length=0, return_complex=True),
    "win_length > n_fft": lambda L, t: L.stft(t, 16, win_length=20, return_complex=True),
    "window size": lambda L, t: L.stft(t, 16, win_length=8, window=L.ones(7),
                                       return_complex=True),
    "3-D input": lambda L, t: L.stft(t[None], 16, return_complex=True),
    "integer input": lambda L, t: L.stft(t.long(), 16, return_complex=True),
    "onesided complex": lambda L, t: L.stft(t + 0j, 16, onesided=True),
    "align_to_window centred": lambda L, t: L.stft(t, 16, return_complex=True,
                                                   align_to_window=True),
    "istft of a real tensor": lambda L, t: L.istft(t, 16),
    "istft frequency size": lambda L, t: L.istft(L.stft(t, 16, return_complex=True), 16,
                                                 onesided=False),
    "istft hop_length": lambda L, t: L.istft(L.stft(t, 16, return_complex=True), 16,
                                             hop_length=20),
    "istft window shape": lambda L, t: L.istft(L.stft(t, 16, return_complex=True), 16,
                                               window=L.ones(5)),
    "istft zero window": lambda L, t: L.istft(L.stft(t, 16, return_complex=True), 16,
                                              window=L.zeros(16)),
    "istft empty": lambda L, t: L.istft(L.stft(t, 16, return_complex=True)[..., :0], 16),
}


@pytest.mark.parametrize("case", ERRORS, ids=list(ERRORS))
def test_errors(case):
    ours, theirs = _message(ERRORS[case])
    tail = theirs.split(") : ")[-1].split("\n")[0]
    assert tail.split(": 1")[0] in ours, (ours, theirs)


def test_gradients():
    x = gt.tensor(SIGNAL[0, :24], requires_grad=True)
    window = _hann(gt, 8)
    assert gt.autograd.gradcheck(
        lambda t: gt.view_as_real(gt.stft(t, 8, hop_length=3, window=window,
                                          return_complex=True)), (x,))
    spectrum = gt.stft(x.detach(), 8, window=window, return_complex=True).requires_grad_()
    assert gt.autograd.gradcheck(lambda s: gt.istft(s, 8, window=window), (spectrum,))


def test_gradients_on_a_strided_signal():
    base = gt.tensor(SIGNAL[0, :48], requires_grad=True)
    window = _hann(gt, 8)
    assert not base[::2].is_contiguous()
    assert gt.autograd.gradcheck(
        lambda t: gt.view_as_real(gt.stft(t[::2], 8, hop_length=3, window=window,
                                          return_complex=True)), (base,))
