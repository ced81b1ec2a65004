"""The torch.nn.functional losses on ocl vs the CPU: forward and the gradients of every floating
input, reductions none/mean/sum, class/element weights, contiguous and transposed inputs, float32,
float64, float16 and bfloat16 (where the CPU raises, ocl must raise too). Native kernels:
mse/smooth_l1/huber/binary_cross_entropy (+ backward), nll_loss, gather and masked_select; the
other losses decompose into native ops above the backend. Plus the OpInfo samples of each loss."""
import pytest
import torch
import torch.nn.functional as F
from opinfo_compare import opinfos_named, run_opinfo
from torch.testing import assert_close

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
TOL = {torch.float16: dict(rtol=1e-2, atol=1e-2), torch.bfloat16: dict(rtol=3e-2, atol=5e-2)}
N, C = 6, 5


def ids(dtypes):
    return [str(d).replace("torch.", "") for d in dtypes]


class Inputs:
    """Random CPU tensors of one dtype; `transposed` builds each 2-D one as the transpose of a
    contiguous tensor (a non-contiguous input)."""

    def __init__(self, dtype, transposed, seed=0):
        self.g = torch.Generator().manual_seed(seed)
        self.dtype, self.transposed = dtype, transposed

    def _shape(self, shape, make):
        if self.transposed and len(shape) == 2:
            return make(shape[::-1]).t()
        return make(shape)

    def randn(self, *shape):
        return self._shape(shape, lambda s: torch.randn(s, generator=self.g).to(self.dtype))

    def rand(self, *shape, low=0.0, high=1.0):
        return self._shape(shape, lambda s: (low + (high - low) * torch.rand(s, generator=self.g)).to(self.dtype))

    def sign(self, *shape):
        return self._shape(shape, lambda s: (torch.randint(0, 2, s, generator=self.g) * 2 - 1).to(self.dtype))

    def classes(self, *shape):
        return torch.randint(0, C, shape, generator=self.g)


# name -> (build(inputs) -> (tensors needing grad, other args), call(tensors, others, reduction))
def _ce_idx(t):
    return [t.randn(N, C)], [t.classes(N), t.rand(C, low=0.2)]


def _ce_spatial(t):
    return [t.randn(2, C, 3, 2)], [torch.randint(0, C, (2, 3, 2), generator=t.g), None]


def _ce_probs(t):
    return [t.randn(N, C)], [torch.softmax(t.randn(N, C).float(), 1).to(t.dtype), t.rand(C, low=0.2)]


