"""Deferred index bound checks (core/DeferredChecks.h): a bad index is flagged on the device and
raised as an IndexError naming the op and the index where the host next waits for the device
(item(), .cpu(), synchronize, Event.synchronize), as CUDA's device-side assert; never silently.
PYTORCH_OCL_INDEX_CHECK=sync raises at the op, =0 never checks."""
import pytest
import torch

import pytorch_ocl

D = "ocl"


def pending():
    return pytorch_ocl._C.pending_index_checks()


def test_error_at_next_sync_names_op_and_index():
    x = torch.arange(12.0, device=D).reshape(4, 3)
    y = x.index_select(0, torch.tensor([1, 4], device=D))  # no blocking read here
    assert pending() >= 1
    with pytest.raises(IndexError, match=r"index_select: index 4 is out of bounds for dimension 0 with size 4"):
        y.cpu()
    assert pending() == 0
    # The flag was cleared: later ops and syncs are clean.
    z = x.index_select(0, torch.tensor([3, 0], device=D))
    assert torch.equal(z.cpu(), torch.arange(12.0).reshape(4, 3)[[3, 0]])
    torch.ocl.synchronize()


@pytest.mark.parametrize("sync", [
    lambda t: t.sum().item(),
    lambda t: torch.ocl.synchronize(),
    lambda t: torch.ocl.current_stream().synchronize(),
    lambda t: print(t),
    lambda t: t.tolist(),
])
def test_every_wait_reports(sync, capsys):
    x = torch.randn(5, 2, device=D)
    y = x[torch.tensor([7], device=D)]
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        sync(y)
    assert pending() == 0


def test_event_synchronize_after_non_blocking_copy():
    x = torch.randn(5, device=D)
    y = torch.gather(x, 0, torch.tensor([0, 9], device=D))
    host = torch.empty(2).pin_memory()
    host.copy_(y, non_blocking=True)
    ev = torch.Event(device=D)
    ev.record()
    with pytest.raises(IndexError, match="gather: index 9 is out of bounds"):
        ev.synchronize()


def test_multiple_pending_checks_first_error_wins():
    x = torch.randn(4, 3, device=D)
    good = x.index_select(0, torch.tensor([0, 3], device=D))
    a = x.index_select(1, torch.tensor([5], device=D))
    x.detach()[torch.tensor([-9], device=D)] = 1.0
    b = torch.embedding(x, torch.tensor([2, 1], device=D))
    assert pending() >= 4
    with pytest.raises(IndexError, match="index_select: index 5 is out of bounds for dimension 1 with size 3"):
        torch.ocl.synchronize()
    assert pending() == 0
    torch.ocl.synchronize()  # reported once
    assert good.shape == (2, 3) and a.shape == (4, 1) and b.shape == (2, 3)


def test_bad_write_is_skipped_and_reported():
    x = torch.zeros(4, device=D)
    x.index_copy_(0, torch.tensor([1, 6], device=D), torch.tensor([5.0, 7.0], device=D))
    with pytest.raises(IndexError, match="index_copy_?: index 6 is out of bounds"):
        x.cpu()
    assert torch.equal(x.cpu(), torch.tensor([0.0, 5.0, 0.0, 0.0]))  # the bad row wrote nothing


def test_index_modified_before_the_sync():
    idx = torch.tensor([0, 8], device=D)
    y = torch.randn(4, device=D)[idx]
    idx.zero_()  # the message cannot name the index any more, the error is still raised
    with pytest.raises(IndexError, match="out of range|out of bounds"):
        y.cpu()


def test_more_checks_than_slots():
    x = torch.randn(8, device=D)
    i = torch.tensor([1], device=D)
    with pytest.raises(IndexError, match="index 99 is out of bounds"):
        x[torch.tensor([99], device=D)]
        for _ in range(1100):  # runs out of flag slots: the op that needs one waits and checks
            x.index_select(0, i)
        torch.ocl.synchronize()
    for _ in range(1100):
        x.index_select(0, i)
    torch.ocl.synchronize()
    assert pending() == 0


def test_checks_inside_capture_are_not_registered():
    emb = torch.nn.Embedding(10, 4).to(D)
    tokens = torch.tensor([3, 7], device=D)
    emb(tokens).sum().item()  # warm-up outside the capture
    g = torch.ocl.OCLGraph()
    before = pending()
    with torch.no_grad(), torch.ocl.graph(g):
        out = emb(tokens) * 2
    assert pending() == before
    tokens.copy_(torch.tensor([1, 12]))  # out of range at replay: the row is skipped, as before
    g.replay()
    torch.ocl.synchronize()
    ref = emb.weight.detach().cpu()
    assert torch.equal(out.cpu()[0], ref[1] * 2)
    assert torch.equal(out.cpu()[1], torch.zeros(4))


@pytest.mark.parametrize("mode,expect", [("sync", "raised at the op"), ("0", "no error"), ("deferred", "raised at sync")])
def test_modes(run_py, mode, expect):
    code = """
        import torch, pytorch_ocl
        x = torch.arange(4.0, device="ocl")
        try:
            y = x.index_select(0, torch.tensor([2, 5], device="ocl"))
        except IndexError as e:
            assert "index 5 is out of bounds" in str(e), e
            print("raised at the op")
            raise SystemExit
        try:
            v = y.cpu()
        except IndexError as e:
            assert "index_select: index 5 is out of bounds" in str(e), e
            print("raised at sync")
            raise SystemExit
        assert v.tolist() == [2.0, 0.0], v
        print("no error")
    """
    r = run_py(code, env={"PYTORCH_OCL_INDEX_CHECK": mode})
    assert r.stdout.strip() == expect, r.stdout + r.stderr
