"""The built-in networks of `python -m pytorch_ocl cache warmup` and benchmarks/cold_start.py.

Written with torch.nn only (no torchvision or transformers needed): a ResNet-18 with torchvision's
layer layout, and a small GPT-2-style decoder (token + position embeddings, pre-norm blocks with
causal scaled_dot_product_attention and a GELU MLP, tied output head). Each entry builds the model
and one training step (forward, loss, backward, optimizer step) for a device.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class _BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """torchvision's resnet18 layout (7x7 stem, max pool, 4 stages of 2 basic blocks, avg pool, fc)."""

    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [_BasicBlock(cin, cout, stride), _BasicBlock(cout, cout, 1)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class _GptBlock(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.out = nn.Linear(4 * hidden, hidden)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        B, L, H = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, L, 3, self.heads, H // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.1 if self.training else 0.0)
        x = x + self.drop(self.proj(a.transpose(1, 2).reshape(B, L, H)))
        return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh")))


class TinyGpt(nn.Module):
    """A GPT-2-style decoder; GPT-2 small is layers=12, hidden=768, heads=12, vocab=50257."""

    def __init__(self, layers=2, hidden=128, heads=4, vocab=1000, positions=256):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(positions, hidden)
        self.blocks = nn.Sequential(*[_GptBlock(hidden, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(hidden)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        return self.ln(self.blocks(x)) @ self.tok.weight.t()


def resnet18_step(device, batch=4, size=64):
    """One SGD training step of ResNet18 on `batch` images of size x size."""
    torch.manual_seed(0)
    model = ResNet18().to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, size, size).to(device)
    y = torch.randint(0, 1000, (batch,)).to(device)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def gpt_step(device, layers=2, hidden=128, heads=4, vocab=1000, batch=2, seq=64):
    """One AdamW training step of TinyGpt (next-token cross-entropy)."""
    torch.manual_seed(0)
    model = TinyGpt(layers, hidden, heads, vocab, max(256, seq)).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, vocab, (batch, seq + 1)).to(device)

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(ids[:, :-1])
        F.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1)).backward()
        opt.step()

    return step


# name -> (description, step factory)
BUILTIN = {
    "resnet18": ("ResNet-18, batch 4, 64x64 images, SGD", resnet18_step),
    "gpt": ("GPT-2-style decoder, 2 layers, hidden 128, batch 2 x 64 tokens, AdamW", gpt_step),
}
