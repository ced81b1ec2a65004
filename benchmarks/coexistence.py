"""A CUDA training step must give the same result with ocl work in the same process.

Runs one forward/backward/SGD step of a small MLP on CUDA before and after importing
pytorch_ocl and running ocl ops, and compares parameters bit for bit.
"""
import sys

import torch


def cuda_step(seed: int):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(32, 64, device="cuda")
    y = torch.randint(0, 10, (32,), device="cuda")
    for _ in range(3):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    return [p.detach().cpu() for p in model.parameters()], float(loss)


def main():
    if not torch.cuda.is_available():
        print("coexistence: no CUDA device; nothing to check")
        return 0
    before, loss_before = cuda_step(0)
    import pytorch_ocl  # noqa: F401

    a = torch.randn(1000, device="ocl")
    b = (a * 2 + 1).sum().item()
    after, loss_after = cuda_step(0)
    same = all(torch.equal(p, q) for p, q in zip(before, after))
    print(f"coexistence: cuda loss before={loss_before:.6f} after={loss_after:.6f} params identical={same}; ocl sum={b:.3f}")
    return 0 if same and loss_before == loss_after else 1


if __name__ == "__main__":
    sys.exit(main())
