"""Discrete Fourier transforms behind glasstorch.fft (NumPy's pocketfft)."""
