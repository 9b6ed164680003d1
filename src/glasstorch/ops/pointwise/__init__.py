"""Pointwise ops: arithmetic, math and special functions, comparisons, logical and bitwise ops.

Its modules are imported by ops/families.py: the declarations, then the derivatives.
"""
