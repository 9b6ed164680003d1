"""Random sampling: in-place samplers, sampling functions on tensors, random factories.

Its modules are imported by ops/families.py: the declarations, then the derivatives.
"""
