"""Bug: a checkpoint saved as {'model': ..., 'epoch': ...} loaded with strict=False straight
into the model: nothing matches, nothing is loaded, no error."""
import io
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(4):
    opt.zero_grad()
    model(torch.randn(8, 3)).pow(2).mean().backward()
    opt.step()
buffer = io.BytesIO()
torch.save({"model": model.state_dict(), "epoch": 4}, buffer)
buffer.seek(0)
restored = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
restored.load_state_dict(torch.load(buffer), strict=False)
