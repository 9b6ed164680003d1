"""Derivative formulas of convolution and pooling (ops/convolution.py, ops/pooling.py)."""
