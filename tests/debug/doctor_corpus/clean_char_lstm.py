"""Clean: a character LSTM language model, its state detached between chunks, gradients
clipped, sampling probabilities under no_grad in eval mode."""
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
text = "hello world, hello doctor. " * 10
chars = sorted(set(text)); idx = {c: i for i, c in enumerate(chars)}
data = torch.tensor([idx[c] for c in text])
class LM(nn.Module):
    def __init__(self, V, H=32):
        super().__init__()
        self.emb = nn.Embedding(V, 16); self.lstm = nn.LSTM(16, H, batch_first=True); self.fc = nn.Linear(H, V)
    def forward(self, x, state=None):
        out, state = self.lstm(self.emb(x), state)
        return self.fc(out), state
model = LM(len(chars)); opt = torch.optim.Adam(model.parameters(), lr=1e-2)
state = None
for step in range(10):
    i = (step * 16) % (len(data) - 17)
    x, y = data[i:i + 16].unsqueeze(0), data[i + 1:i + 17].unsqueeze(0)
    logits, state = model(x, state)
    state = tuple(s.detach() for s in state)
    loss = F.cross_entropy(logits.view(-1, len(chars)), y.view(-1))
    opt.zero_grad(); loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 5.0); opt.step()
model.eval()
with torch.no_grad():
    out, _ = model(data[:5].unsqueeze(0))
    probs = F.softmax(out[0, -1], dim=-1)
