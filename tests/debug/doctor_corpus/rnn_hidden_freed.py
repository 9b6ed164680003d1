"""Bug: an RNN's hidden state carried across batches without detach: the second backward
reaches the first batch's freed graph."""
import torch
import torch.nn as nn

torch.manual_seed(0)
rnn = nn.RNN(input_size=3, hidden_size=8, batch_first=True)
head = nn.Linear(8, 1)
params = list(rnn.parameters()) + list(head.parameters())
opt = torch.optim.SGD(params, lr=0.01)
h = torch.zeros(1, 4, 8)
for i in range(5):
    x = torch.randn(4, 6, 3)
    out, h = rnn(x, h)
    loss = head(out[:, -1]).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
