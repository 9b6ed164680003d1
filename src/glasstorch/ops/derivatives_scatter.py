"""Derivative formulas of the gather/scatter/index_* ops (ops/scatter.py)."""
