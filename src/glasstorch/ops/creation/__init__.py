"""Tensors made from sizes, data, ranges or other tensors: factories, ranges, constructions.

Its modules are imported by ops/families.py: the declarations, then the derivatives.
"""
