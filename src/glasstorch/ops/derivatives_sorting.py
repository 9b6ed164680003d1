"""Derivative formulas of the sorting and selection ops (ops/sorting.py)."""
