"""Copies and casts: copy_, fill_, clone, contiguous, to and the dtype shorthands.

Its modules are imported by ops/families.py: the declarations, then the derivatives.
"""
