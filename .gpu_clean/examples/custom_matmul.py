"""A hand-written OpenCL matmul replacing every nn.Linear of a small GPT-2-style model.

What it shows:
- `pytorch_ocl.Kernel`: a tiled matmul (64 x 16 / 16 x 64 slices of both operands staged in `__local` memory,
  4 x 4 outputs per work-item held in registers; any M/N/K, tails padded with zeros; operands read through their
  strides, so transposed views need no copies; optional bias).
- `pytorch_ocl.library.custom_op`: the kernel as a PyTorch op `ocl_examples::linear` with a fake (shape)
  implementation and an autograd formula (dX = dY W and dW = dY^T X run the same kernel on transposed views,
  db = dY summed over rows).
- Swapping it into a model: the forward of every nn.Linear of a GPT-2-style model (token + position embedding,
  causal self-attention blocks, layer norm, GELU MLP, LM head) is replaced; logits, loss and every parameter
  gradient are compared with the same model on the built-in path.
- `pytorch_ocl.profiler.profile`: device time of the kernel against the built-in linear for each layer shape.

Run: python examples/custom_matmul.py [--device ocl:0] [--quick]. Exits with status 1 when a check fails.
Strict mode is switched on: an operator without an OpenCL kernel raises instead of running on the CPU.
"""
import argparse
import copy
import math
import os
import sys
import time
import types
from typing import Optional

