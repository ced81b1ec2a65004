"""Pinned host memory (from the OpenCL driver), non_blocking copies, DataLoader(pin_memory=True)."""
import pytest
import torch
from torch.testing import assert_close
from torch.utils.data import DataLoader, TensorDataset


def test_pin_memory_basic():
    x = torch.randn(1000)
    p = x.pin_memory()
    assert p.is_pinned()
    assert not x.is_pinned()
    assert p.data_ptr() != x.data_ptr()
    assert_close(p, x, rtol=0, atol=0)
    assert p.pin_memory().is_pinned()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool, torch.uint8,
                                   torch.float16, torch.complex64])
def test_pin_memory_dtypes(dtype):
    x = (torch.randn(37, 5) * 10).to(dtype)
    p = x.pin_memory()
    assert p.is_pinned() and p.dtype == dtype
    assert_close(p, x, rtol=0, atol=0)


def test_pin_memory_views_and_offsets():
    x = torch.randn(64, 32)
    p = x.pin_memory()
    assert p[10:].is_pinned()
    assert p.t().is_pinned()
    nc = x.t()[::2].pin_memory()
    assert nc.is_pinned()
    assert_close(nc, x.t()[::2])


def test_pinned_factories():
    assert torch.empty(10, pin_memory=True).is_pinned()
    z = torch.zeros(6, 7, pin_memory=True)
    assert z.is_pinned()
    assert_close(z, torch.zeros(6, 7))
    r = torch.randn(5, pin_memory=True)
    assert r.is_pinned()
    e = torch.empty(0, pin_memory=True)
    assert e.numel() == 0


def test_pinned_on_ocl_device_is_rejected():
    with pytest.raises(RuntimeError):
        torch.empty(3, device="ocl", pin_memory=True)


def test_non_blocking_host_to_device_from_pinned():
    x = torch.randn(1 << 18)
    p = x.pin_memory()
    d = p.to("ocl", non_blocking=True)
    y = d * 2
    torch.ocl.synchronize()
    assert_close(d.cpu(), x, rtol=0, atol=0)
    assert_close(y.cpu(), x * 2)


def test_non_blocking_device_to_pinned_host():
    x = torch.randn(1 << 18)
    d = x.to("ocl") + 1
    out = torch.empty(1 << 18, pin_memory=True)
    out.copy_(d, non_blocking=True)
    torch.ocl.synchronize()
    assert_close(out, x + 1)
    y = d.to("cpu", non_blocking=True)
    torch.ocl.synchronize()
    assert y.device.type == "cpu"
    assert_close(y, x + 1)


def test_non_blocking_with_conversion_and_non_contiguous():
    x = torch.randn(256, 128)
    p = x.pin_memory()
    d = p.to("ocl", dtype=torch.float64, non_blocking=True)
    nc = torch.zeros(128, 256, device="ocl").t()
    nc.copy_(p, non_blocking=True)
    back = torch.empty(128, 256, pin_memory=True).t()
    back.copy_(nc, non_blocking=True)
    torch.ocl.synchronize()
    assert_close(d.cpu(), x.double())
    assert_close(nc.cpu(), x)
    assert_close(back, x)


def test_pinned_buffer_reuse_does_not_corrupt_in_flight_copies():
    # Free a pinned source right after a non_blocking upload and immediately reuse pinned
    # memory of the same size: the upload must still see the original values.
    n = 1 << 18
    expected, uploaded = [], []
    for i in range(8):
        x = torch.full((n,), float(i))
        p = x.pin_memory()
        uploaded.append(p.to("ocl", non_blocking=True))
        expected.append(x)
        del p
        q = torch.empty(n, pin_memory=True)
        q.fill_(-1.0)
        del q
    torch.ocl.synchronize()
    for d, x in zip(uploaded, expected):
        assert_close(d.cpu(), x, rtol=0, atol=0)


def test_pinned_memory_freed_and_reused():
    ptrs = set()
    for _ in range(5):
        p = torch.empty(5000, pin_memory=True)
        ptrs.add(p.data_ptr())
        del p
    # the pinned allocator caches blocks: repeated same-size allocations reuse them
    assert len(ptrs) <= 2


def test_large_pinned():
    x = torch.randn(8 << 20)
    p = x.pin_memory()
    d = p.to("ocl", non_blocking=True)
    torch.ocl.synchronize()
    assert_close(d.cpu(), x, rtol=0, atol=0)


def test_dataloader_pin_memory():
    data = torch.randn(50, 4)
    labels = torch.arange(50)
    loader = DataLoader(TensorDataset(data, labels), batch_size=16, pin_memory=True)
    seen = 0
    for bx, by in loader:
        assert bx.is_pinned() and by.is_pinned()
        dx = bx.to("ocl", non_blocking=True)
        dy = by.to("ocl", non_blocking=True)
        torch.ocl.synchronize()
        assert_close(dx.cpu(), data[seen:seen + len(bx)])
        assert_close(dy.cpu(), labels[seen:seen + len(by)])
        seen += len(bx)
    assert seen == 50


def test_dataloader_pin_memory_with_workers():
    data = torch.randn(40, 3)
    labels = torch.arange(40)
    loader = DataLoader(TensorDataset(data, labels), batch_size=10, pin_memory=True, num_workers=2,
                        multiprocessing_context="spawn")
    got_x, got_y = [], []
    for bx, by in loader:
        assert bx.is_pinned() and by.is_pinned()
        got_x.append(bx.to("ocl", non_blocking=True))
        got_y.append(by.to("ocl", non_blocking=True))
    torch.ocl.synchronize()
    assert_close(torch.cat([g.cpu() for g in got_x]), data)
    assert_close(torch.cat([g.cpu() for g in got_y]), labels)
