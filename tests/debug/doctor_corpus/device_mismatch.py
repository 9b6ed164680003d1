"""Bug: the model is moved to the device, the batch is not (meta stands in for a GPU here)."""
import torch
import torch.nn as nn

device = torch.device("meta")
model = nn.Linear(3, 2).to(device)
x = torch.randn(4, 3)
out = model(x)
