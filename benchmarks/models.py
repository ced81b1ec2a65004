"""Whole-network speed on `ocl` against a reference device, in the same process.

    python3 benchmarks/models.py [--device ocl:0] [--ref cuda|cpu] [--nets resnet18,...] [--quick]
                                 [--compile] [--out results/models.md]

Per network: inference (eval, no_grad, batch 64) and one training step (batch 32: forward,
cross-entropy, backward, SGD step with momentum) in milliseconds (median of --iters after
warm-up), the ratio ref time / ocl time (> 1: ocl faster), the peak memory of the training step
on each device, and the first-iteration time on ocl (program builds and GEMM autotuning; near
zero on a warm kernel cache). --math fp32 (default) compares full fp32 on both devices (cuda TF32
off; ocl with torch.backends.cudnn.allow_tf32 off, its GEMMs at fp32 accuracy: 3xTF32 where a matrix
engine has TF32); --math default compares both with torch's defaults (cuDNN convolutions in TF32 on
cuda, TF32 convolutions on ocl's matrix engine); --math bf16 adds torch.autocast(bfloat16) around the
forward passes on both devices (torch's defaults otherwise), the mixed precision users train with. Networks come from torchvision when it imports, else from
tests/models.py (small stand-ins, 32x32 inputs). CPU fallbacks are counted and reported: a
network that needed one is marked, since its time then includes host round trips. --compile adds a
table of torch.compile (Inductor; OpenCL C kernels on ocl) against eager ocl, with cuda compiled
when the reference is cuda.
A cuda reference is measured in a child process of the same run that does not load ocl: with
ocl registered, torch (>= 2.8) makes it the accelerator and CUDA's autograd then fails
(pytorch#161129, see the README's coexistence note).
"""
import argparse
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
from tqdm import tqdm

import common

NETS = ["resnet18", "resnet50", "mobilenet_v2", "vgg16", "alexnet", "efficientnet_b0", "convnext_small",
        "densenet161"]
# tests/models.py stand-ins when torchvision is missing (same building blocks, small sizes).
FALLBACK_NETS = {"resnet18": "tiny_resnet", "resnet50": "tiny_resnet", "mobilenet_v2": "tiny_mobilenet_v2",
                 "vgg16": "tiny_vgg", "alexnet": "tiny_vgg", "efficientnet_b0": "tiny_mobilenet_v3",
                 "convnext_small": "tiny_convnext", "densenet161": "tiny_densenet"}


def constructors(names):
    """name -> (constructor, image size, source)."""
    try:
        import torchvision.models as tvm

        return {n: (lambda n=n: getattr(tvm, n)(weights=None), 224, "torchvision") for n in names}
    except Exception:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
        from models import MODELS

        out = {}
        for n in names:
            ctor, shape = MODELS[FALLBACK_NETS[n]]
            out[n] = (ctor, shape[-1], f"tests/models.py:{FALLBACK_NETS[n]}")
        return out


def peak_memory(device):
    device = torch.device(device)
    if device.type == "ocl":
        return torch.ocl.max_memory_allocated(device.index or 0)
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return float("nan")


