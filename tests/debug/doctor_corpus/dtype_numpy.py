"""Bug: features built with NumPy are float64; the model is float32."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(0)
features = rng.normal(size=(64, 5))
targets = features @ np.array([1.0, 2.0, 0.0, -1.0, 0.5])
X = torch.from_numpy(features)
Y = torch.from_numpy(targets).float().unsqueeze(1)
model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(3):
    opt.zero_grad()
    loss = nn.MSELoss()(model(X), Y)
    loss.backward()
    opt.step()
