"""Derivative formulas of ops/normalization.py."""
