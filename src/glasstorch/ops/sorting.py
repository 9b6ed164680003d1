"""Sorting and selection: sort, topk, kthvalue, median, mode, unique, searchsorted, histograms."""
