"""Check whole networks on a device against the CPU: forward (eval and train mode) and every
parameter gradient, from the same initial weights and inputs.

    python3 validate_network.py --device ocl:0                 # torchvision models if it imports
    python3 validate_network.py --models tiny_resnet,tiny_vgg  # the project's own (tests/models.py)

Tolerance: for every compared tensor, max|dev - cpu| <= rtol * max|cpu| + atol, with
rtol = 2e-3 and atol = 1e-4 for float32 by default: the device sums convolutions and matrix
products in a different order than the CPU, so errors grow with the reduction length; 2e-3 of
the tensor's largest magnitude covers the deepest networks here while still catching any wrong
kernel (those give O(1) relative errors). Train mode runs with dropout off (p=0), because the
device and the CPU draw different random masks; batch norm uses batch statistics as usual.
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
    return model


def max_error(dev, ref):
    dev, ref = dev.detach().double().cpu(), ref.detach().double().cpu()
    scale = ref.abs().max().item() if ref.numel() else 0.0
    err = (dev - ref).abs().max().item() if ref.numel() else 0.0
    return err, scale


def run(model, x, g, device, train):
    """Forward output and parameter gradients of (output * g).sum() on `device`."""
    model = model.to(device)
    model.train(train)
    model.zero_grad(set_to_none=True)
    sync = getattr(torch, device.type).synchronize if device.type != "cpu" else (lambda: None)
    t0 = time.perf_counter()
    out = model(x.to(device))
    if train:
        (out * g.to(device)).sum().backward()
    sync()
    elapsed = time.perf_counter() - t0
    grads = {n: p.grad for n, p in model.named_parameters() if train and p.grad is not None}
    return out, grads, elapsed


def validate(name, ctor, shape, device, rtol, atol):
    torch.manual_seed(0)
    base = no_dropout(ctor())
    x = torch.randn(shape)
    result = {"name": name, "worst": 0.0, "worst_what": "", "ok": True, "time_dev": 0.0, "time_cpu": 0.0}

    def check(what, dev, ref):
        err, scale = max_error(dev, ref)
        rel = err / (scale + 1e-30)
        if err > rtol * scale + atol:
            result["ok"] = False
        if rel >= result["worst"]:
            result["worst"], result["worst_what"] = rel, what

    g = None  # the output gradient, drawn once the output's shape is known
    for train in (False, True):
        ref_model, dev_model = copy.deepcopy(base), copy.deepcopy(base)
        out_c, grads_c, t_c = run(ref_model, x, g, torch.device("cpu"), train)
        if g is None:
            g = torch.randn_like(out_c)
        out_d, grads_d, t_d = run(dev_model, x, g, device, train)
        mode = "train" if train else "eval"
        check(f"{mode} output", out_d, out_c)
        for n, gc in grads_c.items():
            check(f"grad {n}", grads_d[n], gc)
        result["time_dev"] += t_d
        result["time_cpu"] += t_c
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="ocl:0")
    ap.add_argument("--models", help="comma-separated subset")
    ap.add_argument("--rtol", type=float, default=2e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--out", help="also write the table as markdown to this file")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    models, source = available_models()
    names = args.models.split(",") if args.models else list(models)
    unknown = [n for n in names if n not in models]
    if unknown:
        ap.error(f"unknown models {unknown}; available: {sorted(models)}")
    print(f"networks from {source}; device {device}; tolerance max|err| <= {args.rtol} * max|ref| + {args.atol}")
    rows = []
    for name in tqdm(names, desc="networks", unit="net", file=sys.stdout):
        ctor, shape = models[name]
        try:
            rows.append(validate(name, ctor, shape, device, args.rtol, args.atol))
        except Exception as e:  # a crash is a failure of this network, not of the run
            rows.append({"name": name, "ok": False, "worst": float("nan"), "worst_what": f"error: {e}".splitlines()[0][:120],
                         "time_dev": 0.0, "time_cpu": 0.0})
    lines = ["| network | result | worst relative error | where | device s | cpu s |", "|---|---|---|---|---|---|"]
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
