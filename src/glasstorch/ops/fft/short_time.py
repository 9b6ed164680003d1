"""torch.stft and torch.istft: the short-time Fourier transform and its inverse.

Both are composites, as in PyTorch: stft cuts the (padded) signal into overlapping frames
with a strided `unfold` view, multiplies by the window and runs `_fft_r2c`/`_fft_c2c` over the
frames; istft runs `_fft_c2r`/`_fft_c2c` back, windows the frames again and overlap-adds them
(`index_add`), dividing by the overlap-added squared window. Autograd comes from those ops.
"""
from __future__ import annotations

import warnings

from ...core.tensor import Tensor
from ..creation.factories import ones, zeros
from ..creation.ranges import arange
from ..indexing.scatter import index_add
from ..nn.sampling import constant_pad_nd, pad
from ..registry import composite
from ..shape.views import view_as_real
from .transforms import _fft_c2c, _fft_c2r, _fft_r2c

_NONE, _BY_ROOT_N, _BY_N = 0, 1, 2


def _describe(t: Tensor, style: str = "torch.{}Tensor") -> str:
    """How PyTorch names a tensor in stft's messages: torch.FloatTensor[2, 100] (istft's
    say CPUComplexFloatType[2, 9, 26])."""
    kind = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "complex64": "ComplexFloat", "complex128": "ComplexDouble", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
    name = kind.get(str(t.dtype).split(".")[-1], str(t.dtype))
    return f"{style.format(name)}[{', '.join(str(s) for s in t.shape)}]"


def _window_to_n_fft(window, win_length: int, n_fft: int, like: Tensor):
    """The window, or ones when none, zero-padded on both sides to n_fft (centred)."""
    if window is None:
        window = ones(win_length, dtype=like.dtype.to_real(), device=like.device)
    if win_length == n_fft:
        return window
    left = (n_fft - win_length) // 2
    return constant_pad_nd(window, [left, n_fft - win_length - left], 0)


