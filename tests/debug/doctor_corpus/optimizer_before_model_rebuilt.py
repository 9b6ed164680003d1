"""Bug: the model is built again after the optimizer was made over the first one's parameters:
the optimizer steps tensors nobody uses."""
import torch, torch.nn as nn
def make_model():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model = make_model()
x, y = torch.randn(20, 4), torch.randn(20, 1)
for epoch in range(10):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
print(loss.item())
