"""mnist.py's model trains on ocl in strict mode: a few Adam steps on the bundled digits (the
full run is `python3 mnist.py`) lower the loss, and eval mode runs without dropout. Its kernels
build with the normal options (scripts/test.sh turns the optimizer off for the rest of the suite),
so conv, batch norm, pooling, dropout, linear, cross-entropy and Adam are checked as users run them."""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import mnist  # noqa: E402


def test_mnist_model_trains_strict_on_ocl(monkeypatch):
    monkeypatch.delenv("PYTORCH_OCL_EXTRA_BUILD_OPTIONS", raising=False)
    torch.manual_seed(0)
    xtr, ytr, _, _, _ = mnist.load_digits()
    x, y = xtr[:48].to("ocl"), ytr[:48].to("ocl")
    model = mnist.Net().to("ocl")
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    losses = []
    for _ in range(6):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses
    model.eval()
    with torch.no_grad():
        a, b = model(x[:8]), model(x[:8])
    assert torch.equal(a.cpu(), b.cpu())  # no dropout (and running batch-norm statistics) in eval mode
