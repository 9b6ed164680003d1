"""Derivative formulas of the decompositions and solves (ops/linalg_decomp.py)."""