CASES = {
    "cross_entropy": (_ce_idx, lambda a, o, r: F.cross_entropy(a[0], o[0], reduction=r)),
    "cross_entropy_weight_ignore_smoothing": (
        _ce_idx, lambda a, o, r: F.cross_entropy(a[0], o[0], weight=o[1], ignore_index=1, label_smoothing=0.2,
                                                 reduction=r)),
    "cross_entropy_weight_ignore": (
        _ce_idx, lambda a, o, r: F.cross_entropy(a[0], o[0], weight=o[1], ignore_index=2, reduction=r)),
    "cross_entropy_spatial_smoothing": (
        _ce_spatial, lambda a, o, r: F.cross_entropy(a[0], o[0], label_smoothing=0.1, reduction=r)),
    "cross_entropy_probs": (
        _ce_probs, lambda a, o, r: F.cross_entropy(a[0], o[0], weight=o[1], label_smoothing=0.1, reduction=r)),
    "mse_loss": (lambda t: ([t.randn(N, C), t.randn(N, C)], []), lambda a, o, r: F.mse_loss(a[0], a[1], reduction=r)),
    "l1_loss": (lambda t: ([t.randn(N, C), t.randn(N, C)], []), lambda a, o, r: F.l1_loss(a[0], a[1], reduction=r)),
    "smooth_l1_loss": (lambda t: ([t.randn(N, C), t.randn(N, C)], []),
                       lambda a, o, r: F.smooth_l1_loss(a[0], a[1], reduction=r, beta=0.5)),
    "smooth_l1_loss_beta0": (lambda t: ([t.randn(N, C)], [t.randn(N, C)]),
                             lambda a, o, r: F.smooth_l1_loss(a[0], o[0], reduction=r, beta=0.0)),
    "huber_loss": (lambda t: ([t.randn(N, C), t.randn(N, C)], []),
                   lambda a, o, r: F.huber_loss(a[0], a[1], reduction=r, delta=0.7)),
    "binary_cross_entropy": (
        lambda t: ([t.rand(N, C, low=0.02, high=0.98)], [t.rand(N, C), t.rand(C)]),
        lambda a, o, r: F.binary_cross_entropy(a[0], o[0], weight=o[1], reduction=r)),
    "binary_cross_entropy_noweight": (
        lambda t: ([t.rand(N, C, low=0.02, high=0.98), t.rand(N, C)], []),
        lambda a, o, r: F.binary_cross_entropy(a[0], a[1].detach(), reduction=r)),
    "binary_cross_entropy_with_logits": (
        lambda t: ([t.randn(N, C)], [t.rand(N, C), t.rand(C), t.rand(C, low=0.5, high=2.0)]),
        lambda a, o, r: F.binary_cross_entropy_with_logits(a[0], o[0], weight=o[1], pos_weight=o[2], reduction=r)),
    "kl_div": (lambda t: ([t.randn(N, C)], [t.rand(N, C)]), lambda a, o, r: F.kl_div(a[0], o[0], reduction=r)),
    "kl_div_log_target": (lambda t: ([t.randn(N, C), t.randn(N, C)], []),
                          lambda a, o, r: F.kl_div(a[0], a[1], reduction=r, log_target=True)),
    "margin_ranking_loss": (lambda t: ([t.randn(N, C), t.randn(N, C)], [t.sign(N, C)]),
                            lambda a, o, r: F.margin_ranking_loss(a[0], a[1], o[0], margin=0.3, reduction=r)),
    "hinge_embedding_loss": (lambda t: ([t.randn(N, C)], [t.sign(N, C)]),
                             lambda a, o, r: F.hinge_embedding_loss(a[0], o[0], margin=0.8, reduction=r)),
    "cosine_embedding_loss": (lambda t: ([t.randn(N, C), t.randn(N, C)], [t.sign(N)]),
                              lambda a, o, r: F.cosine_embedding_loss(a[0], a[1], o[0], margin=0.2, reduction=r)),
    "soft_margin_loss": (lambda t: ([t.randn(N, C)], [t.sign(N, C)]),
                         lambda a, o, r: F.soft_margin_loss(a[0], o[0], reduction=r)),
    "multilabel_soft_margin_loss": (
        lambda t: ([t.randn(N, C)], [(t.sign(N, C) > 0).to(t.dtype), t.rand(C)]),
        lambda a, o, r: F.multilabel_soft_margin_loss(a[0], o[0], weight=o[1], reduction=r)),
    "poisson_nll_loss": (lambda t: ([t.randn(N, C)], [t.rand(N, C, high=3.0)]),
                         lambda a, o, r: F.poisson_nll_loss(a[0], o[0], reduction=r)),
    "poisson_nll_loss_full": (
        lambda t: ([t.rand(N, C, low=0.1, high=2.0)], [t.rand(N, C, high=3.0)]),
        lambda a, o, r: F.poisson_nll_loss(a[0], o[0], log_input=False, full=True, reduction=r)),
    "gaussian_nll_loss": (
        lambda t: ([t.randn(N, C), t.randn(N, C), t.rand(N, C, low=0.2, high=2.0)], []),
        lambda a, o, r: F.gaussian_nll_loss(a[0], a[1], a[2], full=True, reduction=r)),
}


def _on(ts, device):
    return [t.to(device) if isinstance(t, torch.Tensor) else t for t in ts]


def _run(call, grads, others, reduction, device, out_grad):
    leaves = [t.detach().to(device).requires_grad_() for t in grads]
    out = call(leaves, _on(others, device), reduction)
    g = out_grad.to(device) if out.dim() else torch.ones((), dtype=out.dtype, device=device)
    return out, torch.autograd.grad(out, leaves, g.expand_as(out))


@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
@pytest.mark.parametrize("name", list(CASES))
def test_loss_matches_cpu(name, dtype):
    build, call = CASES[name]
    reductions = ["none", "mean", "sum"] + (["batchmean"] if name.startswith("kl_div") else [])
    # transposed inputs in float32/float64 only (the 16-bit kernels are the same generated code)
    for transposed in (False, True) if dtype in (torch.float32, torch.float64) else (False,):
        grads, others = build(Inputs(dtype, transposed))
        for reduction in reductions:
            try:
                ref, ref_grads = _run(call, grads, others, reduction, "cpu", torch.zeros(()))
            except RuntimeError:  # the CPU refuses this dtype: so must ocl
                with pytest.raises((RuntimeError, NotImplementedError)):
                    _run(call, grads, others, reduction, "ocl", torch.zeros(()))
                continue
            # reduction="none": a random output gradient, so each element's gradient is checked
            out_grad = torch.randn(ref.shape, generator=torch.Generator().manual_seed(3)).to(ref.dtype)
            ref, ref_grads = _run(call, grads, others, reduction, "cpu", out_grad)
            out, out_grads = _run(call, grads, others, reduction, "ocl", out_grad)
            msg = f"{name} {reduction} transposed={transposed}"
            assert out.device.type == "ocl" and out.dtype == ref.dtype, msg
            assert_close(out.cpu(), ref.detach(), equal_nan=True, msg=msg, **TOL.get(dtype, {}))
            for k, (o, r) in enumerate(zip(out_grads, ref_grads)):
                assert_close(o.cpu(), r, equal_nan=True, msg=f"{msg} grad {k}", **TOL.get(dtype, {}))


