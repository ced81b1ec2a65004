"""Index checks inside compiled kernels: an indirect index (embedding ids, gather indices) outside its dimension
sets the kernel's device-side check slot, reported as an IndexError where the host next waits for the queue, as
eager ocl's index ops (DeferredChecks.h) and CUDA's device-side asserts do; the bad access itself reads index 0,
never outside the buffer. Valid indices, negative ones included, give the CPU's results."""
import pytest
import torch
import torch.nn.functional as F

import pytorch_ocl  # noqa: F401

pytestmark = pytest.mark.usefixtures("fresh_inductor_cache")  # conftest.py


def gather_rows(w, i):  # a pointwise kernel
    return (w[i] * 2).sum(-1)


def embed_norm(w, i):  # an embedding fused into a reduction (layer norm over the hidden size)
    return F.layer_norm(F.embedding(i, w) * 3, (w.shape[1],))


@pytest.mark.parametrize("fn", [gather_rows, embed_norm])
def test_valid_and_negative_indices_match_the_cpu(fn):
    torch._dynamo.reset()
    w = torch.randn(10, 16)
    i = torch.tensor([[1, 9, 0], [4, 4, 2]]) if fn is embed_norm else torch.tensor([1, 3, -1, -10, 9])
    got = torch.compile(fn)(w.to("ocl"), i.to("ocl"))
    torch.testing.assert_close(got.cpu(), fn(w, i), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("fn", [gather_rows, embed_norm])
@pytest.mark.parametrize("bad", [10, 1000, -11])
def test_out_of_range_index_raises_at_the_next_wait(fn, bad):
    torch._dynamo.reset()
    w = torch.randn(10, 16)
    i = torch.tensor([[1, bad, 0], [4, 4, 2]]) if fn is embed_norm else torch.tensor([1, 3, bad, 2])
    f = torch.compile(fn, dynamic=fn is embed_norm)  # dynamic: sizes as kernel arguments before the check slot
    out = f(w.to("ocl"), i.to("ocl"))
    with pytest.raises(IndexError, match=r"index out of bounds: 0 <= index < (10|s\d+) \(a device-side check in "):
        out.cpu()
    # reported once; the device and the compiled graph go on working
    good = i.clamp(0 if fn is embed_norm else -10, 9)  # embedding takes no negative indices (the CPU raises too)
    torch.testing.assert_close(f(w.to("ocl"), good.to("ocl")).cpu(), fn(w, good), atol=1e-5, rtol=1e-5)


def test_sync_mode_raises_at_the_call(run_py):
    """PYTORCH_OCL_INDEX_CHECK=sync checks right after the kernel: the error comes from the compiled call."""
    proc = run_py("""
        import torch, pytorch_ocl
        f = torch.compile(lambda w, i: (w[i] * 2).sum(-1))
        w, i = torch.randn(10, 4, device="ocl"), torch.tensor([1, 12], device="ocl")
        try:
            f(w, i)
            print("no error at the call")
        except IndexError as e:
            print("raised at the call:", e)
    """, env={"PYTORCH_OCL_INDEX_CHECK": "sync"})
    assert "raised at the call: index out of bounds: 0 <= index < 10" in proc.stdout, proc.stdout + proc.stderr


def _positive_twice(x):
    torch._assert_async((x > 0).all(), "x must be positive")
    return x * 2


@pytest.mark.parametrize("compiled", [False, True])
def test_assert_async_is_reported_at_the_next_wait(compiled):
    """torch._assert_async (eager: the value copied into a check slot; compiled: the kernel's check) raises its
    message where the host next waits, as on CUDA; a true assertion costs no wait."""
    torch._dynamo.reset()
    f = torch.compile(_positive_twice) if compiled else _positive_twice
    out = f(torch.tensor([1.0, 2.0], device="ocl"))
    torch.testing.assert_close(out.cpu(), torch.tensor([2.0, 4.0]))
    out = f(torch.tensor([1.0, -2.0], device="ocl"))
    with pytest.raises(RuntimeError, match="x must be positive"):
        out.cpu()
    torch.ocl.synchronize()  # reported once


def test_assert_async_eager_messages_match_the_cpu():
    for args, message in [((torch.tensor(0),), "Expected Tensor with single nonzero value, but got zero"),
                          ((torch.tensor(0.0), ""), "Assertion is failed")]:
        torch._assert_async(*(a.to("ocl") if isinstance(a, torch.Tensor) else a for a in args))
        with pytest.raises(RuntimeError, match=message):
            torch.ocl.synchronize()
    for t, message in [(torch.tensor([1, 1]), "more than one value"), (torch.tensor([]), "no values")]:
        with pytest.raises(RuntimeError, match=message):  # the size: raised at the call, as on the CPU
            torch._assert_async(t.to("ocl"))
    torch._assert_async(torch.tensor(3, device="ocl"))
    torch.ocl.synchronize()
