"""Linear algebra: matrix products, decompositions, solves, inverses and norms.

Its modules are imported by ops/families.py: the declarations, then the derivatives.
"""
