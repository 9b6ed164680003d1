"""Derivative formulas of ops/construction.py and ops/misc_math.py."""
