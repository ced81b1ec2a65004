"""A hand-written OpenCL conv2d (batched, strided, dilated, padded, bias) replacing the convolutions of a ResNet.

What it shows:
- `pytorch_ocl.Kernel`: a tiled direct convolution written as an implicit GEMM. The output is the matrix
  Y[OC, N*OH*OW] = W[OC, C*KH*KW] @ patches[C*KH*KW, N*OH*OW]; each work-group computes a 64 x 64 tile of Y
  (4 x 4 outputs per work-item, in registers), staging a slice of weights and a slice of image patches in `__local`
  memory per step. The patch elements are gathered straight from the input image (no im2col buffer); padding is
  handled by index bounds (outside the image reads as 0), so any stride, dilation, padding, batch and odd spatial
  size works. groups=1 only (grouped and depthwise convolutions are out of scope for this example).
- `pytorch_ocl.library.custom_op`: the kernel as the op `ocl_examples::conv2d` (fake + autograd; the backward uses
  the built-in convolution gradients, torch.nn.grad.conv2d_input / conv2d_weight).
- Checked against torch.nn.functional.conv2d over strides {1,2,3} x dilations {1,2} x paddings {0,1,2} x batch sizes
  {1,3} x kernel sizes {1,3,5} with odd image sizes, then swapped into every nn.Conv2d of a small residual network
  (logits and gradients compared with the built-in path).
- `pytorch_ocl.profiler.profile`: device time of the kernel against the built-in conv2d for each layer, same run.

Run: python examples/custom_conv2d.py [--device ocl:0] [--quick]. Exits with status 1 when a check fails.
Strict mode is switched on: an operator without an OpenCL kernel raises instead of running on the CPU.
"""
import argparse
import copy
import itertools
import math
import os
import sys
import time
import types
from typing import List, Optional

