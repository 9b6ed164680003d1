"""Derivative formulas of the activations (ops/activation.py)."""
