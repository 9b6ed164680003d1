"""Gather, scatter and the index_* family: reads and writes along one dimension at given indices."""
