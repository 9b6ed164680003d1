"""Activation functions and dropout."""
