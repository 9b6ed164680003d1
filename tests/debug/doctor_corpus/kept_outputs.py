"""Bug: predictions collected during training with their graphs (no .detach())."""
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 3))
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
all_logits = []
for step in range(12):
    x, y = torch.randn(16, 12), torch.randint(0, 3, (16,))
    logits = net(x)
    all_logits.append(logits)
    loss = nn.functional.cross_entropy(logits, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
accuracy = (torch.cat(all_logits).argmax(1).shape[0])
