"""The fused optimizer kernels (_fused_adam_, _fused_adamw_, _fused_sgd_, _fused_adagrad_) on ocl against the
CPU's own fused kernels (the same math) and against the foreach optimizers, through the ops directly and
through torch.optim(..., fused=True): several steps, float32/float16/bfloat16(/float64) params, grad_scale and
found_inf, tensor lr, non-contiguous and zero-size params, a small model and GradScaler."""
import pytest
import torch
from torch.testing import assert_close

import pytorch_ocl  # noqa: F401

DEV = "ocl"
FLOATS = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float32: dict(rtol=2e-5, atol=2e-6), torch.float64: dict(rtol=1e-10, atol=1e-12),
       # one rounding of the stored state apart (float math in both, different operation order)
       torch.float16: dict(rtol=2e-3, atol=2e-3), torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2)}


def has_fp64():
    try:
        torch.ones(1, dtype=torch.float64, device=DEV).add_(1).cpu()
        return True
    except RuntimeError:
        return False


def ids(dtypes):
    return [str(d).replace("torch.", "") for d in dtypes]


def shapes_list(dtype, seed, positive=False):
    """Mixed sizes: ragged 1-D, 2-D, a transposed (dense, not contiguous) one and an empty one (a 0-dim one is
    test_sliced_and_0dim_params's: it takes the strided kernels, a build per variant)."""
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape):
        t = torch.randn(shape, generator=g)
        return (t.abs() + 0.1 if positive else t).to(dtype)

    return [rnd(3, 5), rnd(67), rnd(6, 4).t(), rnd(0, 3), rnd(2, 33)]


def clone_dev(ts):
    return [t.clone().to(DEV) for t in ts]


def steps(n, value, device):
    return [torch.tensor(float(value), device=device) for _ in range(n)]


def check_all(ocl_lists, cpu_lists, dtype):
    for ol, cl in zip(ocl_lists, cpu_lists):
        for o, c in zip(ol, cl):
            assert o.device.type == "ocl"
            assert_close(o.cpu(), c, **TOL[dtype])


ADAM_CASES = [dict(), dict(amsgrad=True), dict(maximize=True), dict(weight_decay=0.1),
              dict(amsgrad=True, maximize=True, weight_decay=0.05)]


def cases_by_dtype(cases):
    """Every case in float32; the plain one and the one with every option in the 16-bit dtypes (each dtype
    and variant is a kernel build: this keeps a cold run of the file short)."""
    out = [(c, torch.float32) for c in cases]
    return out + [(c, d) for d in (torch.float16, torch.bfloat16) for c in (cases[0], cases[-1])]


def case_id(c):
    return "-".join(c) or "plain"


def adam_lists(dtype, amsgrad, device=None):
    p, g = shapes_list(dtype, 1), shapes_list(dtype, 2)
    m, v = shapes_list(dtype, 3), shapes_list(dtype, 4, positive=True)
    mx = [t * 1.5 for t in v] if amsgrad else []
    return [p, g, m, v, mx]


@pytest.mark.parametrize("case,dtype", cases_by_dtype(ADAM_CASES),
                         ids=[f"{case_id(c)}-{ids([d])[0]}" for c, d in cases_by_dtype(ADAM_CASES)])
