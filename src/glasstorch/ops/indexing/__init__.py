"""Indexing: __getitem__/__setitem__, index ops, gather/scatter and the index_* family.

Its modules are imported by ops/families.py: the declarations, then the derivatives.
"""
