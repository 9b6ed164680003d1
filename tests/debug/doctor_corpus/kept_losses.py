"""Bug: every loss tensor appended to a list: each keeps its graph alive."""
import torch
import torch.nn as nn

def train():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    losses = []
    for step in range(12):
        x = torch.randn(16, 8)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss)
    return losses

if __name__ == "__main__":
    train()