os.environ.setdefault("PYTORCH_OCL_STRICT", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import pytorch_ocl  # noqa: E402
from pytorch_ocl import Kernel, int32  # noqa: E402

# The built-in F.conv2d this example compares with runs float32 convolutions in TF32 on a matrix engine
# (NVIDIA) while torch.backends.cudnn.allow_tf32 is on, as CUDA does; compare at fp32 accuracy.
torch.backends.cudnn.allow_tf32 = False

TS, WPT = 16, 4  # a group is TS x TS work-items; each computes WPT x WPT outputs: a 64 x 64 tile of Y

# x: (N, C, H, W), w: (OC, C, KH, KW), y: (N, OC, OH, OW), all contiguous. Column p of Y enumerates (n, oh, ow),
# row r of the patch matrix enumerates (c, kh, kw), the order of W's last three dimensions (so W is a plain
# OC x R row-major matrix). A group owns a BM x BM tile of Y (BM = TS*WPT, rows: output channels, columns:
# positions); work-item (c, r) owns channels r, r+TS, ... and positions c, c+TS, ... of it. Each step stages a
# BM x TS slice of W and a TS x BM slice of patches in local memory; out-of-range elements load as 0.
CONV_SOURCE = r"""
#define BM (TS * WPT)
__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void example_tiled_conv2d(__global float* y, ulong y_off,
                          __global const float* x, ulong x_off,
                          __global const float* w, ulong w_off,
                          __global const float* bias, ulong bias_off,
                          int N, int C, int H, int W, int OC, int KH, int KW, int OH, int OW,
                          int sh, int sw, int ph, int pw, int dh, int dw)
{
    __local float Ws[TS][BM + 1];   /* Ws[r][oc]; +1: the transposing stores hit different banks */
    __local float Xs[TS][BM];       /* Xs[r][p] */
    const int lc = get_local_id(0), lr = get_local_id(1), lid = lr * TS + lc;
    const int OHW = OH * OW, P = N * OHW, KK = KH * KW, R = C * KK;
    const int oc0 = get_group_id(1) * BM, p0 = get_group_id(0) * BM;
    x += x_off; w += w_off;
    float acc[WPT][WPT];
    for (int i = 0; i < WPT; ++i)
        for (int j = 0; j < WPT; ++j)
            acc[i][j] = 0.0f;

    for (int r0 = 0; r0 < R; r0 += TS) {
        for (int e = 0; e < WPT; ++e) {
            const int idx = lid + e * TS * TS;
            /* weights: consecutive work-items walk along r (contiguous) */
            const int wo = idx / TS, wr = idx % TS;
            const int goc = oc0 + wo, gwr = r0 + wr;
            Ws[wr][wo] = (goc < OC && gwr < R) ? w[goc * R + gwr] : 0.0f;
            /* patches: consecutive work-items walk along p (along ow within an image row) */
            const int xr = idx / BM, xp = idx % BM;
            const int r = r0 + xr, p = p0 + xp;
            float v = 0.0f;
            if (r < R && p < P) {
                const int n = p / OHW, ohw = p % OHW, c = r / KK, k = r % KK;
                const int ih = (ohw / OW) * sh - ph + (k / KW) * dh;
                const int iw = (ohw % OW) * sw - pw + (k % KW) * dw;
                if (ih >= 0 && ih < H && iw >= 0 && iw < W)   /* padding: outside the image reads as 0 */
                    v = x[((n * C + c) * H + ih) * W + iw];
            }
            Xs[xr][xp] = v;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; ++k) {
            float a[WPT], b[WPT];
            for (int i = 0; i < WPT; ++i) a[i] = Ws[k][lr + i * TS];
            for (int j = 0; j < WPT; ++j) b[j] = Xs[k][lc + j * TS];
            for (int i = 0; i < WPT; ++i)
                for (int j = 0; j < WPT; ++j)
                    acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int j = 0; j < WPT; ++j) {
        const int p = p0 + lc + j * TS;
        if (p >= P)
            continue;
        const int n = p / OHW, ohw = p % OHW;
        for (int i = 0; i < WPT; ++i) {
            const int oc = oc0 + lr + i * TS;
            if (oc < OC) {
#ifdef HAS_BIAS
                y[y_off + (long)(n * OC + oc) * OHW + ohw] = acc[i][j] + bias[bias_off + oc];
#else
                y[y_off + (long)(n * OC + oc) * OHW + ohw] = acc[i][j];
#endif
            }
        }
    }
}
"""
CONV = {has_bias: Kernel(CONV_SOURCE, "example_tiled_conv2d",
                         options=f"-DTS={TS} -DWPT={WPT}" + (" -DHAS_BIAS" if has_bias else ""))
        for has_bias in (False, True)}


def _out_size(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _conv_fake(x, weight, bias, stride, padding, dilation):
    oh, ow = (_out_size(x.shape[2 + i], weight.shape[2 + i], stride[i], padding[i], dilation[i]) for i in range(2))
    return x.new_empty(x.shape[0], weight.shape[0], oh, ow)


def _conv_setup(ctx, inputs, output):
    x, weight, bias, ctx.stride, ctx.padding, ctx.dilation = inputs
    ctx.save_for_backward(x, weight)
    ctx.has_bias = bias is not None


def _conv_backward(ctx, grad):
    x, weight = ctx.saved_tensors
    conv_args = dict(stride=ctx.stride, padding=ctx.padding, dilation=ctx.dilation)
    grad_x = torch.nn.grad.conv2d_input(x.shape, weight, grad, **conv_args) if ctx.needs_input_grad[0] else None
    grad_w = torch.nn.grad.conv2d_weight(x, weight.shape, grad, **conv_args) if ctx.needs_input_grad[1] else None
    grad_b = grad.sum((0, 2, 3)) if ctx.has_bias and ctx.needs_input_grad[2] else None
    return grad_x, grad_w, grad_b, None, None, None


@pytorch_ocl.library.custom_op("ocl_examples::conv2d", fake=_conv_fake, backward=_conv_backward,
                               setup_context=_conv_setup)
def ocl_conv2d(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], stride: List[int],
               padding: List[int], dilation: List[int]) -> torch.Tensor:
    if x.dtype != torch.float32 or weight.dtype != torch.float32:
        raise TypeError(f"ocl_conv2d: float32 only, got {x.dtype} and {weight.dtype}")
    if x.dim() != 4 or weight.dim() != 4 or x.shape[1] != weight.shape[1]:
        raise ValueError(f"ocl_conv2d: input {tuple(x.shape)} and weight {tuple(weight.shape)} do not match "
                         f"(groups=1 only)")
    y = _conv_fake(x, weight, bias, stride, padding, dilation)
    if y.numel() == 0:
        return y
    (n, c, h, w), (oc, _, kh, kw), (oh, ow) = x.shape, weight.shape, y.shape[2:]
    x, weight = x.contiguous(), weight.contiguous()
    bias_arg = bias.contiguous() if bias is not None else y  # placeholder the kernel never reads without HAS_BIAS
    block = TS * WPT
    global_size = (math.ceil(n * oh * ow / block) * TS, math.ceil(oc / block) * TS)
    ints = [int32(v) for v in (n, c, h, w, oc, kh, kw, oh, ow, *stride, *padding, *dilation)]
    CONV[bias is not None](y, x, weight, bias_arg, *ints, global_size=global_size, local_size=(TS, TS))
    return y


def conv_forward(self, x):
    """Replacement nn.Conv2d.forward (zero padding, groups=1)."""
    if self.groups != 1 or self.padding_mode != "zeros" or isinstance(self.padding, str):
        raise NotImplementedError("ocl_conv2d example: groups=1, numeric zero padding only")
    return ocl_conv2d(x, self.weight, self.bias, list(self.stride), list(self.padding), list(self.dilation))


def use_custom_conv(model):
    count = 0
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            module.forward = types.MethodType(conv_forward, module)
            count += 1
    return count


# --- a small residual network ---------------------------------------------------------------------------------------
class ResidualBlock(nn.Module):
    def __init__(self, cin, cout, stride=1, dilation=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, dilation, dilation=dilation, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.skip = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.skip(x))


class ResNet(nn.Module):
    def __init__(self, width, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 5, 2, 2), nn.BatchNorm2d(width), nn.ReLU())  # conv with bias
        self.stages = nn.Sequential(ResidualBlock(width, width), ResidualBlock(width, 2 * width, stride=2),
                                    ResidualBlock(2 * width, 2 * width, dilation=2))
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.stages(self.stem(x)), 1).flatten(1))


