"""Convolution layers of common networks on `ocl` against a reference device, in the same process.

    python3 benchmarks/conv.py [--device ocl:0] [--ref cuda|cpu] [--nets resnet18,resnet50,mobilenet_v2,vgg16]
                               [--batches 32,1] [--math fp32|default] [--quick] [--out results/conv.md]

Every distinct conv layer (input channels, output channels, kernel, stride, padding, groups,
input size at 224x224) of the networks, forward (`F.conv2d`) and backward
(`aten.convolution_backward` for the input and weight gradients, as autograd calls it), in
milliseconds (median) and the ratio ref time / ocl time (> 1: ocl faster). Per network, batch
and direction the geometric mean of the ratios summarises. A cuda reference runs cuDNN with
TF32 off (--math default: TF32 convolutions on both devices) and cudnn.benchmark on (it autotunes too). No torchvision needed: the layer lists
are generated from the architectures below.
"""
import argparse
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import common

common.import_backend()

import pytorch_ocl  # noqa: E402


# Layer: (cin, cout, k, stride, pad, groups, input size)
def resnet_stem(layers):
    layers.append((3, 64, 7, 2, 3, 1, 224))
    return 56  # after the stride-2 max pool


def resnet18():
    layers = []
    h, cin = resnet_stem(layers), 64
    for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for block in range(2):
            s = stride if block == 0 else 1
            layers.append((cin, planes, 3, s, 1, 1, h))
            if s != 1 or cin != planes:
                layers.append((cin, planes, 1, s, 0, 1, h))
            h //= s
            layers.append((planes, planes, 3, 1, 1, 1, h))
            cin = planes
    return layers


def resnet50():
    layers = []
    h, cin = resnet_stem(layers), 64
    for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for block in range(blocks):
            s = stride if block == 0 else 1
            layers.append((cin, planes, 1, 1, 0, 1, h))
            layers.append((planes, planes, 3, s, 1, 1, h))  # torchvision v1.5: stride on the 3x3
            if block == 0:
                layers.append((cin, planes * 4, 1, s, 0, 1, h))  # downsample
            h //= s
            layers.append((planes, planes * 4, 1, 1, 0, 1, h))
            cin = planes * 4
    return layers


def mobilenet_v2():
    layers = [(3, 32, 3, 2, 1, 1, 224)]
    h, cin = 112, 32
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)):
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            if t != 1:
                layers.append((cin, hidden, 1, 1, 0, 1, h))
            layers.append((hidden, hidden, 3, stride, 1, hidden, h))
            h //= stride
            layers.append((hidden, c, 1, 1, 0, 1, h))
            cin = c
    layers.append((320, 1280, 1, 1, 0, 1, h))
    return layers


def vgg16():
    layers, h, cin = [], 224, 3
    for v in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"):
        if v == "M":
            h //= 2
        else:
            layers.append((cin, v, 3, 1, 1, 1, h))
            cin = v
    return layers


NETS = {"resnet18": resnet18, "resnet50": resnet50, "mobilenet_v2": mobilenet_v2, "vgg16": vgg16}


def distinct(layers):
    seen, out = set(), []
    for layer in layers:
        if layer not in seen:
            seen.add(layer)
            out.append(layer)
    return out


