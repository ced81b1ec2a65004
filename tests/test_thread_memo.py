"""The per-thread kernel memos (dlprim/include/dlprim/thread_memo.h) in front of the global kernel caches.

Each case alternates more distinct kernel keys than its memo has slots (elementwise 16, typed kernels 16,
GEMM's small kernels 8, attention 8), many times, so keys share a slot set and evict each other: every
result is checked against the CPU, so a memo hit that returned another key's kernel (wrong dtype, wrong op)
fails here. The threaded case runs the same mix on several threads at once (each thread has its own memo,
the global caches are shared), in a different order per thread.
"""
import random
import threading

import pytest
import torch
import torch.nn.functional as F

DEV = "ocl"
FLOATS = [torch.float32, torch.float64, torch.float16]
ROUNDS = 4


def _unary_cases():
    # 6 ops x 3 dtypes = 18 elementwise kernel keys (> 16 slots)
    ops = [torch.neg, torch.abs, torch.exp, torch.tanh, torch.sigmoid, lambda x: x * 3 + 1]
    return [(f"ew{i}_{dt}", op, dt) for i, op in enumerate(ops) for dt in FLOATS]


def _elementwise_calls(gen):
    calls = []
    for name, op, dt in _unary_cases():
        x = torch.randn(37, generator=gen).to(dt)
        calls.append((name, lambda op=op, x=x: op(x)))
    return calls


def _typed_calls(gen):
    # layer_norm (fwd), pad (3 modes), pools, upsampling, searchsorted, nll_loss in 2-3 dtypes:
    # 21 typed-kernel keys (> 16 slots)
    calls = []
    for dt in FLOATS:
        x = torch.randn(3, 10, generator=gen).to(dt)
        w, b = torch.randn(10, generator=gen).to(dt), torch.randn(10, generator=gen).to(dt)
        calls.append((f"ln_{dt}", lambda x=x, w=w, b=b: F.layer_norm(x, (10,), w, b)))
    for dt in FLOATS[:2]:
        img = torch.randn(1, 2, 5, 6, generator=gen).to(dt)
        for mode in ("reflect", "replicate", "circular"):
            calls.append((f"pad_{mode}_{dt}", lambda img=img, mode=mode: F.pad(img, (1, 2, 2, 1), mode=mode)))
        calls.append((f"maxpool_{dt}", lambda img=img: F.max_pool2d(img, 2)))
        calls.append((f"avgpool_{dt}", lambda img=img: F.avg_pool2d(img, 2)))
        calls.append((f"up_nearest_{dt}", lambda img=img: F.interpolate(img, scale_factor=2, mode="nearest")))
        calls.append((f"up_bilinear_{dt}", lambda img=img: F.interpolate(img, scale_factor=2, mode="bilinear")))
        s = torch.sort(torch.randn(20, generator=gen).to(dt)).values
        v = torch.randn(7, generator=gen).to(dt)
        calls.append((f"searchsorted_{dt}", lambda s=s, v=v: torch.searchsorted(s, v)))
    logp = torch.randn(6, 5, generator=gen).log_softmax(1)
    target = torch.randint(0, 5, (6,), generator=gen)
    calls.append(("nll", lambda logp=logp, target=target: F.nll_loss(logp, target)))
    return calls


def _gemm_calls(gen):
    # small products (gemm_small) and long-K ones (the dot kernels) in 3 dtypes, two output shapes
    calls = []
    for dt in FLOATS:
        for m, k, n in ((1, 24, 20), (3, 16, 5), (1, 2048, 3), (2, 1500, 2)):
            a, b = torch.randn(m, k, generator=gen).to(dt), torch.randn(k, n, generator=gen).to(dt)
            calls.append((f"mm_{m}x{k}x{n}_{dt}", lambda a=a, b=b: a @ b))
    return calls


def _attention_calls(gen):
    # head dims x dtypes x causal: 12 attention kernel keys (> 8 slots)
    calls = []
    for dt in (torch.float32, torch.float64):
        for d in (8, 16, 24):
            q, k, v = (torch.randn(1, 2, 5, d, generator=gen).to(dt) for _ in range(3))
            for causal in (False, True):
                calls.append((f"sdpa_d{d}_{dt}_{causal}",
                              lambda q=q, k=k, v=v, c=causal: F.scaled_dot_product_attention(q, k, v, is_causal=c)))
    return calls


def _to(arg, device):
    return arg.to(device) if isinstance(arg, torch.Tensor) else arg


def _check(calls, rounds, order_seed=None):
    """Every call's result on the device, many times and interleaved, against the CPU. A call is a lambda
    whose tensors are all default arguments (built on the CPU, moved to the device here)."""
    expected = {name: fn() for name, fn in calls}
    # device copies of every tensor argument, made once (the loop exercises the lookups, not the copies)
    dev_calls = []
    for name, fn in calls:
        args = tuple(_to(d, DEV) for d in (fn.__defaults__ or ()))
        dev_calls.append((name, fn, args))
    rng = random.Random(order_seed)
    for _ in range(rounds):
        order = list(dev_calls)
        if order_seed is not None:
            rng.shuffle(order)
        for name, fn, args in order:
            got = fn(*args).cpu()
            want = expected[name]
            # a wrong kernel for a key is off by the values' size; float32 dots of K = 1500-2048 differ from the
            # CPU's by rounding alone up to ~7e-5 (PoCL on an AVX-512 Xeon: 6.8e-5, both ~5e-5 from float64)
            tol = {torch.float16: 2e-3, torch.float32: 2e-4}.get(want.dtype, 1e-5)
            assert got.dtype == want.dtype, name
            torch.testing.assert_close(got, want, rtol=tol, atol=tol, msg=name)


def _all_calls(seed=0):
    gen = torch.Generator().manual_seed(seed)
    return _elementwise_calls(gen) + _typed_calls(gen) + _gemm_calls(gen) + _attention_calls(gen)


@pytest.mark.parametrize("family", ["elementwise", "typed", "gemm", "attention"])
def test_alternating_keys_get_their_own_kernels(family):
    gen = torch.Generator().manual_seed(1)
    calls = {"elementwise": _elementwise_calls, "typed": _typed_calls, "gemm": _gemm_calls,
             "attention": _attention_calls}[family](gen)
    _check(calls, ROUNDS)
    _check(calls, ROUNDS, order_seed=7)  # another interleaving: other evictions


def test_threads_share_the_caches_not_the_memos():
    calls = _all_calls()
    _check(calls, 1)  # every kernel built once up front: the threads then race on lookups, not builds
    errors = []

    def worker(seed):
        try:
            _check(calls, 3, order_seed=seed)
        except BaseException as e:  # noqa: BLE001  (reported by the main thread)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
