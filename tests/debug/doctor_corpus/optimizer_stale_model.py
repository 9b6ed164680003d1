"""Bug: the model is re-created after the optimizer was built over the first one's parameters."""
import torch
import torch.nn as nn

def make_model():
    return nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))

torch.manual_seed(0)
model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
model = make_model()
for step in range(5):
    optimizer.zero_grad()
    loss = model(torch.randn(8, 3)).pow(2).mean()
    loss.backward()
    optimizer.step()
