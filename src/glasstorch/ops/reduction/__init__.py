"""Reductions and scans (sum, mean, var, cumsum, ...) and statistics over samples.

Its modules are imported by ops/families.py: the declarations, then the derivatives.
"""