def flops(layer, batch):
    cin, cout, k, s, p, g, h = layer
    oh = (h + 2 * p - k) // s + 1
    return 2.0 * batch * cout * oh * oh * (cin // g) * k * k


def timed(fn, device, budget_s):
    fn()  # build + autotune
    common.synchronize(device)
    start = time.perf_counter()
    fn()
    common.synchronize(device)
    once = time.perf_counter() - start
    if once > budget_s:
        return once
    iters = max(3, min(30, int(0.3 / max(once, 1e-6))))
    return statistics.median(common.time_it(fn, device, iters, warmup=1))


def run_layer(layer, batch, device, budget_s):
    cin, cout, k, s, p, g, h = layer
    torch.manual_seed(0)
    x = torch.randn(batch, cin, h, h, device=device)
    w = torch.randn(cout, cin // g, k, k, device=device) * (1.0 / math.sqrt(cin // g * k * k))
    y = F.conv2d(x, w, None, s, p, 1, g)
    gy = torch.randn_like(y)
    fwd = timed(lambda: F.conv2d(x, w, None, s, p, 1, g), device, budget_s)
    bwd = timed(lambda: torch.ops.aten.convolution_backward(gy, x, w, None, [s, s], [p, p], [1, 1], False, [0, 0], g,
                                                            [True, True, False]), device, budget_s)
    return fwd, bwd


def algorithms(layer, batch, device):
    """What the ocl device ran for the layer (the tuning decisions are cached by then)."""
    cin, cout, k, s, p, g, h = layer
    try:
        a = pytorch_ocl.ops.conv_algorithms((batch, cin, h, h), (cout, cin // g, k, k), s, p, 1, g, device=device)
    except (AttributeError, RuntimeError) as e:  # an older build without conv_algorithms
        return f"? ({type(e).__name__})"
    return f"{a['forward']} / {a['backward_data']} / {a['backward_weight']}"


def kernel_breakdown(layer, batch, device):
    """The ocl kernels of one forward and one backward of the layer, by device time: 'name us, ...' per pass."""
    from pytorch_ocl.profiler import profile

    cin, cout, k, s, p, g, h = layer
    x = torch.randn(batch, cin, h, h, device=device)
    w = torch.randn(cout, cin // g, k, k, device=device)
    gy = F.conv2d(x, w, None, s, p, 1, g)
    out = []
    for run in (lambda: F.conv2d(x, w, None, s, p, 1, g),
                lambda: torch.ops.aten.convolution_backward(gy, x, w, None, [s, s], [p, p], [1, 1], False, [0, 0], g,
                                                            [True, True, False])):
        run()
        torch.ocl.synchronize()
        with profile() as prof:
            run()
            torch.ocl.synchronize()
        out.append(", ".join(f"{r['kernel']} {r['total_us']:.0f}" for r in prof.summary()))
    return out


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="ocl:0")
    parser.add_argument("--ref", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--nets", default=",".join(NETS))
    parser.add_argument("--batches", default="32,1")
    parser.add_argument("--quick", action="store_true", help="resnet18 at batch 1 and 2: a CI smoke run")
    parser.add_argument("--max-seconds", type=float, default=10.0, help="time a layer once when slower than this")
    parser.add_argument("--math", default="fp32", choices=["fp32", "default"],
                        help="fp32: TF32 off on both devices; default: torch's default, TF32 convolutions (cuDNN's "
                             "and ocl's matrix engine)")
    parser.add_argument("--kernels", action="store_true",
                        help="print each layer's ocl kernels (device us of one forward, one backward) to stderr")
    parser.add_argument("--out", default="results/conv.md")
    args = parser.parse_args(argv)
    if not torch.ocl.is_available():
        print(f"no OpenCL device: {pytorch_ocl._C.enumeration_error()}")
        return 1
    # One switch for both devices: ocl's convolutions read torch.backends.cudnn.allow_tf32 too.
    torch.backends.cudnn.allow_tf32 = args.math == "default"
    if torch.device(args.ref).type == "cuda":
        torch.backends.cudnn.benchmark = True
    nets = ["resnet18"] if args.quick else args.nets.split(",")
    batches = [1, 2] if args.quick else [int(b) for b in args.batches.split(",")]

    rows, summary_rows, labels, ratios = [], [], [], []
    for net in nets:
        layers = distinct(NETS[net]())
        for batch in batches:
            fr, br = [], []
            for layer in layers:
                o_f, o_b = run_layer(layer, batch, args.device, args.max_seconds)
                r_f, r_b = run_layer(layer, batch, args.ref, args.max_seconds)
                cin, cout, k, s, p, g, h = layer
                name = f"{cin}->{cout} k{k} s{s} p{p}" + (f" g{g}" if g > 1 else "") + f" @{h}"
                fr.append(r_f / o_f)
                br.append(r_b / o_b)
                gf = flops(layer, batch)
                rows.append([net, batch, name, o_f * 1e3, r_f * 1e3, r_f / o_f, o_b * 1e3, r_b * 1e3, r_b / o_b,
                             gf / o_f / 1e9, 2 * gf / o_b / 1e9, algorithms(layer, batch, args.device)])
                print(" | ".join(common.fmt(c) for c in rows[-1]), file=sys.stderr)
                if args.kernels and args.device.startswith("ocl"):
                    kf, kb = kernel_breakdown(layer, batch, args.device)
                    print(f"  kernels fwd: {kf}\n  kernels bwd: {kb}", file=sys.stderr)
            gf_, gb_ = geomean(fr), geomean(br)
            summary_rows.append([net, batch, len(layers), gf_, gb_, geomean(fr + br)])
            labels += [f"{net} b{batch} fwd", f"{net} b{batch} bwd"]
            ratios += [gf_, gb_]

    if args.kernels and args.device.startswith("ocl"):
        for cls, choice in sorted(pytorch_ocl.ops.autotune_decisions().items()):
            print(f"  tuned {cls}: {choice}", file=sys.stderr)
    header = ["net", "batch", "layer", "fwd ocl ms", "fwd ref ms", "fwd ref/ocl", "bwd ocl ms", "bwd ref ms",
              "bwd ref/ocl", "fwd ocl GFLOP/s", "bwd ocl GFLOP/s", "ocl algorithm fwd / bwd data / bwd weight"]
    summary_header = ["net", "batch", "layers", "fwd geomean ref/ocl", "bwd geomean ref/ocl", "fwd+bwd geomean"]
    summary = common.markdown_table(summary_header, summary_rows)
    print(common.markdown_table(header, rows))
    print()
    print(summary)
    preamble = [
        f"ocl: {common.device_description(args.device)}",
        f"ref: {common.device_description(args.ref)}"
        + ((" (cuDNN, TF32 off, benchmark mode)" if args.math == "fp32" else " (cuDNN, TF32, benchmark mode)")
           if torch.device(args.ref).type == "cuda" else ""),
        f"torch {torch.__version__}, float32{' (TF32 convolutions on both)' if args.math == 'default' else ''}"
        f"{', --quick' if args.quick else ''}, "
        f"PYTORCH_OCL_AUTOTUNE={os.environ.get('PYTORCH_OCL_AUTOTUNE', '1')}",
        "",
        summary.replace("\n", "  \n"),
    ]
    notes = ["ratio = ref time / ocl time: > 1 means ocl is faster",
             "bwd = input gradient + weight gradient in one aten.convolution_backward call (no bias)",
             "GFLOP/s counts 2*N*K*OH*OW*C/g*KH*KW per direction (bwd counts both gradients)",
             "ocl algorithm: winograd = F(4x4,3x3) transforms + 36 batched GEMMs; implicit = implicit-GEMM "
             "tile config and split-K count; im2col / col2im = patch matrix + GEMM; gemm1x1; depthwise"]
    md = common.write_markdown(args.out, "Convolution layers", preamble, header, rows, notes)
    png = common.plot_ratios(os.path.splitext(args.out)[0] + ".png", labels, ratios,
                             f"conv {args.device} vs {args.ref} (geomean, >1: ocl faster)", "ref time / ocl time")
    print(f"\nwrote {md}" + (f" and {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
