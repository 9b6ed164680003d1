"""Bug: a forward hook registered inside the training loop, never removed."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(5, 10), nn.ReLU(), nn.Linear(10, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
activations = []
for step in range(10):
    model[0].register_forward_hook(lambda m, i, o: activations.append(o.detach().mean()))
    opt.zero_grad()
    loss = model(torch.randn(8, 5)).pow(2).mean()
    loss.backward()
    opt.step()
