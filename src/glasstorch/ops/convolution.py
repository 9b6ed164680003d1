"""Convolution and transposed convolution through strided windows (im2col) and BLAS."""