def reset_peak(device):
    device = torch.device(device)
    if device.type == "ocl":
        torch.ocl.reset_peak_memory_stats(device.index or 0)
    elif device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def measure(ctor, size, device, batch_infer, batch_train, iters, compiled=False, amp=None):
    """(inference ms, train-step ms, train peak bytes, first-iteration seconds) on `device`;
    compiled: the model under torch.compile (default Inductor backend; first iteration = compile);
    amp: a dtype for torch.autocast around the forward passes (None: none)."""
    dev_type = torch.device(device).type

    def autocast():
        return torch.autocast(dev_type, dtype=amp) if amp is not None else contextlib.nullcontext()

    torch.manual_seed(0)
    model = ctor().to(device)
    if compiled:
        model = torch.compile(model)
    x_inf = torch.randn(batch_infer, 3, size, size, device=device)
    x_tr = torch.randn(batch_train, 3, size, size, device=device)
    with torch.no_grad(), autocast():
        classes = model.eval()(x_inf[:1]).shape[1]
    y_tr = torch.randint(0, classes, (batch_train,), device=device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

    def infer():
        with torch.no_grad(), autocast():
            model(x_inf)

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast():
            loss = F.cross_entropy(model(x_tr), y_tr)
        loss.backward()
        opt.step()

    model.train()
    common.synchronize(device)
    start = time.perf_counter()
    step()
    common.synchronize(device)
    first = time.perf_counter() - start
    reset_peak(device)
    train = common.median_time(step, device, iters)
    peak = peak_memory(device)
    model.eval()
    inference = common.median_time(infer, device, iters)
    del model, opt
    if compiled:
        torch._dynamo.reset()
    return inference * 1e3, train * 1e3, peak, first


def ref_variants(ref, math_mode="fp32"):
    """(label, setup) pair of the reference: cuda with TF32 off (--math fp32) or torch's defaults."""
    if torch.device(ref).type != "cuda":
        return [(ref, lambda: None)]

    def tf32(on):
        def set_():
            torch.backends.cuda.matmul.allow_tf32 = on
            torch.backends.cudnn.allow_tf32 = on
            torch.backends.cudnn.benchmark = True
        return set_

    default_cudnn_tf32 = torch.backends.cudnn.allow_tf32
    default_matmul_tf32 = torch.backends.cuda.matmul.allow_tf32

    def default():
        torch.backends.cuda.matmul.allow_tf32 = default_matmul_tf32
        torch.backends.cudnn.allow_tf32 = default_cudnn_tf32
        torch.backends.cudnn.benchmark = True

    if math_mode == "bf16":
        return [("cuda bf16 autocast", default)]
    return [("cuda TF32 off", tf32(False))] if math_mode == "fp32" else [("cuda default", default)]


def measure_ref_in_child(name, label, args):
    """Runs this script with --child for one network and reference variant; returns measure()'s tuple."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--child-label", label, "--ref", args.ref,
           "--math", args.math,
           "--batch-infer", str(args.batch_infer), "--batch-train", str(args.batch_train), "--iters", str(args.iters)]
    if label.endswith("compiled"):
        cmd.append("--child-compiled")
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"reference child failed: {proc.stderr.strip().splitlines()[-1:]}")
    return tuple(json.loads(proc.stdout.strip().splitlines()[-1]))


def run_child(args):
    ctor, size, _ = constructors([args.child])[args.child]
    dict(ref_variants(args.ref, args.math))[args.child_label.removesuffix(" compiled")]()
    print(json.dumps(measure(ctor, size, args.ref, args.batch_infer, args.batch_train, args.iters,
                             compiled=args.child_compiled, amp=amp_dtype(args))))


def amp_dtype(args):
    return torch.bfloat16 if args.math == "bf16" else None


def fmt_mb(b):
    return "-" if b != b else f"{b / 2**20:.0f}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="ocl:0")
    parser.add_argument("--ref", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--nets", default=",".join(NETS))
    parser.add_argument("--batch-infer", type=int, default=64)
    parser.add_argument("--batch-train", type=int, default=32)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--math", default="fp32", choices=["fp32", "default", "bf16"],
                        help="fp32: TF32 off on both devices; default: torch's defaults on both; bf16: defaults "
                             "plus bfloat16 autocast on both (see above)")
    parser.add_argument("--quick", action="store_true", help="batch 2, 2 iterations, first two networks (CI smoke)")
    parser.add_argument("--out", default="results/models.md")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-label", help=argparse.SUPPRESS)
    parser.add_argument("--child-compiled", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--compile", action="store_true",
                        help="also measure torch.compile (Inductor) on ocl, and on the cuda reference, in the same run")
    args = parser.parse_args(argv)
    if args.child:
        return run_child(args)
    common.import_backend()
    import pytorch_ocl
    if args.quick:
        args.batch_infer, args.batch_train, args.iters = 2, 2, 2
        args.nets = ",".join(args.nets.split(",")[:2])
    nets = constructors(args.nets.split(","))
    refs = ref_variants(args.ref, args.math)
    # ocl's convolutions follow the same switch as cuDNN's (TF32 on its matrix engine when allowed).
    torch.backends.cudnn.allow_tf32 = args.math != "fp32"
    rows = []
    for name, (ctor, size, source) in tqdm(nets.items(), desc="networks", unit="net"):
        pytorch_ocl.reset_fallback_stats()
        try:
            o = measure(ctor, size, args.device, args.batch_infer, args.batch_train, args.iters, amp=amp_dtype(args))
        except Exception as e:  # noqa: BLE001 - one failing network must not hide the others
            print(f"{name}: {type(e).__name__}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
            rows.append((name, source, None, [], 0, None))
            continue
        oc = None
        if args.compile:
            try:
                oc = measure(ctor, size, args.device, args.batch_infer, args.batch_train, args.iters, compiled=True,
                             amp=amp_dtype(args))
            except Exception as e:  # noqa: BLE001
                print(f"{name} compiled: {type(e).__name__}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
        fallbacks = sum(pytorch_ocl.fallback_stats().values())
        refs_out = []
        for label, setup in refs:
            if torch.device(args.ref).type == "cuda":
                refs_out.append((label, measure_ref_in_child(name, label, args)))
            else:
                setup()
                refs_out.append((label, measure(ctor, size, args.ref, args.batch_infer, args.batch_train, args.iters,
                                                amp=amp_dtype(args))))
        if args.compile and torch.device(args.ref).type == "cuda":
            try:
                refs_out.append((f"{refs[0][0]} compiled", measure_ref_in_child(name, f"{refs[0][0]} compiled", args)))
            except Exception as e:  # noqa: BLE001
                print(f"{name} cuda compiled: {e}", file=sys.stderr)
        rows.append((name, source, o, refs_out, fallbacks, oc))
        # each network as it lands, so a run cut short still reports what it measured
        tqdm.write(f"{name}: ocl infer {o[0]:.2f} ms train {o[1]:.2f} ms first {o[3]:.1f} s peak {fmt_mb(o[2])} MB; "
                   + "; ".join(f"{label} infer {r[0]:.2f} train {r[1]:.2f} peak {fmt_mb(r[2])}" for label, r in refs_out)
                   + f"; fallbacks {fallbacks}")
    write_report(args, rows, refs)


def write_report(args, rows, refs):
    lines = ["# Whole networks", "",
             f"ocl: {common.device_description(args.device)}  ",
             f"ref: {common.device_description(args.ref)}  ",
             f"torch {torch.__version__}, float32 weights (--math {args.math}{': bfloat16 autocast' if args.math == 'bf16' else ''}), inference batch {args.batch_infer}, training step batch "
             f"{args.batch_train} (forward + cross-entropy + backward + SGD), median of {args.iters}  ", ""]
    header = "| network | source | ocl infer ms | ocl train ms |"
    sep = "|---|---|---:|---:|"
    for label, _ in refs:
        header += f" {label} infer ms | infer ratio | {label} train ms | train ratio |"
        sep += "---:|---:|---:|---:|"
    header += " ocl peak MB | ref peak MB | peak ratio | ocl first iter s | fallbacks |"
    sep += "---:|---:|---:|---:|---:|"
    lines += [header, sep]
    ratios = {label: ([], []) for label, _ in refs}
    compiled_lines = []
    for name, source, o, refs_out, fallbacks, oc in rows:
        if oc is not None and o is not None:
            cref = [r for label, r in refs_out if label.endswith("compiled")]
            cuda = f" {cref[0][0]:.2f} | {cref[0][1]:.2f} | {cref[0][1] / oc[1]:.3f} |" if cref else " - | - | - |"
            compiled_lines.append(f"| {name} | {o[0]:.2f} | {oc[0]:.2f} | {o[0] / oc[0]:.3f} | {o[1]:.2f} | {oc[1]:.2f} | "
                                  f"{o[1] / oc[1]:.3f} | {oc[3]:.1f} |{cuda}")
        refs_out = [(label, r) for label, r in refs_out if not label.endswith("compiled")]
        if o is None:
            lines.append(f"| {name} | {source} | failed |")
            continue
        line = f"| {name} | {source} | {o[0]:.2f} | {o[1]:.2f} |"
        for label, r in refs_out:
            ri, rt = r[0] / o[0], r[1] / o[1]
            ratios[label][0].append(ri)
            ratios[label][1].append(rt)
            line += f" {r[0]:.2f} | {ri:.3f} | {r[1]:.2f} | {rt:.3f} |"
        ref_peak = refs_out[0][1][2] if refs_out else float("nan")
        peak_ratio = o[2] / ref_peak if ref_peak == ref_peak and ref_peak else float("nan")
        line += f" {fmt_mb(o[2])} | {fmt_mb(ref_peak)} | {peak_ratio:.2f} | {o[3]:.2f} | {fallbacks} |"
        lines.append(line)
    lines.append("")
    for label, (ri, rt) in ratios.items():
        if ri:
            gi = math.exp(statistics.mean(math.log(v) for v in ri))
            gt = math.exp(statistics.mean(math.log(v) for v in rt))
            lines.append(f"- geomean ref/ocl vs {label}: inference {gi:.3f}, training {gt:.3f} (> 1: ocl faster)")
    lines.append("- peak ratio = ocl peak / ref peak memory allocated during the training steps")
    if compiled_lines:
        lines += ["", "## torch.compile (Inductor, OpenCL C kernels) vs eager on ocl", "",
                  "| network | eager infer ms | compiled infer ms | speedup | eager train ms | compiled train ms | "
                  "speedup | compile s (first iter) | cuda compiled infer ms | cuda compiled train ms | "
                  "cuda compiled / ocl compiled train |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"] + compiled_lines
    common.emit("\n".join(lines) + "\n", args.out)
    plot(args.out, rows, refs)


def plot(out, rows, refs):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    done = [(n, o, [(lb, x) for lb, x in r if not lb.endswith("compiled")]) for n, _, o, r, _, _ in rows
            if o is not None and r]
    if not done:
        return
    fig, ax = plt.subplots(figsize=(max(6, len(done) * 1.2), 4))
    width = 0.8 / (2 * len(refs))
    for k, (label, _) in enumerate(refs):
        for j, kind in enumerate(("infer", "train")):
            xs = [i + (2 * k + j) * width for i in range(len(done))]
            ys = [r[k][1][j] / o[j] for _, o, r in done]
            ax.bar(xs, ys, width, label=f"{kind} vs {label}")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(done))])
    ax.set_xticklabels([n for n, _, _ in done], rotation=30, ha="right")
    ax.set_ylabel("ref time / ocl time (> 1: ocl faster)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.splitext(out)[0] + ".png", dpi=120)
    print(f"wrote {out} and {os.path.splitext(out)[0]}.png")


if __name__ == "__main__":
    main()
