"""Check whole networks on a device against the CPU: forward (eval and train mode) and every
parameter gradient (in both modes), from the same initial weights and inputs.

    python3 validate_network.py --device ocl:0                 # torchvision models if it imports
    python3 validate_network.py --models tiny_resnet,tiny_vgg  # the project's own (tests/models.py)

Reference and tolerance. Each network also runs on the CPU in float64 (the reference) and in
float32 (the yardstick: what an accurate float32 implementation with another summation order
gets). Errors are root-mean-square over a tensor, err(t) = rms(t - ref64), scale = rms(ref64):

    float64 (when the device has it): err(device f64) <= 1e-6 * scale + 1e-12
    float32 outputs:                  err(device f32) <= max(rtol * scale + atol, factor * err(cpu f32))
    float32 gradients:                err(device f32) <= max(grad_rtol * scale + atol, factor * err(cpu f32))

rtol = 2e-3, grad_rtol = 5e-2, atol = 1e-5, factor = 10 by default.
The float64 run is the correctness check: with rounding 1e9 times smaller than float32's, any
logic error (wrong index, tail, stride, race, precision loss) stands out by orders of magnitude.
Its bound is 1e-6 and not 1e-12 because the CPU reference itself is not all float64 (its
hardsigmoid backward multiplies by 1/6 rounded to float32, a 3e-8 relative error the device does
not make) and deep train-mode networks amplify such differences.
The float32 run checks the float32-only code paths (e.g. Winograd convolution) and that no
kernel loses precision. Its gradient bound is loose for a measured reason: a ReLU input within
rounding of 0 changes sides under any change of summation order, and each such element sends
its whole upstream gradient the other way. On a ShuffleNetV2 at batch 2 in train mode, the
device's forward activations are as accurate as the CPU's (max error 8.8e-5 vs 1.2e-4 at the
last batch norm), yet 2 of its 100352 ReLU inputs land on the other side of 0 (the CPU's float32
run happened to flip none), which alone puts a 1% RMS error on every gradient below it. CUDA
PyTorch itself (cuDNN, TF32 off, H100) misses a 2e-3 gradient bound on 5 of the 19 torchvision
networks for the same reason. Outputs keep the tight bound; the factor term covers train-mode
batch norm at small batch, where the CPU's own float32 gradients are up to 10% off float64.
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


def rms_error(t, ref):
    """(rms(t - ref), rms(ref)) in float64."""
    t, ref = t.detach().double().cpu(), ref.detach().double().cpu()
    if not ref.numel():
        return 0.0, 0.0
    return (t - ref).pow(2).mean().sqrt().item(), ref.pow(2).mean().sqrt().item()


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


def has_fp64(device):
    if device.type == "ocl":
        return torch.ocl.get_device_properties(device).fp64
    return True


def validate(name, ctor, shape, device, rtol, grad_rtol, atol, factor, fp64):
    torch.manual_seed(0)
    base = no_dropout(ctor())
    x = torch.randn(shape)
    result = {"name": name, "worst": 0.0, "worst_what": "", "worst64": 0.0, "worst64_what": "", "ok": True,
              "time_dev": 0.0, "time_cpu": 0.0}

    def check(what, dev32, cpu32, dev64, ref):
        err_d, scale = rms_error(dev32, ref)
        err_c, _ = rms_error(cpu32, ref)
        tol = grad_rtol if " grad " in what else rtol
        checks = [("", err_d / max(tol * scale + atol, factor * err_c))]
        if dev64 is not None:
            checks.append(("64", rms_error(dev64, ref)[0] / (1e-6 * scale + 1e-12)))
        for suffix, ratio in checks:
            if not ratio <= 1.0:  # also catches NaN
                result["ok"] = False
            if not ratio <= result["worst" + suffix]:
                result["worst" + suffix], result["worst" + suffix + "_what"] = ratio, what

    for train in (False, True):
        mode = "train" if train else "eval"
        runs = {}
        g = None
        configs = [("ref", torch.device("cpu"), torch.float64), ("cpu", torch.device("cpu"), torch.float32),
                   ("dev", device, torch.float32)] + ([("dev64", device, torch.float64)] if fp64 else [])
        for key, dev, dtype in configs:
            model = copy.deepcopy(base).train(train)
            runs[key] = run(model, x, g, dev, dtype)
            g = runs[key][3]
        out = {key: r[0] for key, r in runs.items()}
        grads = {key: r[1] for key, r in runs.items()}
        d64 = runs.get("dev64")
        check(f"{mode} output", out["dev"], out["cpu"], d64 and d64[0], out["ref"])
        for n, gr in grads["ref"].items():
            check(f"{mode} grad {n}", grads["dev"][n], grads["cpu"][n], d64 and d64[1][n], gr)
        result["time_dev"] += runs["dev"][2]
        result["time_cpu"] += runs["cpu"][2]
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="ocl:0")
    ap.add_argument("--models", help="comma-separated subset")
    ap.add_argument("--rtol", type=float, default=2e-3, help="float32 outputs")
    ap.add_argument("--grad-rtol", type=float, default=5e-2, help="float32 gradients")
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--factor", type=float, default=10.0, help="allowed multiple of the CPU float32 error")
    ap.add_argument("--out", help="also write the table as markdown to this file")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda":  # like for like: full float32 products, as the OpenCL devices compute them
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    models, source = available_models()
    names = args.models.split(",") if args.models else list(models)
    unknown = [n for n in names if n not in models]
    if unknown:
        ap.error(f"unknown models {unknown}; available: {sorted(models)}")
    fp64 = has_fp64(device)
    print(f"networks from {source}; device {device}; vs a float64 CPU reference; float32 passes iff rms(err) <= "
          f"max({args.rtol} (gradients {args.grad_rtol}) * rms(ref) + {args.atol}, {args.factor} * rms(err of CPU float32))"
          + ("; float64 iff rms(err) <= 1e-6 * rms(ref) + 1e-12" if fp64 else "; the device has no float64"))
    rows = []
    for name in tqdm(names, desc="networks", unit="net", file=sys.stdout):
        ctor, shape = models[name]
        try:
            rows.append(validate(name, ctor, shape, device, args.rtol, args.grad_rtol, args.atol, args.factor, fp64))
        except Exception as e:  # a crash is a failure of this network, not of the run
            rows.append({"name": name, "ok": False, "worst": float("nan"), "worst_what": f"error: {e}".splitlines()[0][:120],
                         "worst64": float("nan"), "worst64_what": "", "time_dev": 0.0, "time_cpu": 0.0})
        r = rows[-1]  # printed as it lands, so a run cut short still shows what it checked
        tqdm.write(f"{name}: {'pass' if r['ok'] else 'FAIL'} worst {r['worst']:.2e} at {r['worst_what']} "
                   f"; float64 {r['worst64']:.2e} at {r['worst64_what']} (device {r['time_dev']:.2f} s, cpu {r['time_cpu']:.2f} s)", file=sys.stdout)
    lines = ["| network | result | float32: worst error / allowed | where | float64: worst error / allowed | where "
             "| device f32 s | cpu f32 s |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        f64 = f"{r['worst64']:.2e} | {r['worst64_what']}" if fp64 else "- | -"
        lines.append(f"| {r['name']} | {'pass' if r['ok'] else 'FAIL'} | {r['worst']:.2e} | {r['worst_what']} | "
                     f"{f64} | {r['time_dev']:.2f} | {r['time_cpu']:.2f} |")
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