os.environ.setdefault("PYTORCH_OCL_STRICT", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import pytorch_ocl  # noqa: E402
from pytorch_ocl import Kernel, int32, int64  # noqa: E402

TS, WPT = 16, 4  # a group is TS x TS work-items; each computes WPT x WPT outputs: a 64 x 64 tile of C

# C[M,N] = A[M,K] @ B[K,N] (+ bias[N]). A and B are addressed through (row, column) element strides.
# A group owns a BM x BM tile of C (BM = TS*WPT); work-item (c, r) owns rows r, r+TS, r+2TS, ... and columns
# c, c+TS, ... of it (interleaved, so neighbouring work-items touch neighbouring columns: coalesced stores).
# Each step of the K loop stages a BM x TS slice of A and a TS x BM slice of B in local memory, every work-item
# loading WPT elements of each; out-of-range elements load as 0, so M/N/K tails need no special case.
MATMUL_SOURCE = r"""
#define BM (TS * WPT)
__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void example_tiled_matmul(__global float* C, ulong c_off,
                          __global const float* A, ulong a_off, long a_sm, long a_sk,
                          __global const float* B, ulong b_off, long b_sk, long b_sn,
                          __global const float* bias, ulong bias_off,
                          int M, int N, int K)
{
    __local float As[TS][BM + 1];   /* As[k][m]; +1: the transposing stores hit different banks */
    __local float Bs[TS][BM];       /* Bs[k][n] */
    const int lc = get_local_id(0), lr = get_local_id(1), lid = lr * TS + lc;
    const int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BM;
    A += a_off; B += b_off;
    float acc[WPT][WPT];
    for (int i = 0; i < WPT; ++i)
        for (int j = 0; j < WPT; ++j)
            acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += TS) {
        for (int e = 0; e < WPT; ++e) {
            const int idx = lid + e * TS * TS;
            /* A: consecutive work-items walk along k (contiguous for a row-major A) */
            const int am = idx / TS, ak = idx % TS;
            const int gm = m0 + am, gka = k0 + ak;
            As[ak][am] = (gm < M && gka < K) ? A[gm * a_sm + gka * a_sk] : 0.0f;
            /* B: consecutive work-items walk along n */
            const int bk = idx / BM, bn = idx % BM;
            const int gkb = k0 + bk, gn = n0 + bn;
            Bs[bk][bn] = (gkb < K && gn < N) ? B[gkb * b_sk + gn * b_sn] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; ++k) {
            float a[WPT], b[WPT];
            for (int i = 0; i < WPT; ++i) a[i] = As[k][lr + i * TS];
            for (int j = 0; j < WPT; ++j) b[j] = Bs[k][lc + j * TS];
            for (int i = 0; i < WPT; ++i)
                for (int j = 0; j < WPT; ++j)
                    acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < WPT; ++i) {
        const int row = m0 + lr + i * TS;
        for (int j = 0; j < WPT; ++j) {
            const int col = n0 + lc + j * TS;
            if (row < M && col < N) {
#ifdef HAS_BIAS
                C[c_off + (long)row * N + col] = acc[i][j] + bias[bias_off + col];
#else
                C[c_off + (long)row * N + col] = acc[i][j];
#endif
            }
        }
    }
}
"""
# strided=True: the kernel indexes its operands through the strides passed to it, so views are accepted as-is.
MATMUL = {has_bias: Kernel(MATMUL_SOURCE, "example_tiled_matmul",
                           options=f"-DTS={TS} -DWPT={WPT}" + (" -DHAS_BIAS" if has_bias else ""), strided=True)
          for has_bias in (False, True)}


def tiled_matmul(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """a (M,K) @ b (K,N) [+ bias (N)] with the OpenCL kernel; a and b may be any strided views."""
    if a.dtype != torch.float32 or b.dtype != torch.float32:
        raise TypeError(f"tiled_matmul: float32 only, got {a.dtype} and {b.dtype}")
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"tiled_matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} do not match")
    c = torch.empty(m, n, device=a.device, dtype=a.dtype)
    if m == 0 or n == 0:
        return c
    bias_arg = bias.contiguous() if bias is not None else c  # c: placeholder the kernel never reads without HAS_BIAS
    block = TS * WPT
    groups = (math.ceil(n / block) * TS, math.ceil(m / block) * TS)
    MATMUL[bias is not None](c, a, int64(a.stride(0)), int64(a.stride(1)), b, int64(b.stride(0)), int64(b.stride(1)),
                             bias_arg, int32(m), int32(n), int32(k), global_size=groups, local_size=(TS, TS))
    return c


def _linear_fake(x, weight, bias):
    return x.new_empty(x.shape[0], weight.shape[0])


def _linear_setup(ctx, inputs, output):
    x, weight, bias = inputs
    ctx.save_for_backward(x, weight)
    ctx.has_bias = bias is not None


def _linear_backward(ctx, grad):
    x, weight = ctx.saved_tensors
    grad_x = tiled_matmul(grad, weight) if ctx.needs_input_grad[0] else None      # (M,N) @ (N,K)
    grad_w = tiled_matmul(grad.t(), x) if ctx.needs_input_grad[1] else None       # (N,M) @ (M,K), grad.t() is a view
    grad_b = grad.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
    return grad_x, grad_w, grad_b


@pytorch_ocl.library.custom_op("ocl_examples::linear", fake=_linear_fake, backward=_linear_backward,
                               setup_context=_linear_setup)
def ocl_linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
    """x (M,K) @ weight(N,K)^T + bias: nn.Linear's formula on 2-D input."""
    return tiled_matmul(x, weight.t(), bias)


def linear_forward(self, x):
    """Replacement nn.Linear.forward: flattens the leading dimensions into M."""
    y = ocl_linear(x.reshape(-1, x.shape[-1]), self.weight, self.bias)
    return y.reshape(*x.shape[:-1], self.out_features)


def use_custom_linear(model):
    count = 0
    for module in model.modules():
        if isinstance(module, nn.Linear):
            module.forward = types.MethodType(linear_forward, module)
            count += 1
    return count


# --- a small GPT-2-style language model -----------------------------------------------------------------------------
class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size, dtype=torch.bool), diagonal=1))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.n_head)
        att = att.masked_fill(self.mask[:t, :t], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, block_size, n_embd, n_head, n_layer):
        super().__init__()
        self.tok = nn.Embedding(vocab, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.blocks = nn.Sequential(*[Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab, bias=False)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.blocks(self.tok(idx) + self.pos(pos))
        return self.head(self.ln_f(x))


# --- checks and timing ------------------------------------------------------------------------------------------------
def max_rel_diff(got, ref):
    return ((got - ref).abs().max() / ref.abs().max().clamp_min(1e-6)).item() if ref.numel() else 0.0


class Checker:
    def __init__(self):
        self.failed = 0

    def flag(self, what, ok):
        self.failed += not ok
        print(f"check {'OK  ' if ok else 'FAIL'} {what}")

    def __call__(self, what, diff, tol):
        self.flag(f"{what}: max relative diff {diff:.2e} (tolerance {tol:.0e})", diff <= tol)


def check_linear_shapes(check, device, shapes, tol):
    """The op alone against F.linear: forward and all three gradients, with and without bias."""
    for m, n, k in shapes:
        for has_bias in (True, False):
            x = torch.randn(m, k, device=device, requires_grad=True)
            w = torch.randn(n, k, device=device, requires_grad=True)
            b = torch.randn(n, device=device, requires_grad=True) if has_bias else None
            g = torch.randn(m, n, device=device)
            inputs = [t for t in (x, w, b) if t is not None]
            y = ocl_linear(x, w, b)
            grads = torch.autograd.grad(y, inputs, g)
            y_ref = F.linear(x, w, b)
            grads_ref = torch.autograd.grad(y_ref, inputs, g)
            diff = max([max_rel_diff(y, y_ref)] + [max_rel_diff(a, r) for a, r in zip(grads, grads_ref)])
            check(f"linear M={m} N={n} K={k} bias={has_bias} forward+backward vs built-in", diff, tol)
            # Also against float64 on the CPU: the built-in GEMM may sum in the same order as the kernel (the diff
            # above is then exactly 0), so this shows both are right, not merely equal.
            y64 = F.linear(*(t.detach().cpu().double() if t is not None else None for t in (x, w, b)))
            check(f"linear M={m} N={n} K={k} bias={has_bias} forward vs float64 CPU",
                  max_rel_diff(y.detach().cpu().double(), y64), tol)


def check_model(check, device, cfg, batch, tol):
    torch.manual_seed(0)
    ref = GPT(**cfg).to(device)
    custom = copy.deepcopy(ref)
    replaced = use_custom_linear(custom)
    print(f"GPT: {cfg}, {sum(p.numel() for p in ref.parameters())} parameters, {replaced} nn.Linear replaced")
    idx = torch.randint(cfg["vocab"], (batch, cfg["block_size"]), device=device)
    target = torch.randint(cfg["vocab"], (batch, cfg["block_size"]), device=device)
    results = []
    for model in (ref, custom):
        logits = model(idx)
        loss = F.cross_entropy(logits.reshape(-1, cfg["vocab"]), target.reshape(-1))
        loss.backward()
        results.append((logits.detach(), loss.detach(), {n: p.grad for n, p in model.named_parameters()}))
    (logits_r, loss_r, grads_r), (logits_c, loss_c, grads_c) = results
    with torch.no_grad(), pytorch_ocl.profiler.profile() as prof:
        custom(idx)
    launches = sum(r[0] == "example_tiled_matmul" for r in prof.records)
    check.flag(f"custom GPT forward launched the kernel {launches} times for {replaced} nn.Linear",
               launches == replaced)
    check("GPT logits", max_rel_diff(logits_c, logits_r), tol)
    check("GPT loss", max_rel_diff(loss_c, loss_r), tol)
    worst = max(grads_r, key=lambda n: max_rel_diff(grads_c[n], grads_r[n]))
    check(f"GPT gradients of all {len(grads_r)} parameters (worst: {worst})",
          max_rel_diff(grads_c[worst], grads_r[worst]), tol)
    return ref, idx


def linear_inputs(model, idx):
    """(x, layer) for every nn.Linear call of one forward pass, x flattened to 2-D."""
    seen = []
    hooks = [m.register_forward_pre_hook(lambda mod, args: seen.append((args[0].reshape(-1, args[0].shape[-1]), mod)))
             for m in model.modules() if isinstance(m, nn.Linear)]
    with torch.no_grad():
        model(idx)
    for h in hooks:
        h.remove()
    return seen


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


def report_times(model, idx, device, reps):
    print(f"time per call, custom kernel vs built-in F.linear (device time from the profiler; wall time with "
          f"torch.ocl.synchronize; {reps} reps):")
    totals = [0.0] * 4
    with torch.no_grad():
        shapes = {}
        for x, mod in linear_inputs(model, idx):
            shapes.setdefault((x.shape[0], mod.out_features, x.shape[1], mod.bias is not None), (x, mod))
        for (m, n, k, has_bias), (x, mod) in shapes.items():
            runs = (lambda: ocl_linear(x, mod.weight, mod.bias), lambda: F.linear(x, mod.weight, mod.bias))
            times = [device_time_us(f, reps) for f in runs] + [wall_time_us(f, device, reps) for f in runs]
            totals = [a + b for a, b in zip(totals, times)]
            print(f"  M={m:5d} N={n:5d} K={k:5d} bias={int(has_bias)}: device {times[0]:9.1f} us vs {times[1]:9.1f} us,"
                  f" wall {times[2]:9.1f} us vs {times[3]:9.1f} us")
    print(f"  all shapes: device {totals[0]:.1f} us vs {totals[1]:.1f} us (custom/built-in = "
          f"{totals[0] / max(totals[1], 1e-9):.2f}x), wall {totals[2]:.1f} us vs {totals[3]:.1f} us")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="ocl:0")
    parser.add_argument("--quick", action="store_true", help="small shapes for CI")
    args = parser.parse_args()
    pytorch_ocl.set_strict(True)
    device = torch.device(args.device)
    torch.manual_seed(0)
    # Odd sizes so that M, N and K have tails (not multiples of the 64 x 64 tile of C or of the 16-deep K step).
    if args.quick:
        shapes = [(1, 1, 1), (17, 5, 33), (70, 130, 33), (3, 0, 7), (5, 9, 0)]
        cfg, batch, reps = dict(vocab=101, block_size=13, n_embd=40, n_head=4, n_layer=2), 2, 3
    else:
        shapes = [(1, 1, 1), (17, 5, 33), (70, 130, 33), (3, 0, 7), (5, 9, 0), (40, 48, 16), (129, 257, 65),
                  (300, 100, 700)]
        cfg, batch, reps = dict(vocab=1013, block_size=64, n_embd=132, n_head=4, n_layer=4), 4, 20
    print(f"device {device}: {torch.ocl.get_device_name(device.index or 0)}")
    check = Checker()
    tol = 1e-4  # float32, different summation order than the built-in GEMM
    check_linear_shapes(check, device, shapes, tol)
    model, idx = check_model(check, device, cfg, batch, tol)
    report_times(model, idx, device, reps)
    if check.failed:
        print(f"{check.failed} check(s) FAILED")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
