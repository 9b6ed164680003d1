"""Derivative formulas of ops/sampling.py."""
