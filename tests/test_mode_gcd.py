"""mode (Mode.cpp) and gcd / lcm (pointwise-table rows) against the CPU: the OpInfo samples in
every dtype the CPU has, plus ties, NaN-free edge rows and integer corner cases.

mode's values always match the CPU's; its index is the largest index of the mode value (the last
of its run after a stable sort). The CPU's insertion sort gives the same on rows of up to 16
elements; on longer rows its introsort leaves equal values in an arbitrary order, so there the
index is only checked to point at the mode value."""
import pytest
import torch

from opinfo_compare import opinfos_named, run_opinfo

DEV = "ocl:0"
ALL = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16, torch.int8,
       torch.uint8, torch.bool]


def short_rows(dtype, sample):
    dim = sample.args[0] if sample.args else -1
    return sample.input.dim() == 0 or sample.input.size(dim) <= 16


@pytest.mark.parametrize("op", opinfos_named(["mode", "gcd", "lcm"]), ids=lambda o: o.name)
def test_opinfo(op):
    passed, failures = run_opinfo(op, ALL, max_samples=20,
                                  sample_filter=short_rows if op.name == "mode" else None)
    assert not failures, "\n".join(failures[:5])
    assert passed > 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.float16])
def test_mode_long_rows(dtype):
    torch.manual_seed(0)
    x = torch.randint(0, 7, (3, 300, 5)).to(dtype)
    for dim in (1, -1, 0):
        r, o = torch.mode(x, dim), torch.mode(x.to(DEV), dim)
        torch.testing.assert_close(o.values.cpu(), r.values)
        picked = x.gather(dim % 3, o.indices.cpu().unsqueeze(dim % 3)).squeeze(dim % 3)
        torch.testing.assert_close(picked, r.values)
    # non-contiguous input, keepdim
    r, o = torch.mode(x.transpose(0, 2)[::2], 1, True), torch.mode(x.to(DEV).transpose(0, 2)[::2], 1, True)
    torch.testing.assert_close(o.values.cpu(), r.values)


def test_mode_ties_and_errors():
    for row in ([2.0, 1, 1, 2, 3, 2, 1], [3.0, 1, 1, 3], [0.0, -0.0, 5], [4.0]):
        x = torch.tensor(row)
        r, o = torch.mode(x), torch.mode(x.to(DEV))
        assert o.values.item() == r.values.item() and o.indices.item() == r.indices.item(), row
    assert torch.mode(torch.tensor(5.0, device=DEV)).values.item() == 5.0
    assert torch.mode(torch.randn(3, 0, device=DEV), 0).values.shape == (0,)
    with pytest.raises(IndexError, match="non-zero size"):
        torch.mode(torch.randn(3, 0, device=DEV), 1)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8])
def test_gcd_lcm_corners(dtype):
    info = torch.iinfo(dtype)
    corners = [0, 1, 2, 3, 6, 12, 35, 97, info.max, info.min, -1, -6, -12, 100]
    if not torch.__version__.startswith("2.13"):
        # torch 2.11's vectorized CPU lcm dies of SIGFPE (an INT_MIN / -1) on the int32/int64 minimum, so
        # the reference cannot be computed there; torch 2.13 (CI) checks it.
        corners.remove(info.min)
    vals = torch.tensor(corners, dtype=torch.int64)
    vals = vals.clamp(info.min, info.max).to(dtype)
    a, b = vals.repeat_interleave(len(vals)), vals.repeat(len(vals))
    for fn in (torch.gcd, torch.lcm):
        torch.testing.assert_close(fn(a.to(DEV), b.to(DEV)).cpu(), fn(a, b))
    # broadcasting, non-contiguous operands, in-place and out=
    m = torch.randint(-50, 50, (6, 8)).to(dtype)
    torch.testing.assert_close(torch.gcd(m.to(DEV).t()[:6], m.to(DEV)[:, :6]).cpu(), torch.gcd(m.t()[:6], m[:, :6]))
    d = m.to(DEV)
    d[:, ::2].lcm_(torch.tensor(4, dtype=dtype, device=DEV))
    ref = m.clone()
    ref[:, ::2].lcm_(torch.tensor(4, dtype=dtype))
    torch.testing.assert_close(d.cpu(), ref)
    with pytest.raises(Exception):
        torch.gcd(torch.ones(2, device=DEV), torch.ones(2, device=DEV))
