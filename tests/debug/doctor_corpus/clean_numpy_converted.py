"""Clean: NumPy data converted to float32 where it is made; class labels as int64."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(0)
features = rng.normal(size=(96, 4))
labels = (features[:, 0] > 0).astype(np.int64)
X = torch.tensor(features, dtype=torch.float32)
y = torch.from_numpy(labels)
model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for epoch in range(10):
    opt.zero_grad()
    loss = nn.CrossEntropyLoss()(model(X), y)
    loss.backward()
    opt.step()
print("final loss", round(loss.item(), 3))