def test_zero_size_and_scalar_inputs():
    for f in (F.mse_loss, F.smooth_l1_loss, F.huber_loss, F.l1_loss, F.soft_margin_loss):
        for shape in [(0, 3), ()]:
            x, y = torch.randn(shape), torch.randn(shape).sign()
            for r in ("none", "sum", "mean"):
                ref = f(x, y, reduction=r)
                out = f(x.to("ocl"), y.to("ocl"), reduction=r)
                assert_close(out.cpu(), ref, equal_nan=True)
    x = torch.rand(0, 4)
    assert_close(F.binary_cross_entropy(x.to("ocl"), x.to("ocl"), reduction="sum").cpu(),
                 F.binary_cross_entropy(x, x, reduction="sum"))


def test_broadcast_and_out_variants():
    x, y = torch.randn(4, 5), torch.randn(5)
    with pytest.warns(UserWarning):  # torch warns about the broadcast target, on both devices
        out = F.mse_loss(x.to("ocl"), y.to("ocl"), reduction="none")
    assert_close(out.cpu(), (x - y) ** 2)
    res = torch.empty(0, device="ocl")
    torch._C._nn.mse_loss(x.to("ocl"), y.expand(4, 5).to("ocl"), 1, out=res)  # 1 = mean
    assert_close(res.cpu(), ((x - y) ** 2).mean())
    res = torch.empty(7, device="ocl")
    torch._C._nn.huber_loss(x.to("ocl"), x.to("ocl") + 2, 0, 1.0, out=res)  # 0 = none: resized
    assert_close(res.cpu(), torch.full((4, 5), 1.5))


def test_errors():
    with pytest.raises(NotImplementedError, match="mse_loss"):
        F.mse_loss(torch.ones(3, dtype=torch.long, device="ocl"), torch.ones(3, dtype=torch.long, device="ocl"))
    with pytest.raises(RuntimeError, match="delta"):
        F.huber_loss(torch.ones(3, device="ocl"), torch.ones(3, device="ocl"), delta=0.0)


def test_gather_and_masked_select():
    x = torch.randn(4, 5, 6)
    for src in (x, x.transpose(0, 2)[:, ::2]):
        for d in range(3):
            idx = torch.randint(0, src.size(d), (2, 2, 2))
            assert_close(torch.gather(src.to("ocl"), d, idx.to("ocl")).cpu(), torch.gather(src, d, idx))
    assert torch.gather(torch.tensor(3.0, device="ocl"), 0, torch.tensor(0, device="ocl")).item() == 3.0
    ints = torch.arange(10).reshape(2, 5)
    idx = torch.tensor([[4, 0], [1, 1]])
    assert torch.equal(torch.gather(ints.to("ocl"), 1, idx.to("ocl")).cpu(), torch.gather(ints, 1, idx))
    with pytest.raises(IndexError, match="out of bounds"):
        torch.gather(x.to("ocl"), 1, torch.full((1, 1, 1), 7, device="ocl"))
        torch.ocl.synchronize()  # reported at the next wait, as CUDA
    m = torch.rand(4, 1, 6) > 0.5
    for src in (x, x.half(), (x > 0)):
        assert torch.equal(torch.masked_select(src.to("ocl"), m.to("ocl")).cpu(), torch.masked_select(src, m))
    assert torch.masked_select(x.to("ocl"), torch.zeros(6, dtype=torch.bool, device="ocl")).shape == (0,)


OPINFO_LOSSES = ["nn.functional.cross_entropy", "nn.functional.mse_loss", "nn.functional.l1_loss",
                 "nn.functional.smooth_l1_loss", "nn.functional.huber_loss", "nn.functional.binary_cross_entropy",
                 "nn.functional.binary_cross_entropy_with_logits", "nn.functional.kl_div",
                 "nn.functional.margin_ranking_loss", "nn.functional.hinge_embedding_loss",
                 "nn.functional.cosine_embedding_loss", "nn.functional.soft_margin_loss",
                 "nn.functional.multilabel_soft_margin_loss", "nn.functional.poisson_nll_loss",
                 "nn.functional.gaussian_nll_loss", "nn.functional.nll_loss", "gather", "masked_select"]


# Gradients of gather and masked_select are the indexing family's scatter_add / masked_scatter.
FOREIGN = {"scatter_add", "masked_scatter", "masked_scatter_", "index_put", "index", "nonzero"}


@pytest.mark.parametrize("name", OPINFO_LOSSES)
def test_opinfo_yardstick(name):
    ops = opinfos_named([name])
    if not ops:
        pytest.skip(f"no OpInfo named {name} in this torch")
    passed, failures, blocked = 0, [], []
    for op in ops:
        p, f = run_opinfo(op, [torch.float32, torch.float64, torch.float16, torch.bfloat16], max_samples=8, tol=TOL,
                          foreign=FOREIGN, blocked=blocked)
        passed += p
        failures += f
    print(f"\nOpInfo {name}: {passed}/{passed + len(failures)} samples pass"
          + (f", {len(blocked)} blocked on {sorted(set(blocked))}" if blocked else ""))
    assert not failures, f"{len(failures)} of {passed + len(failures)} samples failed:\n" + "\n".join(failures[:20])
