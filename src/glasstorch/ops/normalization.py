"""Batch, layer, group, instance and RMS normalization; embeddings."""
