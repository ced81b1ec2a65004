"""Training-time layer kernels of `ocl` against a reference device, in the same process: batch norm
(statistics + normalization, and its backward) and depthwise convolution (forward, input gradient,
weight gradient) at the shapes of resnet/mobilenet layers (NCHW, 3x3) and ConvNeXt layers
(channels-last, 7x7), batch 32.

    python3 benchmarks/layers.py [--device ocl:0] [--ref cuda|cpu] [--quick] [--out results/layers.md]

Calls the aten ops directly (no autograd), so a cuda reference runs in this process. Times are
medians after a warm-up (program builds and tuning excluded); ratio = ref time / ocl time.
"""
import argparse
import os

import torch

import common

# (N, C, H, W), depthwise kernel size, stride, channels-last (batch norm runs on the NCHW ones).
SHAPES = [((32, 32, 112, 112), 3, 1, False), ((32, 64, 112, 112), 3, 1, False), ((32, 96, 112, 112), 3, 2, False),
          ((32, 144, 56, 56), 3, 1, False), ((32, 256, 56, 56), 3, 1, False), ((32, 1024, 14, 14), 3, 1, False),
          ((32, 96, 56, 56), 7, 1, True), ((32, 192, 28, 28), 7, 1, True), ((32, 384, 14, 14), 7, 1, True),
          ((32, 768, 7, 7), 7, 1, True)]
QUICK_SHAPES = [((2, 8, 16, 16), 3, 1, False), ((2, 3, 33, 17), 3, 2, False), ((2, 8, 9, 9), 7, 1, True)]


def layer_ops(shape, k, stride, channels_last, device):
    """name -> callable for one layer on one device."""
    C = shape[1]
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    x = torch.randn(shape, device=device).contiguous(memory_format=fmt)
    wd = torch.randn(C, 1, k, k, device=device)
    conv = (None, [stride, stride], [k // 2, k // 2], [1, 1], False, [0, 0], C)
    g = torch.randn_like(torch.ops.aten.convolution(x, wd, *conv)).contiguous(memory_format=fmt)
    ops = {}
    if not channels_last:
        w, b = torch.randn(C, device=device), torch.randn(C, device=device)
        rm, rv = torch.zeros(C, device=device), torch.ones(C, device=device)
        _, mean, invstd = torch.ops.aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)
        gb = torch.randn_like(x)
        ops["batch_norm fwd"] = lambda: torch.ops.aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)
        ops["batch_norm bwd"] = lambda: torch.ops.aten.native_batch_norm_backward(gb, x, w, rm, rv, mean, invstd, True,
                                                                                  1e-5, [True, True, True])
    return ops | {
        "depthwise fwd": lambda: torch.ops.aten.convolution(x, wd, *conv),
        "depthwise bwd input": lambda: torch.ops.aten.convolution_backward(g, x, wd, None, *conv[1:],
                                                                           [True, False, False]),
        "depthwise bwd weight": lambda: torch.ops.aten.convolution_backward(g, x, wd, None, *conv[1:],
                                                                            [False, True, False]),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="ocl:0")
    parser.add_argument("--ref", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quick", action="store_true", help="small shapes (CI smoke)")
    parser.add_argument("--out", default="results/layers.md")
    args = parser.parse_args(argv)
    common.import_backend()
    if torch.device(args.ref).type == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = False
    rows, labels, ratios = [], [], []
    for shape, k, stride, channels_last in QUICK_SHAPES if args.quick else SHAPES:
        ops = {dev: layer_ops(shape, k, stride, channels_last, dev) for dev in (args.device, args.ref)}
        what = f"{tuple(shape)} k{k} s{stride}" + (" NHWC" if channels_last else "")
        for name in ops[args.device]:
            t = [common.median_time(ops[dev][name], dev, 3 if args.quick else 20) for dev in (args.device, args.ref)]
            ratio = t[1] / t[0]
            rows.append([f"{name} {what}", t[0] * 1e3, t[1] * 1e3, ratio])
            labels.append(f"{name} C={shape[1]} k{k}" + (" NHWC" if channels_last else ""))
            ratios.append(ratio)
            print(f"{rows[-1][0]}: ocl {t[0] * 1e3:.3f} ms, {args.ref} {t[1] * 1e3:.3f} ms, ratio {ratio:.2f}", flush=True)
    header = ["layer (N, C, H, W) kernel stride layout", f"{args.device} ms", f"{args.ref} ms", "ref/ocl"]
    common.write_markdown(args.out, "Layer kernels", [f"ocl: {common.device_description(args.device)}  ",
                                                     f"ref: {common.device_description(args.ref)}  "],
                          header, rows, ["ratio > 1: ocl faster"])
    common.plot_ratios(os.path.splitext(args.out)[0] + ".png", labels, ratios, "Layer kernels", f"{args.ref} time / ocl time")
    return 0


if __name__ == "__main__":
    main()
