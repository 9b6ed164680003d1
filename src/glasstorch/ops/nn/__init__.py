"""The operators under torch.nn.functional: activations, convolution, pooling, normalization,
losses, distances, resampling; with their native CUDA kernels.

Its modules are imported by ops/families.py: the declarations, then the derivatives.
"""
