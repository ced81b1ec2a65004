"""sort / argsort / msort / topk on ocl (dlprim's bitonic sort) vs the CPU."""
import pytest
import torch
from opinfo_compare import opinfos_named, run_opinfo
from torch.testing import assert_close

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8, torch.bool]


def ids(dtypes):
    return [str(d).replace("torch.", "") for d in dtypes]


def make(shape, dtype, seed=0, special=True):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not dtype.is_floating_point:
        lo = 0 if dtype == torch.uint8 else -100
        return torch.randint(lo, 100, shape, generator=g).to(dtype)
    x = (torch.randn(shape, generator=g) * 10).round().to(dtype)  # rounded: many ties
    if special and x.numel() >= 8:
        flat = x.view(-1)
        flat[0], flat[1], flat[2], flat[3] = float("nan"), float("inf"), -float("inf"), -0.0
        flat[5] = float("nan")
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_sort_stable_matches_cpu(dtype):
    for shape in [(37,), (5, 37), (4, 3, 9), (1,), (2, 1000)]:
        x = make(shape, dtype)
        for dim in range(-1, len(shape) - 1):
            for desc in (False, True):
                v, i = torch.sort(x.to("ocl"), dim=dim, descending=desc, stable=True)
                rv, ri = torch.sort(x, dim=dim, descending=desc, stable=True)
                assert_close(v.cpu(), rv, equal_nan=True, rtol=0, atol=0)
                assert torch.equal(i.cpu(), ri)
                assert torch.equal(torch.argsort(x.to("ocl"), dim=dim, descending=desc, stable=True).cpu(), ri)


def test_sort_layouts_and_sizes():
    x = make((30, 20), torch.float32, 1)
    for view in [x.t(), x[::2, 3:], x.unsqueeze(0).expand(3, 30, 20)]:
        v, i = torch.sort(view.to("ocl"), dim=1, stable=True)
        rv, ri = torch.sort(view, dim=1, stable=True)
        assert_close(v.cpu(), rv, equal_nan=True)
        assert torch.equal(i.cpu(), ri)
    # out= (non-contiguous), 0-dim, empty, and a long row (several bitonic passes)
    vo = torch.empty(20, 30, device="ocl").t()
    io = torch.empty(0, dtype=torch.int64, device="ocl")
    torch.sort(x.to("ocl"), dim=0, stable=True, out=(vo, io))
    rv, ri = torch.sort(x, dim=0, stable=True)
    assert_close(vo.cpu(), rv, equal_nan=True)
    assert torch.equal(io.cpu(), ri)
    v, i = torch.sort(torch.tensor(3.0, device="ocl"))
    assert v.item() == 3.0 and i.item() == 0
    v, i = torch.sort(torch.empty(0, 4, device="ocl"), dim=1)
    assert v.shape == (0, 4) and i.shape == (0, 4)
    big = torch.randn(3, 70000)
    v, i = torch.sort(big.to("ocl"), dim=1, descending=True, stable=True)
    rv, ri = torch.sort(big, dim=1, descending=True, stable=True)
    assert_close(v.cpu(), rv)
    assert torch.equal(i.cpu(), ri)
    assert_close(torch.msort(x.to("ocl")).cpu(), torch.msort(x), equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.uint8], ids=["f32", "f16", "i64", "u8"])
def test_unstable_sort_orders_values(dtype):
    x = make((6, 50), dtype, 2, special=False)
    v, i = torch.sort(x.to("ocl"), dim=1)
    rv, _ = torch.sort(x, dim=1)
    assert torch.equal(v.cpu(), rv)
    assert torch.equal(x.gather(1, i.cpu()), rv)  # any order among ties, but the right elements
    a = torch.argsort(x.to("ocl"), dim=1, descending=True).cpu()
    assert torch.equal(x.gather(1, a), torch.sort(x, dim=1, descending=True).values)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int32, torch.uint8],
                         ids=["f32", "f64", "f16", "i32", "u8"])
def test_topk(dtype):
    x = make((7, 40), dtype, 3, special=False)
    for k in (0, 1, 5, 40):
        for largest in (True, False):
            v, i = torch.topk(x.to("ocl"), k, dim=1, largest=largest)
            rv, _ = torch.topk(x, k, dim=1, largest=largest)
            assert torch.equal(v.cpu(), rv)
            assert torch.equal(x.gather(1, i.cpu()), rv)
    v, i = torch.topk(x.to("ocl").t(), 3, dim=0)
    assert torch.equal(v.cpu(), torch.topk(x.t(), 3, dim=0).values)
    with pytest.raises(RuntimeError, match="out of range"):
        torch.topk(x.to("ocl"), 41, dim=1)


@pytest.mark.parametrize("name", ["sort", "argsort", "msort", "topk"])
def test_opinfo_yardstick(name):
    passed, failures, blocked = 0, [], []
    for op in opinfos_named([name]):
        # the gradients scatter into the input: an indexing op of another family
        p, f = run_opinfo(op, DTYPES, foreign={"scatter"}, blocked=blocked)
        passed += p
        failures += f
    assert not failures, f"{len(failures)} of {passed + len(failures)} samples failed:\n" + "\n".join(failures[:20])