# --- checks and timing ------------------------------------------------------------------------------------------------
def max_rel_diff(got, ref):
    return ((got - ref).abs().max() / ref.abs().max().clamp_min(1e-6)).item() if ref.numel() else 0.0


def check_grid(device, channels, size, tol):
    """Every combination of the grid against F.conv2d; bias alternates between cases. Returns the failure count."""
    c, oc = channels
    h, w = size
    worst, worst64, failed, cases = 0.0, 0.0, 0, 0
    grid = itertools.product((1, 2, 3), (1, 2), (0, 1, 2), (1, 3), (1, 3, 5))
    for i, (stride, dilation, padding, batch, k) in enumerate(grid):
        x = torch.randn(batch, c, h, w, device=device)
        weight = torch.randn(oc, c, k, k, device=device)
        bias = torch.randn(oc, device=device) if i % 2 else None
        got = ocl_conv2d(x, weight, bias, [stride] * 2, [padding] * 2, [dilation] * 2)
        ref = F.conv2d(x, weight, bias, stride, padding, dilation)
        # Also float64 on the CPU: the built-in kernel may sum in the kernel's order (diff exactly 0), so this shows
        # that both are right, not merely equal.
        ref64 = F.conv2d(*(t.cpu().double() if t is not None else None for t in (x, weight, bias)), stride=stride,
                         padding=padding, dilation=dilation)
        same_shape = got.shape == ref.shape
        diff = max_rel_diff(got, ref) if same_shape else float("inf")
        diff64 = max_rel_diff(got.cpu().double(), ref64) if same_shape else float("inf")
        cases += 1
        worst, worst64 = max(worst, diff), max(worst64, diff64)
        if max(diff, diff64) > tol:
            failed += 1
            print(f"  mismatch: stride={stride} dilation={dilation} padding={padding} batch={batch} kernel={k}: "
                  f"shape {tuple(got.shape)} vs {tuple(ref.shape)}, max relative diff {diff:.2e} vs built-in, "
                  f"{diff64:.2e} vs float64 CPU")
    status = "OK  " if not failed else "FAIL"
    print(f"check {status} conv2d grid: {cases} cases (C={c} OC={oc} H={h} W={w}, strides 1-3, dilations 1-2, "
          f"paddings 0-2, batch 1/3, kernels 1/3/5), max relative diff {worst:.2e} vs built-in, {worst64:.2e} vs "
          f"float64 CPU (tolerance {tol:.0e})")
    return failed


