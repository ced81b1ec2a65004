"""histc on ocl against the CPU: bins, explicit and data-derived ranges, values on bin edges and
outside the range, NaN, non-contiguous and zero-size inputs, every floating dtype, out=, and the
CPU's errors. Counts must be equal, not close."""
import pytest
import torch

import pytorch_ocl  # noqa: F401
from opinfo_compare import opinfos_named, raises_like_cpu, run_opinfo

DEV = "ocl"
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def inputs(dtype):
    g = torch.Generator().manual_seed(0)
    return {
        "randn": torch.randn(1000, generator=g).to(dtype),
        "edges": (torch.arange(-50, 51) / 10).to(dtype),  # many values exactly on bin edges
        "transposed": torch.randn(30, 40, generator=g).to(dtype).t(),
        "sliced": torch.randn(7, 9, 5, generator=g).to(dtype)[1:, ::3, 2:],
        "expanded": torch.randn(1, 6, generator=g).to(dtype).expand(5, 6),
        "nan": torch.tensor([1.0, float("nan"), 2.0, 3.0, -1.0]).to(dtype),
        "scalar": torch.tensor(0.25).to(dtype),
        "zero_size": torch.randn(0, 3).to(dtype),
        "constant": torch.full((9,), 2.5).to(dtype),
    }


def cpu_histc(x, bins=100, lo=0.0, hi=0.0):
    """The CPU's histc, with exact counts in 16-bit dtypes: the CPU adds 1 in the hist's dtype, so
    a bfloat16 bin stops at 256 (per thread). Chunks of 128 elements (single-threaded, exact) are
    counted separately over the whole input's range and summed in float32."""
    if x.dtype not in (torch.float16, torch.bfloat16) or x.numel() <= 128:
        return torch.histc(x, bins, lo, hi)
    if lo == hi:
        lo, hi = x.min().item(), x.max().item()
    parts = [torch.histc(c, bins, lo, hi).float() for c in x.reshape(-1).split(128)]
    return torch.stack(parts).sum(0).to(x.dtype)


def same(x, *args):
    expected = cpu_histc(x, *args)
    actual = torch.histc(x.to(DEV), *args)
    assert actual.device.type == "ocl" and actual.dtype == expected.dtype
    assert torch.equal(actual.cpu(), expected), (args, actual.cpu(), expected)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(inputs(torch.float32)))
def test_histc_matches_cpu(dtype, case):
    x = inputs(dtype)[case]
    for args in ((10,), (7, -1, 1), (1,), (3, -0.5, 0.5), (13, 0.1, 0.3), (4, 2.5, 2.5), (250, -3, 3)):
        if case == "nan" and (len(args) == 1 or args[1] == args[2]):
            continue  # the data's range is NaN: an error, checked below
        if dtype == torch.bfloat16 and args[0] == 250:
            continue  # see test_histc_bfloat16_bin_past_the_end
        same(x, *args)


def test_histc_bfloat16_bin_past_the_end():
    # In bfloat16 arithmetic (x - lo) * bins / (hi - lo) can round past the last bin: 3 in 250
    # bins over [-3, 3] gives 1504 / 6 -> 251. The CPU then writes outside its (per-thread)
    # histogram, into a neighbour's bin 1; ocl counts the value in the last bin.
    actual = torch.histc(torch.tensor([3.0], dtype=torch.bfloat16, device=DEV), 250, -3, 3).cpu()
    assert actual.sum() == 1 and actual[-1] == 1


def test_histc_strided_views_on_device():
    # the device tensor itself non-contiguous (not a copy of a CPU view)
    x = torch.randn(20, 30)
    d = x.to(DEV)
    for cpu, dev in ((x.t(), d.t()), (x[::3, 1::4], d[::3, 1::4]), (x[2:], d[2:])):
        assert torch.equal(torch.histc(dev, 9, -2, 2).cpu(), torch.histc(cpu, 9, -2, 2))


def test_histc_out_and_large():
    x = torch.randn(100000)
    out = torch.empty(0, device=DEV)
    torch.histc(x.to(DEV), 50, -4, 4, out=out)  # an unsized out is resized
    assert torch.equal(out.cpu(), torch.histc(x, 50, -4, 4))
    assert torch.equal(x.to(DEV).histc(bins=64).cpu(), x.histc(bins=64))


def test_histc_errors_match_cpu():
    x = torch.randn(10)
    raises_like_cpu(lambda t: torch.histc(t, 0), x)
    raises_like_cpu(lambda t: torch.histc(t, -3), x)
    raises_like_cpu(lambda t: torch.histc(t, 3, 2, 1), x)  # max < min
    raises_like_cpu(lambda t: torch.histc(t, 3, 0, float("inf")), x)
    raises_like_cpu(lambda t: torch.histc(t, 3), torch.tensor([1.0, float("nan")]))  # NaN range from the data
    raises_like_cpu(lambda t: torch.histc(t, 3), torch.arange(5))  # integer input
    raises_like_cpu(lambda t: torch.histc(t, 3, out=torch.empty(3, dtype=torch.float64, device=t.device)), x)


@pytest.mark.parametrize("op", opinfos_named(["histc"]), ids=lambda op: op.name)
def test_opinfo_samples(op):
    passed, failures = run_opinfo(op, DTYPES, max_samples=20)
    assert not failures, "\n".join(failures[:5])
    assert passed > 0
