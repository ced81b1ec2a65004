"""A short tour of the `ocl` device: devices, tensors, a few ops, autograd, memory and cache stats.

    python3 demo.py [--device ocl:0]

Exits non-zero when a result on the device differs from the CPU.
Runs without any CPU fallback (it is strict-clean: PYTORCH_OCL_STRICT=1 python3 demo.py).
"""
import argparse
import sys

import torch
import pytorch_ocl  # noqa: F401  (torch autoloads it when installed; explicit for PYTHONPATH runs)

TOL = 1e-5


def section(title):
    print(f"\n== {title} ==")


def check(name, got, expected, failures, tol=TOL):
    diff = (got.detach().cpu().double() - expected.detach().cpu().double()).abs()
    err = diff.max().item() if diff.numel() else 0.0
    scale = expected.detach().abs().max().item() if expected.numel() else 0.0
    ok = err <= tol * (1.0 + scale)
    print(f"  {name:<28} max abs diff vs cpu = {err:.3e}  {'OK' if ok else 'MISMATCH'}")
    if not ok:
        failures.append(name)


def list_devices():
    section("devices")
    n = torch.ocl.device_count()
    if n == 0:
        print("  no OpenCL device found:", pytorch_ocl._C.enumeration_error() or "(no reason given)")
        return False
    for i in range(n):
        p = torch.ocl.get_device_properties(i)
        print(f"  ocl:{i}  {p.name}  [{p.platform}]  {p.type}, {p.total_memory / 2**20:.0f} MiB, "
              f"{p.compute_units} compute units")
    return True


def basic_ops(dev, failures):
    section(f"tensors and ops on {dev}")
    a_cpu = torch.arange(12, dtype=torch.float32).reshape(3, 4)  # made on the cpu, copied over
    b_cpu = torch.tensor([1.0, 2.0, 4.0, 8.0])
    a, b = a_cpu.to(dev), b_cpu.to(dev)
    print("  a =", a)
    print("  b =", b)
    check("a + b (broadcast)", a + b, a_cpu + b_cpu, failures)
    check("a * column (broadcast)", a * b[:3].reshape(3, 1), a_cpu * b_cpu[:3].reshape(3, 1), failures)
    check("a / b", a / b, a_cpu / b_cpu, failures)
    check("a - 2 * b (alpha)", torch.sub(a, b, alpha=2), torch.sub(a_cpu, b_cpu, alpha=2), failures)
    check("-a.t() * 0.5 + 1", -a.t() * 0.5 + 1, -a_cpu.t() * 0.5 + 1, failures)
    check("a[:, 1::2] / 3", a[:, 1::2] / 3, a_cpu[:, 1::2] / 3, failures)
    check("a.sum()", a.sum(), a_cpu.sum(), failures)
    check("a.sum(dim=0)", a.sum(dim=0), a_cpu.sum(dim=0), failures)
    check("a.mean(dim=1, keepdim)", a.mean(dim=1, keepdim=True), a_cpu.mean(dim=1, keepdim=True), failures)

    c = torch.ones(3, 4, device=dev)
    c.add_(a, alpha=0.5).mul_(2).div_(b)
    c_cpu = torch.ones(3, 4).add_(a_cpu, alpha=0.5).mul_(2).div_(b_cpu)
    check("in-place add_/mul_/div_", c, c_cpu, failures)
    check("zeros + full", torch.zeros(2, 3, device=dev) + torch.full((3,), 7.0, device=dev),
          torch.zeros(2, 3) + torch.full((3,), 7.0), failures)
    check("int64 -> float32 copy", torch.arange(5).to(dev).to(torch.float32) * 1.5,
          torch.arange(5).to(torch.float32) * 1.5, failures)

    torch.manual_seed(0)
    r = torch.randn(1000, 1000, device=dev)
    u = torch.rand(1000, 1000, device=dev)
    print(f"  randn(1000, 1000): mean {r.mean().item():+.4f}  std "
          f"{((r - r.mean()) * (r - r.mean())).mean().item() ** 0.5:.4f}  (expect ~0, ~1)")
    print(f"  rand(1000, 1000):  mean {u.mean().item():.4f}  (expect ~0.5)")
    if abs(r.mean().item()) > 0.01 or abs(u.mean().item() - 0.5) > 0.01:
        failures.append("random moments")


def autograd(dev, failures):
    section("autograd, checked against the cpu")
    torch.manual_seed(1)
    x_cpu = torch.randn(4, 5)
    w_cpu = torch.randn(5)

    def f(x, w):
        # broadcasting, division, negation and a mixed-dim reduction
        y = (x * w + 1.0) / (w * w + 2.0) - x.sum(dim=1, keepdim=True) * 0.1
        return (-y * y).mean() + y.sum(dim=0).mean()

    grads = []
    for d in ("cpu", dev):
        x = x_cpu.clone().to(d).requires_grad_()
        w = w_cpu.clone().to(d).requires_grad_()
        loss = f(x, w)
        loss.backward()
        grads.append((loss, x.grad, w.grad))
    (l_ref, gx_ref, gw_ref), (l, gx, gw) = grads
    print(f"  loss on {dev}: {l.item():.6f}   on cpu: {l_ref.item():.6f}")
    check("loss", l, l_ref, failures)
    check("d loss / d x", gx, gx_ref, failures)
    check("d loss / d w", gw, gw_ref, failures)


def stats(dev):
    section("memory")
    idx = torch.device(dev).index or 0
    keep = torch.empty(1 << 20, device=dev)  # 4 MiB
    torch.ocl.synchronize(idx)
    print(f"  memory_allocated:     {torch.ocl.memory_allocated(idx) / 2**20:8.2f} MiB  (with a 4 MiB tensor alive)")
    del keep
    print(f"  memory_allocated:     {torch.ocl.memory_allocated(idx) / 2**20:8.2f} MiB  (after del)")
    print(f"  max_memory_allocated: {torch.ocl.max_memory_allocated(idx) / 2**20:8.2f} MiB")
    print(f"  memory_reserved:      {torch.ocl.memory_reserved(idx) / 2**20:8.2f} MiB  (cached by the allocator)")
    torch.ocl.empty_cache()
    print(f"  after empty_cache:    {torch.ocl.memory_reserved(idx) / 2**20:8.2f} MiB reserved")

    section("kernel programs")
    s = pytorch_ocl.program_cache_stats()
    print(f"  built from source: {s['builds']}, loaded from disk cache: {s['disk_hits']}")
    print(f"  disk cache: {pytorch_ocl._C.disk_cache_path()}")

    section("cpu fallbacks")
    fb = pytorch_ocl.fallback_stats()
    print("  none: every op above ran on the device" if not fb else f"  {fb}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="ocl:0", help="device to run on (default: ocl:0)")
    args = parser.parse_args(argv)

    print(f"torch {torch.__version__}, pytorch_ocl {pytorch_ocl.__version__}, strict={pytorch_ocl.is_strict()}")
    if not list_devices():
        return 1
    failures = []
    basic_ops(args.device, failures)
    autograd(args.device, failures)
    stats(args.device)

    if failures:
        print(f"\nFAILED: {len(failures)} mismatch(es): {', '.join(failures)}")
        return 1
    print("\nOK: all results match the cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
