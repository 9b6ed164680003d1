"""Runnable examples: `python -m glasstorch.examples.digits`, `python -m glasstorch.examples.chargpt`."""
