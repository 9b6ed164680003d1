"""Matrix decompositions, solves, inverses and norms behind glasstorch.linalg."""