@pytest.mark.parametrize("op", ["_fused_adam_", "_fused_adamw_"])
def test_adam_ops_match_cpu(op, case, dtype):
    amsgrad = case.get("amsgrad", False)
    cpu = adam_lists(dtype, amsgrad)
    ocl = [clone_dev(lst) for lst in cpu]
    kw = dict(lr=0.01, beta1=0.9, beta2=0.99, weight_decay=case.get("weight_decay", 0.0), eps=1e-6,
              amsgrad=amsgrad, maximize=case.get("maximize", False))
    fn = getattr(torch, op)
    n = len(cpu[0])
    for step in (1, 2, 7):  # several steps: the bias corrections change with the device step count
        fn(*cpu, steps(n, step, "cpu"), **kw)
        fn(*ocl, steps(n, step, DEV), **kw)
        check_all(ocl, cpu, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_adam_float64_and_tensor_lr(dtype):
    if dtype == torch.float64 and not has_fp64():
        pytest.skip("device without float64")
    cpu = adam_lists(dtype, True)
    ocl = [clone_dev(lst) for lst in cpu]
    n = len(cpu[0])
    kw = dict(beta1=0.8, beta2=0.95, weight_decay=0.01, eps=1e-8, amsgrad=True, maximize=False)
    for step in (1, 3):
        torch._fused_adamw_(*cpu, steps(n, step, "cpu"), lr=torch.tensor(0.02), **kw)
        torch._fused_adamw_(*ocl, steps(n, step, DEV), lr=torch.tensor(0.02, device=DEV), **kw)
        check_all(ocl, cpu, dtype)
    # a CPU lr tensor (torch.optim passes it as is when lr lives on the CPU)
    torch._fused_adamw_(*cpu, steps(n, 4, "cpu"), lr=torch.tensor(0.03), **kw)
    torch._fused_adamw_(*ocl, steps(n, 4, DEV), lr=torch.tensor(0.03), **kw)
    check_all(ocl, cpu, dtype)


def sgd_cpu(lists, dtype, **kw):
    """The CPU's fused SGD; for float16/bfloat16 run on float32 copies and stored back rounded (the same math:
    torch 2.13's CPU kernel skips the param update in its vectorized 16-bit loop)."""
    if dtype not in (torch.float16, torch.bfloat16):
        torch._fused_sgd_(*lists, **kw)
        return
    wide = [[t.float() for t in lst] for lst in lists]
    torch._fused_sgd_(*wide, **kw)
    for lst, w in zip(lists, wide):
        for t, tw in zip(lst, w):
            t.copy_(tw)


@pytest.mark.parametrize("step", [1, 2, 10, 300, 100000])
def test_adam_bias_correction_precision(step):
    """The update itself (not just the param) agrees with the CPU's double-precision bias corrections, also where
    1 - beta2^step is tiny (beta2 = 0.999 at step 1) or beta^step underflows."""
    g = torch.Generator().manual_seed(step)
    p = torch.randn(1000, generator=g) * 1e-3  # small: its rounding stays far below the update's
    cpu = [[p.clone()], [torch.randn(1000, generator=g)], [torch.randn(1000, generator=g)],
           [torch.rand(1000, generator=g) + 0.1], []]
    ocl = [clone_dev(lst) for lst in cpu]
    kw = dict(lr=0.1, beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    torch._fused_adam_(*cpu, steps(1, step, "cpu"), **kw)
    torch._fused_adam_(*ocl, steps(1, step, DEV), **kw)
    assert_close(ocl[0][0].cpu() - p, cpu[0][0] - p, rtol=3e-6, atol=1e-8)


SGD_CASES = [dict(), dict(momentum=0.9), dict(momentum=0.9, nesterov=True), dict(momentum=0.9, dampening=0.3),
             dict(momentum=0.5, weight_decay=0.1, maximize=True, nesterov=True)]


@pytest.mark.parametrize("case,dtype", cases_by_dtype(SGD_CASES),
                         ids=[f"{case_id(c)}-{ids([d])[0]}" for c, d in cases_by_dtype(SGD_CASES)])
def test_sgd_op_matches_cpu(case, dtype):
    momentum = case.get("momentum", 0.0)
    p, g = shapes_list(dtype, 1), shapes_list(dtype, 2)
    buf = shapes_list(dtype, 3) if momentum else []
    cpu = [p, g, buf]
    ocl = [clone_dev(lst) for lst in cpu]
    kw = dict(weight_decay=case.get("weight_decay", 0.0), momentum=momentum, dampening=case.get("dampening", 0.0),
              nesterov=case.get("nesterov", False), maximize=case.get("maximize", False))
    for i, lr in enumerate((0.1, 0.05, 0.02)):
        sgd_cpu(cpu, dtype, lr=lr, is_first_step=i == 0, **kw)
        torch._fused_sgd_(*ocl, lr=lr, is_first_step=i == 0, **kw)
        check_all(ocl, cpu, dtype)
    sgd_cpu(cpu, dtype, lr=torch.tensor(0.03), is_first_step=False, **kw)
    torch._fused_sgd_(*ocl, lr=torch.tensor(0.03, device=DEV), is_first_step=False, **kw)
    check_all(ocl, cpu, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
@pytest.mark.parametrize("case", [dict(), dict(lr_decay=0.1, weight_decay=0.05), dict(maximize=True)],
                         ids=["plain", "decay", "maximize"])
def test_adagrad_op_matches_cpu(case, dtype):
    cpu = [shapes_list(dtype, 1), shapes_list(dtype, 2), shapes_list(dtype, 3, positive=True)]
    ocl = [clone_dev(lst) for lst in cpu]
    n = len(cpu[0])
    kw = dict(lr_decay=case.get("lr_decay", 0.0), weight_decay=case.get("weight_decay", 0.0), eps=1e-10,
              maximize=case.get("maximize", False))
    for step in (1, 2, 5):
        torch._fused_adagrad_(*cpu, steps(n, step, "cpu"), lr=0.1, **kw)
        torch._fused_adagrad_(*ocl, steps(n, step, DEV), lr=0.1, **kw)
        check_all(ocl, cpu, dtype)
    torch._fused_adagrad_(*cpu, steps(n, 6, "cpu"), lr=torch.tensor(0.2), **kw)
    torch._fused_adagrad_(*ocl, steps(n, 6, DEV), lr=torch.tensor(0.2, device=DEV), **kw)
    check_all(ocl, cpu, dtype)


def run_op(name, lists, device, **extra):
    """One step of `name` over `lists` (params, grads, states...) with the options every kernel takes."""
    n = len(lists[0])
    if name in ("_fused_adam_", "_fused_adamw_"):
        getattr(torch, name)(*lists, steps(n, 3, device), lr=0.01, beta1=0.9, beta2=0.99, weight_decay=0.01,
                             eps=1e-8, amsgrad=True, maximize=False, **extra)
    elif name == "_fused_sgd_":
        sgd = sgd_cpu if device == "cpu" else lambda lists, dtype, **kw: torch._fused_sgd_(*lists, **kw)
        sgd(lists, lists[0][0].dtype, weight_decay=0.01, momentum=0.9, lr=0.1, dampening=0.0, nesterov=True,
            maximize=False, is_first_step=False, **extra)
    else:
        torch._fused_adagrad_(*lists, steps(n, 3, device), lr=0.1, lr_decay=0.01, weight_decay=0.01, eps=1e-10,
                              maximize=False, **extra)


def op_lists(name, dtype):
    p, g = shapes_list(dtype, 1), shapes_list(dtype, 2)
    if name in ("_fused_adam_", "_fused_adamw_"):
        return [p, g, shapes_list(dtype, 3), shapes_list(dtype, 4, positive=True),
                shapes_list(dtype, 5, positive=True)]
    if name == "_fused_sgd_":
        return [p, g, shapes_list(dtype, 3)]
    return [p, g, shapes_list(dtype, 3, positive=True)]


OPS = ["_fused_adam_", "_fused_adamw_", "_fused_sgd_", "_fused_adagrad_"]


@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
@pytest.mark.parametrize("name", OPS)
def test_grad_scale_unscales_and_writes_back(name, dtype):
    cpu = op_lists(name, dtype)
    ocl = [clone_dev(lst) for lst in cpu]
    run_op(name, cpu, "cpu", grad_scale=torch.tensor(64.0), found_inf=torch.tensor(0.0))
    run_op(name, ocl, DEV, grad_scale=torch.tensor(64.0, device=DEV), found_inf=torch.tensor(0.0, device=DEV))
    check_all(ocl, cpu, dtype)  # grads (list 1) come back divided by the scale


@pytest.mark.parametrize("name", OPS)
def test_found_inf_leaves_everything_unchanged(name):
    dtype = torch.float16
    before = op_lists(name, dtype)
    ocl = [clone_dev(lst) for lst in before]
    run_op(name, ocl, DEV, grad_scale=torch.tensor(64.0, device=DEV), found_inf=torch.tensor(1.0, device=DEV))
    for ol, bl in zip(ocl, before):
        for o, b in zip(ol, bl):
            assert torch.equal(o.cpu(), b)


def test_errors():
    p = [torch.zeros(3, device=DEV)]
    g = [torch.zeros(3, device=DEV)]
    kw = dict(lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    with pytest.raises(RuntimeError, match="expected grads to hold 1 tensors"):
        torch._fused_adam_(p, [], p, p, [], steps(1, 1, DEV), **kw)
    with pytest.raises(RuntimeError, match="has dtype"):
        torch._fused_adam_(p, [torch.zeros(3, device=DEV, dtype=torch.float16)], [torch.zeros(3, device=DEV)],
                           [torch.zeros(3, device=DEV)], [], steps(1, 1, DEV), **kw)
    with pytest.raises(RuntimeError, match="has shape"):
        torch._fused_adam_(p, [torch.zeros(4, device=DEV)], [torch.zeros(3, device=DEV)],
                           [torch.zeros(3, device=DEV)], [], steps(1, 1, DEV), **kw)
    with pytest.raises(RuntimeError, match="expected max_exp_avg_sq to hold 1 tensors"):
        torch._fused_adam_(p, g, [torch.zeros(3, device=DEV)], [torch.zeros(3, device=DEV)], [],
                           steps(1, 1, DEV), **dict(kw, amsgrad=True))
    with pytest.raises(RuntimeError, match="is on cpu"):
        torch._fused_sgd_(p, [torch.zeros(3)], [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0,
                          nesterov=False, maximize=False, is_first_step=False)
    with pytest.raises(RuntimeError, match="expected floating point params"):
        torch._fused_sgd_([torch.zeros(3, device=DEV, dtype=torch.int32)], [torch.zeros(3, device=DEV,
                          dtype=torch.int32)], [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0,
                          nesterov=False, maximize=False, is_first_step=False)


def test_sliced_and_0dim_params():
    """Params that are not dense (slices; the CPU kernels assume dense ones, torch's CUDA ones refuse them),
    grads with other strides and 0-dim params update elementwise (the strided kernels)."""
    torch.manual_seed(0)
    base = torch.randn(8, 10)
    p_cpu, g_cpu = base[:, ::2].clone(), torch.randn(5, 8).t()
    m, v = torch.zeros(8, 5), torch.zeros(8, 5)
    big = base.to(DEV)
    p_ocl = big[:, ::2]
    s = [torch.randn(()) for _ in range(4)]  # a 0-dim param, its grad and state
    ocl = [[p_ocl, s[0].to(DEV)], [g_cpu.to(DEV), s[1].to(DEV)], [m.to(DEV), s[2].to(DEV)],
           [v.to(DEV), s[3].abs().to(DEV)], []]
    cpu = [[p_cpu, s[0].clone()], [g_cpu.contiguous(), s[1].clone()], [m.clone(), s[2].clone()],
           [v.clone(), s[3].abs()], []]
    kw = dict(lr=0.01, beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    torch._fused_adam_(*cpu, steps(2, 1, "cpu"), **kw)
    torch._fused_adam_(*ocl, steps(2, 1, DEV), **kw)
    check_all(ocl, cpu, torch.float32)
    assert_close(big[:, 1::2].cpu(), base[:, 1::2])  # the columns in between are untouched


# ---- through torch.optim
OPTIMIZERS = [
    (torch.optim.Adam, dict(lr=0.01, amsgrad=True, weight_decay=0.01)),
    (torch.optim.AdamW, dict(lr=0.01, weight_decay=0.1)),
    (torch.optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True)),
    (torch.optim.SGD, dict(lr=0.05)),  # no momentum buffers
    (torch.optim.Adagrad, dict(lr=0.05, lr_decay=0.01)),
]


def make_model(device, dtype=torch.float32):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)).to(device, dtype)


def train(device, cls, kw, fused, steps_=4, dtype=torch.float32, scaler=None):
    model = make_model(device, dtype)
    opt = cls(model.parameters(), fused=fused, foreach=None if fused else True, **kw) if device == DEV or fused \
        else cls(model.parameters(), **kw)
    g = torch.Generator().manual_seed(1)
    for _ in range(steps_):
        x = torch.randn(5, 6, generator=g).to(device, dtype)
        y = torch.randn(5, 3, generator=g).to(device, dtype)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x).float(), y.float())
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
    return [p.detach().cpu() for p in model.parameters()]


@pytest.mark.parametrize("cls,kw", OPTIMIZERS, ids=[f"{c.__name__}{i}" for i, (c, _) in enumerate(OPTIMIZERS)])
def test_optimizer_fused_matches_cpu_fused_and_foreach(cls, kw):
    assert DEV in torch.utils._foreach_utils._get_fused_kernels_supported_devices()
    fused = train(DEV, cls, kw, fused=True)
    for c, o in zip(train("cpu", cls, kw, fused=True), fused):
        assert_close(o, c, rtol=1e-4, atol=1e-5)
    for f, o in zip(train(DEV, cls, kw, fused=False), fused):
        assert_close(o, f, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("lr_device", ["cpu", DEV])
def test_optimizer_fused_tensor_lr(lr_device):
    """A tensor lr: torch.optim passes a CPU one as is (read by value), a device one to the kernel."""
    ocl = train(DEV, torch.optim.AdamW, dict(lr=torch.tensor(0.01, device=lr_device)), fused=True)
    for c, o in zip(train("cpu", torch.optim.AdamW, dict(lr=torch.tensor(0.01)), fused=True), ocl):
        assert_close(o, c, rtol=1e-4, atol=1e-5)


def test_optimizer_fused_half_params():
    fused = train(DEV, torch.optim.AdamW, dict(lr=0.01), fused=True, dtype=torch.bfloat16)
    for c, o in zip(train("cpu", torch.optim.AdamW, dict(lr=0.01), fused=True, dtype=torch.bfloat16), fused):
        assert_close(o, c, rtol=3e-2, atol=3e-2)


def test_grad_scaler_with_fused_adamw():
    """GradScaler passes grad_scale / found_inf to the fused step: the same result as the CPU's."""
    ocl = train(DEV, torch.optim.AdamW, dict(lr=0.01), fused=True, scaler=torch.amp.GradScaler(DEV, init_scale=256.0))
    cpu = train("cpu", torch.optim.AdamW, dict(lr=0.01), fused=True,
                scaler=torch.amp.GradScaler("cpu", init_scale=256.0))
    for c, o in zip(cpu, ocl):
        assert_close(o, c, rtol=1e-4, atol=1e-5)


def test_grad_scaler_skips_step_on_inf():
    model = make_model(DEV)
    before = [p.detach().cpu().clone() for p in model.parameters()]
    opt = torch.optim.AdamW(model.parameters(), lr=0.1, fused=True)
    scaler = torch.amp.GradScaler(DEV, init_scale=2.0 ** 16)
    loss = model(torch.full((2, 6), float("inf"), device=DEV)).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2.0 ** 15
    for b, p in zip(before, model.parameters()):
        assert torch.equal(p.detach().cpu(), b)
