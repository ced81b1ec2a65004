"""Train a small CNN on handwritten digits on an ocl device (the project's main job).

Data: real MNIST when its IDX files are in --data (train-images-idx3-ubyte[.gz], ...), or
through torchvision when it imports and has them; otherwise, so that it runs offline on a
fresh machine, scikit-learn's bundled 8x8 digits upsampled to 28x28 (it says which it uses).

    python3 mnist.py                       # ocl:0, bundled digits unless MNIST is found
    python3 mnist.py --device cpu          # the same on the CPU
    python3 mnist.py --save model.pt       # keep the trained weights; --load model.pt evaluates them
"""
import argparse
import gzip
import os
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm


class Net(nn.Module):
    """conv-bn-relu-pool x2, dropout, linear: the building blocks of a classic CNN."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(32 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(self.drop(torch.flatten(x, 1)))


def _read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        magic, n = struct.unpack(">II", f.read(8))
        dims = [struct.unpack(">I", f.read(4))[0] for _ in range((magic & 0xFF) - 1)]
        return torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).reshape(n, *dims)


def _find(data_dir, stem):
    for name in (stem, stem + ".gz"):
        for sub in ("", "MNIST/raw"):
            p = os.path.join(data_dir, sub, name)
            if os.path.exists(p):
                return p
    return None


def load_mnist_idx(data_dir):
    stems = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]
    paths = [_find(data_dir, s) for s in stems]
    if not all(paths):
        return None
    xtr, ytr, xte, yte = (_read_idx(p) for p in paths)
    norm = lambda x: ((x.float() / 255.0) - 0.1307).div(0.3081).unsqueeze(1)  # noqa: E731
    return norm(xtr), ytr.long(), norm(xte), yte.long(), f"MNIST (IDX files in {data_dir})"


def load_digits():
    from sklearn.datasets import load_digits as sk_digits

    d = sk_digits()
    x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0
    x = F.interpolate(x, size=(28, 28), mode="bilinear", align_corners=False)
    x = (x - x.mean()) / x.std()
    y = torch.tensor(d.target, dtype=torch.long)
    g = torch.Generator().manual_seed(0)
    perm = torch.randperm(len(y), generator=g)
    n_test = len(y) // 5
    te, tr = perm[:n_test], perm[n_test:]
    return x[tr], y[tr], x[te], y[te], "scikit-learn bundled digits (8x8 upsampled to 28x28; no MNIST found)"


def load_data(data_dir):
    found = load_mnist_idx(data_dir)
    if found is None:
        try:
            import torchvision  # noqa: F401

            from torchvision.datasets import MNIST

            MNIST(data_dir, train=True, download=False)
            found = load_mnist_idx(data_dir)
        except Exception:
            found = None
    return found or load_digits()


def evaluate(model, x, y, device, batch):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), batch):
            out = model(x[i:i + batch].to(device))
            correct += (out.cpu().argmax(1) == y[i:i + batch]).sum().item()
    return correct / len(y)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="ocl:0")
    ap.add_argument("--data", default="data")
    ap.add_argument("--epochs", type=int, default=5)  # >= 97% on the bundled digits from epoch 3 on
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--save", help="write the trained weights to this file")
    ap.add_argument("--load", help="load weights from this file and only evaluate")
    ap.add_argument("--min-accuracy", type=float, default=0.0, help="exit non-zero below this test accuracy")
    args = ap.parse_args(argv)

    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    xtr, ytr, xte, yte, source = load_data(args.data)
    print(f"data: {source}: {len(ytr)} training and {len(yte)} test images")
    print(f"device: {device}" + (f" ({torch.ocl.get_device_name(device.index or 0)})" if device.type == "ocl" else ""))
    model = Net().to(device)
    if args.load:
        model.load_state_dict(torch.load(args.load, map_location=device))
        acc = evaluate(model, xte, yte, device, 256)
        print(f"test accuracy: {acc * 100:.2f}%")
        return 0 if acc >= args.min_accuracy else 1

    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    start = time.perf_counter()
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(len(ytr))
        bar = tqdm(range(0, len(ytr), args.batch), desc=f"epoch {epoch + 1}/{args.epochs}", unit="batch",
                   file=sys.stdout, dynamic_ncols=True)
        seen, t0 = 0, time.perf_counter()
        for i in bar:
            idx = perm[i:i + args.batch]
            x, y = xtr[idx].to(device), ytr[idx].to(device)
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            seen += len(idx)
            if (i // args.batch) % 5 == 0:
                bar.set_postfix(loss=f"{loss.item():.3f}", img_s=f"{seen / (time.perf_counter() - t0):.0f}")
        acc = evaluate(model, xte, yte, device, 256)
        print(f"epoch {epoch + 1}: test accuracy {acc * 100:.2f}%")
    print(f"training time: {time.perf_counter() - start:.1f} s; test accuracy: {acc * 100:.2f}%")
    if args.save:
        torch.save(model.state_dict(), args.save)
        print(f"saved weights to {args.save}")
    return 0 if acc >= args.min_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
