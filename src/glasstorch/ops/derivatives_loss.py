"""Derivative formulas of ops/loss.py."""
