"""Discrete Fourier transforms behind glasstorch.fft.

Its modules are imported by ops/families.py: the declarations, then the derivatives.
"""