@composite(method=True)
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """Short-time Fourier transform of a 1-D signal or a batch of them: (*, freq, frames)."""
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:
        dims = input.dim()
        shift = n_fft // 2
        padded = pad(input.view([1] * (3 - dims) + list(input.shape)), [shift, shift],
                     pad_mode)
        input = padded.view(tuple(padded.shape)[-dims:])
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    wants_complex = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None and not wants_complex:
        raise RuntimeError("stft requires the return_complex parameter be given for real "
                           "inputs, and will further require that return_complex=True in a "
                           "future PyTorch release.")
    return_complex = wants_complex if return_complex is None else return_complex
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.\nNote: you can still call "
                      "torch.view_as_real on the complex output to recover the old return "
                      "format.", UserWarning, stacklevel=2)
    prefix = (f"stft({_describe(input)}, n_fft={n_fft}, hop_length={hop_length}, "
              f"win_length={win_length}, window="
              f"{'None' if window is None else _describe(window).replace('[', '{[') + '}'}, "
              f"normalized={int(bool(normalized))}, onesided={onesided}, "
              f"return_complex={int(return_complex)}, align_to_window={align_to_window}) : ")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(prefix + "expected a tensor of floating point or complex values")
    if input.dim() not in (1, 2):
        raise RuntimeError(prefix + "expected a 1D or 2D tensor")
    signal = input if input.dim() == 2 else input.unsqueeze(0)
    length = signal.shape[1]
    if not 0 < n_fft <= length:
        raise RuntimeError(prefix + f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise RuntimeError(prefix + f"expected hop_length > 0, but got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(prefix + "expected 0 < win_length <= n_fft, but got "
                           f"win_length={win_length}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise RuntimeError(prefix + "expected a 1D window tensor of size equal to "
                           f"win_length={win_length}, but got window with size "
                           f"[{', '.join(str(s) for s in window.shape)}]")
    if align_to_window and win_length < n_fft:
        # Frames start where the window starts: cut win_length samples, then centre them.
        frames = signal.unfold(-1, win_length, hop_length)
        if window is not None:
            frames = frames * window
        left = (n_fft - win_length) // 2
        frames = constant_pad_nd(frames, [left, n_fft - win_length - left], 0)
    else:
        frames = signal.unfold(-1, n_fft, hop_length)           # (batch, frames, n_fft)
        if window is not None:
            frames = frames * _window_to_n_fft(window, win_length, n_fft, signal)
    norm = _BY_ROOT_N if normalized else _NONE
    if frames.dtype.is_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        spectrum = _fft_c2c(frames, [2], norm, True)
    else:
        spectrum = _fft_r2c(frames, [2], norm, True if onesided is None else bool(onesided))
    spectrum = spectrum.transpose(1, 2)
    if input.dim() == 1:
        spectrum = spectrum.squeeze(0)
    return spectrum if return_complex else view_as_real(spectrum)


def _overlap_add(frames: Tensor, hop_length: int, total: int) -> Tensor:
    """Sum of frames (batch, n_frames, n_fft) placed hop_length apart: (batch, total)."""
    n_frames, n_fft = frames.shape[1], frames.shape[2]
    positions = (arange(n_frames, device=frames.device) * hop_length).unsqueeze(1) \
        + arange(n_fft, device=frames.device).unsqueeze(0)
    out = zeros((frames.shape[0], total), dtype=frames.dtype, device=frames.device)
    return index_add(out, 1, positions.reshape(-1), frames.reshape(frames.shape[0], -1))


@composite(method=True)
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """The inverse of stft: the signal whose stft `input` is (least squares where the
    frames overlap)."""
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    prefix = (f"istft({_describe(input, 'CPU{}Type')}, n_fft={n_fft}, hop_length={hop_length}, "
              f"win_length={win_length}, window="
              f"{'None' if window is None else _describe(window).replace('[', '{[') + '}'}, "
              f"center={int(bool(center))}, normalized={int(bool(normalized))}, "
              f"onesided={onesided if onesided is None else int(bool(onesided))}, "
              f"length={length}, return_complex={int(bool(return_complex))}) : ")
    if input.numel() == 0:
        raise RuntimeError(prefix + "input tensor cannot be empty.")
    if input.dim() not in (2, 3):
        raise RuntimeError(prefix + "expected a tensor with 3 or 4 dimensions, but got "
                           f"{input.dim() + 1}")
    batched = input.dim() == 3
    spectrum = input if batched else input.unsqueeze(0)   # (batch, freq, frames)
    fft_size, n_frames = spectrum.shape[1], spectrum.shape[2]
    onesided = fft_size != n_fft if onesided is None else bool(onesided)
    if onesided and fft_size != n_fft // 2 + 1:
        raise RuntimeError(prefix + "expected the frequency dimension (3rd to the last) of the "
                           "input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                           f"{fft_size}")
    if not onesided and fft_size != n_fft:
        raise RuntimeError(prefix + "expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop_length <= win_length:
        raise RuntimeError(prefix + "expected 0 < hop_length <= win_length")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(prefix + "expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise RuntimeError(prefix + "Invalid window shape. window has to be 1D and length of "
                           "`win_length`")
    full_window = _window_to_n_fft(window, win_length, n_fft, spectrum)
    frames = spectrum.transpose(1, 2)                     # (batch, frames, freq)
    norm = _BY_ROOT_N if normalized else _BY_N
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = _fft_c2c(frames, [2], norm, False)
    else:
        if window is not None and window.dtype.is_complex:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            frames = frames.narrow(-1, 0, n_fft // 2 + 1)
        frames = _fft_c2r(frames, [2], norm, n_fft)
    total = n_fft + hop_length * (n_frames - 1)
    signal = _overlap_add(frames * full_window, hop_length, total)
    envelope = _overlap_add(full_window.square().expand(1, n_frames, n_fft), hop_length, total)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    end = min(end, total)
    signal, envelope = signal[:, start:end], envelope[:, start:end]
    if bool((envelope.abs() < 1e-11).any()):
        raise RuntimeError(prefix.rstrip(" :") + " window overlap add min: 1")
    signal = signal / envelope
    if length is not None and start + length > total:
        signal = constant_pad_nd(signal, [0, start + length - total], 0)
    return signal if batched else signal.squeeze(0)
