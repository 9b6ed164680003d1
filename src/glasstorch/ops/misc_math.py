"""Cumulative extrema, differences, products of structure (kron, trace), comparisons with tolerance."""
