"""Tensors built from others: diagonals, block matrices, rotations, index grids."""
