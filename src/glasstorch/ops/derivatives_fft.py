"""Derivative formulas of the Fourier transforms (ops/fft.py)."""
