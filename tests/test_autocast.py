"""torch.autocast("ocl") follows CUDA's policy (csrc/aten/Autocast.cpp), checked with torch's own
autocast test lists (torch.testing._internal.autocast_test_lists, the ones test_cuda.py runs),
built on ocl: each op's output dtype under autocast, and its values bit-equal to the op run outside
autocast on inputs cast by hand (what the policy should do), for float16 and bfloat16. Ops in the
lists that ocl does not implement natively are named in NOT_NATIVE (strict mode makes them raise);
the list is checked to be exact. Also: banned ops raise, nesting and disabling work, and a small
net trains under bf16 autocast with GradScaler close to float32 training."""
import collections

import pytest
import torch
import torch.nn as nn
from torch.testing._internal.autocast_test_lists import AutocastTestLists

DEV = torch.device("ocl:0")
LISTS = AutocastTestLists(DEV)

# Ops of the lists ocl does not run natively yet (none at present; op_db breadth work): under strict mode they raise
# NotImplementedError (a CPU fallback refused). When one becomes native its test fails until it
# leaves this table.
NOT_NATIVE = {}
# cuDNN's own ops are CUDA's, not part of the policy a backend implements.
CUDA_ONLY = {"cudnn_convolution", "cudnn_convolution_transpose"}


def cast(val, to_type):
    if isinstance(val, torch.Tensor):
        return val.to(to_type) if val.is_floating_point() else val
    if isinstance(val, collections.abc.Iterable) and not isinstance(val, str):
        return type(val)(cast(v, to_type) for v in val)
    return val


def same(a, b):
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.cpu(), b.cpu())
    if isinstance(a, collections.abc.Iterable):
        return all(same(x, y) for x, y in zip(a, b))
    return a == b


def run_case(op, args, run_as, out_type, module, amp_dtype, kwargs=None):
    kwargs = kwargs or {}
    with torch.autocast("ocl", dtype=amp_dtype):
        assert torch.is_autocast_enabled("ocl")
        fn = getattr(module, op) if module is not None and hasattr(module, op) else None
        out = fn(*args, **kwargs) if fn else getattr(args[0], op)(*args[1:], **kwargs)
        if isinstance(out, torch.Tensor):
            assert out.dtype == out_type, f"{op}: autocast gave {out.dtype}, CUDA's policy gives {out_type}"
    with torch.autocast("ocl", enabled=False):
        control = fn(*cast(args, run_as), **kwargs) if fn else getattr(args[0].to(run_as), op)(*cast(args[1:], run_as), **kwargs)
    assert same(out, control), f"{op}: result differs from the op on hand-cast inputs"


def cases():
    """(id, list name, op, args, run_as (None: the autocast dtype), out_type, module, kwargs)."""
    out = []
    spec = [("torch_fp16", None, torch), ("torch_fp32", torch.float32, torch),
            ("nn_fp16", None, torch._C._nn), ("nn_fp32", torch.float32, torch._C._nn),
            ("linalg_fp16", None, torch._C._linalg), ("methods_fp16", None, None),
            ("methods_fp32", torch.float32, None)]
    for name, run_as, module in spec:
        for entry in getattr(LISTS, name):
            op, args = entry[0], entry[1]
            if len(entry) > 2 and entry[2] is True:  # ROCm-only skip flag
                continue
            if op in CUDA_ONLY or isinstance(args, str):  # torch's einsum entry is malformed: test_einsum
                continue
            kwargs = entry[2] if len(entry) > 2 and isinstance(entry[2], dict) else None
            out.append((f"{name}-{op}-{len(out)}", name, op, args, run_as, run_as, module, kwargs))
    # The promote lists mix float16 and float32 inputs: float16 autocast only (bfloat16 autocast
    # refuses float16 inputs, on CUDA too).
    for op, args in LISTS.torch_need_autocast_promote:
        out.append((f"promote-{op}-{len(out)}", "fp16_only", op, args, torch.float32, torch.float32, torch, None))
    for name, module in (("torch_expect_builtin_promote", torch), ("methods_expect_builtin_promote", None)):
        for op, args, out_type in getattr(LISTS, name):
            out.append((f"{name}-{op}-{len(out)}", "fp16_only", op, args, torch.float32, out_type, module, None))
    return out


CASES = cases()


@pytest.mark.parametrize("amp_dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_policy(case, amp_dtype):
    _, name, op, args, run_as, out_type, module, kwargs = case
    if name == "fp16_only" and amp_dtype != torch.float16:
        pytest.skip("mixes float16 inputs: float16 autocast only")
    run_as = run_as or amp_dtype
    out_type = out_type or amp_dtype
    if op in NOT_NATIVE:
        with pytest.raises(NOT_NATIVE[op]):
            run_case(op, args, run_as, out_type, module, amp_dtype, kwargs)
        return
    run_case(op, args, run_as, out_type, module, amp_dtype, kwargs)


@pytest.mark.parametrize("op,args,module", LISTS.banned, ids=[b[0] for b in LISTS.banned])
def test_banned(op, args, module):
    with torch.autocast("ocl", dtype=torch.float16), pytest.raises(RuntimeError, match="unsafe to autocast"):
        getattr(module, op)(*args)


@pytest.mark.parametrize("amp_dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_einsum(amp_dtype):
    a, b = torch.randn(2, 3, 4, 5, device=DEV), torch.randn(2, 6, 4, 5, device=DEV)
    run_case("einsum", ("bkhd,bqhd->bqkh", a, b), amp_dtype, amp_dtype, torch, amp_dtype)


def test_defaults_nesting_and_cpu_tensors():
    a = torch.randn(8, 8, device=DEV)
    assert torch.get_autocast_dtype("ocl") == torch.float16  # CUDA's default
    with torch.autocast("ocl"):
        assert (a @ a).dtype == torch.float16
        with torch.autocast("ocl", dtype=torch.bfloat16):
            assert (a @ a).dtype == torch.bfloat16
            with torch.autocast("ocl", enabled=False):
                assert (a @ a).dtype == torch.float32
        assert (a.cpu() @ a.cpu()).dtype == torch.float32  # CPU tensors: ocl's autocast leaves them
        assert (a.double() @ a.double()).dtype == torch.float64  # double is never cast


def test_training_under_bf16_autocast_with_grad_scaler():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(),
                        nn.Linear(8 * 8 * 8, 10))
    x, y = torch.randn(16, 3, 8, 8), torch.randint(0, 10, (16,))
    losses = {}
    for amp in (False, True):
        torch.manual_seed(1)
        model = __import__("copy").deepcopy(net).to(DEV)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        scaler = torch.amp.GradScaler("ocl", enabled=amp)
        run = []
        for _ in range(5):
            opt.zero_grad()
            with torch.autocast("ocl", dtype=torch.bfloat16, enabled=amp):
                logits = model(x.to(DEV))
                assert logits.dtype == (torch.bfloat16 if amp else torch.float32)
                loss = nn.functional.cross_entropy(logits, y.to(DEV))
                assert loss.dtype == torch.float32  # losses run in float32 under autocast
            scaler.scale(loss).backward()
            assert all(p.grad.dtype == torch.float32 for p in model.parameters())
            scaler.step(opt)
            scaler.update()
            run.append(loss.item())
        losses[amp] = run
    assert losses[True][-1] < losses[True][0]
    assert max(abs(a - b) for a, b in zip(losses[True], losses[False])) < 0.05, losses
