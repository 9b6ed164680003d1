"""Max, average, adaptive and power-average pooling over strided windows."""
