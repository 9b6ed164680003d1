"""Sorting and selection: sort, topk, kthvalue, median, mode, unique, histograms.

Its modules are imported by ops/families.py: the declarations, then the derivatives.
"""
