"""Check whole networks on a device against the CPU: forward (eval and train mode) and every
parameter gradient (in both modes), from the same initial weights and inputs.

    python3 validate_network.py --device ocl:0                 # torchvision models if it imports
    python3 validate_network.py --models tiny_resnet,tiny_vgg  # the project's own (tests/models.py)

Reference and tolerance. Each network also runs on the CPU in float64 (the reference) and in
float32 (the yardstick: what an accurate float32 implementation with another summation order
gets). For every compared tensor, with err(t) = max|t - ref64| and scale = max|ref64|:

    pass  iff  err(device) <= max(rtol * scale + atol, factor * err(cpu float32))

rtol = 2e-3, atol = 1e-4, factor = 10 by default. The first term covers well-conditioned
tensors: the device sums convolutions and matrix products in another order, so errors grow with
the reduction length, and 2e-3 of the largest magnitude still catches any wrong kernel (those
give O(1) relative errors). The second term is needed for real networks in train mode at small
batch: a bias followed by a train-mode batch norm has an exact gradient of zero (the norm removes
any shift), and batch statistics over few values make deep gradients ill-conditioned; there the
CPU's own float32 result is off by 10-100% of the float64 one (measured on torchvision's
resnet18/mobilenet_v2 at batch 2), and the device is held to the same order of error.
Train mode runs with dropout off (p=0) and stochastic depth off, because the device and the CPU
draw different random masks; batch norm uses batch statistics as usual.
Exit code: 0 when every network passes, 1 otherwise.
"""
import argparse
import copy
import os
import sys
import time

import torch
from tqdm import tqdm

TORCHVISION_MODELS = [
    "alexnet", "resnet18", "resnet50", "convnext_small", "vgg16", "squeezenet1_0", "googlenet", "densenet161",
    "inception_v3", "shufflenet_v2_x1_0", "mobilenet_v2", "mobilenet_v3_large", "mobilenet_v3_small",
    "resnext50_32x4d", "wide_resnet50_2", "mnasnet1_0", "efficientnet_b0", "efficientnet_b4", "regnet_y_400mf",
]


def available_models():
    """name -> (constructor, input shape); torchvision's when it imports, else tests/models.py."""
    try:
        import torchvision.models as tvm

        out = {}
        for name in TORCHVISION_MODELS:
            size = 299 if name == "inception_v3" else 224
            kwargs = {"aux_logits": False, "init_weights": True} if name in ("inception_v3", "googlenet") else {}
            out[name] = (lambda n=name, k=kwargs: getattr(tvm, n)(weights=None, **k), (2, 3, size, size))
        return out, "torchvision"
    except Exception:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests"))
        from models import MODELS

        return dict(MODELS), "tests/models.py (torchvision does not import)"


def no_dropout(model):
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
        elif type(m).__name__ == "StochasticDepth":  # torchvision.ops (efficientnet, convnext)
            m.p = 0.0
    return model


def max_error(t, ref):
    t, ref = t.detach().double().cpu(), ref.detach().double().cpu()
    if not ref.numel():
        return 0.0, 0.0
    return (t - ref).abs().max().item(), ref.abs().max().item()


def run(model, x, g, device, dtype):
    """Forward output and parameter gradients of (output * g).sum() on `device` in `dtype`."""
    model = model.to(device, dtype)
    model.zero_grad(set_to_none=True)
    sync = getattr(torch, device.type).synchronize if device.type != "cpu" else (lambda: None)
    t0 = time.perf_counter()
    out = model(x.to(device, dtype))
    if g is None:
        g = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
    (out * g.to(device, dtype)).sum().backward()
    sync()
    elapsed = time.perf_counter() - t0
    grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    return out, grads, elapsed, g


def validate(name, ctor, shape, device, rtol, atol, factor):
    torch.manual_seed(0)
    base = no_dropout(ctor())
    x = torch.randn(shape)
    result = {"name": name, "worst": 0.0, "worst_what": "", "ok": True, "time_dev": 0.0, "time_cpu": 0.0}

    def check(what, dev, cpu32, ref):
        err_d, scale = max_error(dev, ref)
        err_c, _ = max_error(cpu32, ref)
        allowed = max(rtol * scale + atol, factor * err_c)
        ratio = err_d / allowed
        if not ratio <= 1.0:  # also catches NaN
            result["ok"] = False
        if not ratio <= result["worst"]:
            result["worst"], result["worst_what"] = ratio, what

    for train in (False, True):
        mode = "train" if train else "eval"
        runs = {}
        g = None
        for key, dev, dtype in (("ref", torch.device("cpu"), torch.float64), ("cpu", torch.device("cpu"), torch.float32),
                                ("dev", device, torch.float32)):
            model = copy.deepcopy(base).train(train)
            runs[key] = run(model, x, g, dev, dtype)
            g = runs[key][3]
        (out_r, grads_r, _, _), (out_c, grads_c, t_c, _), (out_d, grads_d, t_d, _) = runs["ref"], runs["cpu"], runs["dev"]
        check(f"{mode} output", out_d, out_c, out_r)
        for n, gr in grads_r.items():
            check(f"{mode} grad {n}", grads_d[n], grads_c[n], gr)
        result["time_dev"] += t_d
        result["time_cpu"] += t_c
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="ocl:0")
    ap.add_argument("--models", help="comma-separated subset")
    ap.add_argument("--rtol", type=float, default=2e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--factor", type=float, default=10.0, help="allowed multiple of the CPU float32 error")
    ap.add_argument("--out", help="also write the table as markdown to this file")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    models, source = available_models()
    names = args.models.split(",") if args.models else list(models)
    unknown = [n for n in names if n not in models]
    if unknown:
        ap.error(f"unknown models {unknown}; available: {sorted(models)}")
    print(f"networks from {source}; device {device}; vs a float64 CPU reference; pass iff max|err| <= "
          f"max({args.rtol} * max|ref| + {args.atol}, {args.factor} * max|err of CPU float32|)")
    rows = []
    for name in tqdm(names, desc="networks", unit="net", file=sys.stdout):
        ctor, shape = models[name]
        try:
            rows.append(validate(name, ctor, shape, device, args.rtol, args.atol, args.factor))
        except Exception as e:  # a crash is a failure of this network, not of the run
            rows.append({"name": name, "ok": False, "worst": float("nan"), "worst_what": f"error: {e}".splitlines()[0][:120],
                         "time_dev": 0.0, "time_cpu": 0.0})
        r = rows[-1]  # printed as it lands, so a run cut short still shows what it checked
        tqdm.write(f"{name}: {'pass' if r['ok'] else 'FAIL'} worst {r['worst']:.2e} at {r['worst_what']} "
                   f"(device {r['time_dev']:.2f} s, cpu {r['time_cpu']:.2f} s)", file=sys.stdout)
    lines = ["| network | result | worst error / allowed | where | device s | cpu s |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['name']} | {'pass' if r['ok'] else 'FAIL'} | {r['worst']:.2e} | {r['worst_what']} | "
                     f"{r['time_dev']:.2f} | {r['time_cpu']:.2f} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")
    failed = [r["name"] for r in rows if not r["ok"]]
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed" + (f": {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
