"""Clean: fine-tuning a pretrained CNN body kept in eval mode on purpose (frozen batch norm,
requires_grad=False), only a new head trained and given to the optimizer."""
import torch
import torch.nn as nn

torch.manual_seed(0)
body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                     nn.AdaptiveAvgPool2d(1), nn.Flatten())
for p in body.parameters():
    p.requires_grad = False
body.eval()
head = nn.Linear(8, 4)
opt = torch.optim.SGD(head.parameters(), lr=0.1)
for step in range(6):
    x, y = torch.randn(8, 3, 8, 8), torch.randint(0, 4, (8,))
    with torch.no_grad():
        features = body(x)
    loss = nn.functional.cross_entropy(head(features), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
