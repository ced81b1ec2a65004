"""Optimizers beyond test_foreach_optim's SGD/Adam/AdamW grid (RMSprop, Adagrad, Adam/AdamW
amsgrad, SGD nesterov), gradient clipping and GradScaler's ops, on ocl vs the CPU, with the
default foreach path and with foreach=False; strict mode (conftest) proves nothing falls back."""
import pytest
import torch
from torch.testing import assert_close

OPTIMIZERS = [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1, lr_decay=0.01, initial_accumulator_value=0.1)),
]


def _params(device):
    g = torch.Generator().manual_seed(0)
    shapes = [(4, 3), (5,), (3, 2)]
    ps = [torch.randn(s, generator=g) for s in shapes]
    ps[2] = ps[2].t().contiguous().t()  # a non-contiguous parameter
    return [p.to(device).requires_grad_() for p in ps]


def _train(cls, kw, foreach, device, steps=3):
    ps = _params(device)
    opt = getattr(torch.optim, cls)(ps, foreach=foreach, **kw)
    for _ in range(steps):
        opt.zero_grad()
        loss = sum((p * p).sum() + p.sin().sum() for p in ps)
        loss.backward()
        opt.step()
    return [p.detach().cpu() for p in ps]


@pytest.mark.parametrize("foreach", [None, False], ids=["default", "for-loop"])
@pytest.mark.parametrize("cls,kw", OPTIMIZERS, ids=[f"{c}-{i}" for i, (c, _) in enumerate(OPTIMIZERS)])
def test_optimizer_matches_cpu(cls, kw, foreach):
    for o, c in zip(_train(cls, kw, foreach, "ocl"), _train(cls, kw, foreach, "cpu")):
        assert_close(o, c, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("foreach", [True, False], ids=["foreach", "for-loop"])
def test_clip_grad(foreach):
    results = []
    for device in ("cpu", "ocl"):
        ps = _params(device)
        sum((p * p * p).sum() for p in ps).backward()
        total = torch.nn.utils.clip_grad_norm_(ps, max_norm=0.5, foreach=foreach)
        norm_inf = torch.nn.utils.clip_grad_norm_(ps, max_norm=1.0, norm_type="inf", foreach=foreach)
        torch.nn.utils.clip_grad_value_(ps, clip_value=0.05, foreach=foreach)
        results.append([total.cpu(), norm_inf.cpu()] + [p.grad.cpu() for p in ps])
    for o, c in zip(results[1], results[0]):
        assert_close(o, c)


def test_amp_unscale_and_update_scale_match_cpu():
    def run(device):
        grads = [torch.tensor([1.0, 2.0, 3.0]), torch.tensor([4.0, 8.0]).half(), torch.ones(3, 4).t(),
                 torch.tensor([1.0, float("nan")]), torch.tensor([float("-inf")]), torch.zeros(0)]
        grads = [g.to(device) for g in grads]
        found = torch.zeros(1, device=device)
        inv = torch.full((1,), 0.25, device=device)
        torch._amp_foreach_non_finite_check_and_unscale_(grads[:3], found, inv)
        log = [found.clone()]
        torch._amp_foreach_non_finite_check_and_unscale_(grads[3:5], found, inv)
        log.append(found.clone())
        scale = torch.full((1,), 4.0, device=device)
        tracker = torch.zeros(1, dtype=torch.int32, device=device)
        for f in [0, 0, 1, 0, 0, 0]:
            torch._amp_update_scale_(scale, tracker, torch.full((1,), float(f), device=device), 2.0, 0.5, 2)
            log += [scale.clone(), tracker.clone()]
        big = torch.full((1,), 3e38, device=device)  # growth would overflow: the scale stays
        torch._amp_update_scale_(big, torch.ones(1, dtype=torch.int32, device=device), torch.zeros(1, device=device),
                                 2.0, 0.5, 2)
        return [t.cpu() for t in grads + log + [big]]

    for o, c in zip(run("ocl"), run("cpu")):
        assert_close(o, c, equal_nan=True)


def test_grad_scaler_training_step():
    """A GradScaler loop on ocl skips the step with an inf gradient and halves the scale, as on the CPU."""
    results = []
    for device in ("cpu", "ocl"):
        ps = _params(device)
        opt = torch.optim.SGD(ps, lr=0.1)
        scaler = torch.amp.GradScaler(device, init_scale=256.0, growth_interval=1)
        for step in range(3):
            opt.zero_grad()
            loss = sum((p * p).sum() for p in ps) * (float("inf") if step == 1 else 1.0)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        results.append([p.detach().cpu() for p in ps] + [torch.tensor(scaler.get_scale())])
    for o, c in zip(results[1], results[0]):
        assert_close(o, c)
