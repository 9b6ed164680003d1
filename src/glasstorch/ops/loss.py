"""Softmax, log-softmax, loss functions and scaled dot-product attention."""