def check_model(device, width, batch, size, tol):
    torch.manual_seed(0)
    ref = ResNet(width).to(device)
    with torch.no_grad():  # non-trivial batch-norm statistics so that eval mode is not an identity
        for m in ref.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
    ref.eval()
    custom = copy.deepcopy(ref)
    replaced = use_custom_conv(custom)
    print(f"ResNet: width {width}, {sum(p.numel() for p in ref.parameters())} parameters, {replaced} nn.Conv2d "
          f"replaced, input {batch}x3x{size}x{size}")
    x = torch.randn(batch, 3, size, size, device=device)
    outs = []
    for model in (ref, custom):
        out = model(x)
        out.square().sum().backward()
        outs.append((out.detach(), {n: p.grad for n, p in model.named_parameters()}))
    (out_r, grads_r), (out_c, grads_c) = outs
    with torch.no_grad(), pytorch_ocl.profiler.profile() as prof:
        custom(x)
    launches = sum(r[0] == "example_tiled_conv2d" for r in prof.records)
    failed = int(launches != replaced)
    print(f"check {'OK  ' if not failed else 'FAIL'} custom ResNet forward launched the kernel {launches} times for "
          f"{replaced} nn.Conv2d")
    diff = max_rel_diff(out_c, out_r)
    failed += diff > tol
    print(f"check {'OK  ' if diff <= tol else 'FAIL'} ResNet logits: max relative diff {diff:.2e} "
          f"(tolerance {tol:.0e})")
    diff = max(max_rel_diff(grads_c[n], grads_r[n]) for n in grads_r)
    failed += diff > tol
    print(f"check {'OK  ' if diff <= tol else 'FAIL'} ResNet gradients of all {len(grads_r)} parameters: max relative "
          f"diff {diff:.2e} (tolerance {tol:.0e})")
    return failed, ref, x


def device_time_us(fn, reps):
    fn()  # builds / autotunes outside the measurement
    with pytorch_ocl.profiler.profile() as prof:
        for _ in range(reps):
            fn()
    return sum(r[2] for r in prof.records) / reps


def wall_time_us(fn, device, reps):
    fn()
    torch.ocl.synchronize(device)
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.ocl.synchronize(device)
    return (time.perf_counter() - t0) / reps * 1e6


def report_times(model, x, device, reps):
    calls = []
    hooks = [m.register_forward_pre_hook(lambda mod, args: calls.append((args[0], mod)))
             for m in model.modules() if isinstance(m, nn.Conv2d)]
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    print(f"time per call, custom kernel vs built-in F.conv2d (device time from the profiler; wall time with "
          f"torch.ocl.synchronize; {reps} reps):")
    totals = [0.0] * 4
    with torch.no_grad():
        for inp, m in calls:
            runs = (lambda: ocl_conv2d(inp, m.weight, m.bias, list(m.stride), list(m.padding), list(m.dilation)),
                    lambda: F.conv2d(inp, m.weight, m.bias, m.stride, m.padding, m.dilation))
            times = [device_time_us(f, reps) for f in runs] + [wall_time_us(f, device, reps) for f in runs]
            totals = [a + b for a, b in zip(totals, times)]
            print(f"  in {'x'.join(map(str, inp.shape)):>14} w {'x'.join(map(str, m.weight.shape)):>12} "
                  f"s{m.stride[0]} p{m.padding[0]} d{m.dilation[0]}: device {times[0]:9.1f} us vs {times[1]:9.1f} us,"
                  f" wall {times[2]:9.1f} us vs {times[3]:9.1f} us")
    print(f"  all layers: device {totals[0]:.1f} us vs {totals[1]:.1f} us (custom/built-in = "
          f"{totals[0] / max(totals[1], 1e-9):.2f}x), wall {totals[2]:.1f} us vs {totals[3]:.1f} us")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="ocl:0")
    parser.add_argument("--quick", action="store_true", help="small shapes for CI")
    args = parser.parse_args()
    pytorch_ocl.set_strict(True)
    device = torch.device(args.device)
    torch.manual_seed(0)
    print(f"device {device}: {torch.ocl.get_device_name(device.index or 0)}")
    tol = 1e-4  # float32, different summation order than the built-in convolution
    if args.quick:
        grids, (width, batch, size), reps = [((3, 67), (11, 9))], (8, 2, 17), 2
    else:
        grids, (width, batch, size), reps = [((3, 67), (11, 9)), ((19, 70), (23, 17))], (32, 8, 63), 10
    failed = sum(check_grid(device, channels, size, tol) for channels, size in grids)
    model_failed, model, x = check_model(device, width, batch, size, tol)
    failed += model_failed
    report_times(model, x, device, reps)
    if failed:
        print(f"{failed} check(s) FAILED")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
