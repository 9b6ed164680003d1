"""softmax family and scaled_dot_product_attention as in torch.nn.functional."""

__all__: list[str] = []
