"""Bug: the freed-graph error "fixed" with retain_graph=True: the second backward reaches the
first iteration's graph, whose weights the optimizer has changed since."""
import torch
import torch.nn as nn

torch.manual_seed(0)
cell = nn.RNNCell(4, 16)
readout = nn.Linear(16, 1)
opt = torch.optim.Adam(list(cell.parameters()) + list(readout.parameters()), lr=1e-3)
h = torch.zeros(2, 16)
for t in range(16):
    h = cell(torch.randn(2, 4), h)
    loss = readout(h).pow(2).mean()
    opt.zero_grad()
    loss.backward(retain_graph=True)
    opt.step()
