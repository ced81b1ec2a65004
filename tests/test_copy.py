"""Copies in every direction, every dtype, any layout, with dtype conversion and non_blocking."""
import pytest
import torch
from torch.testing import assert_close

ALL_DTYPES = [
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64, torch.complex128,
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
]


def make(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_complex:
        return torch.randn(shape, dtype=dtype, generator=g)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 10).to(dtype)
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, generator=g).to(dtype)
    info = torch.iinfo(dtype)
    lo, hi = max(info.min, -(1 << 40)), min(info.max, 1 << 40)
    return torch.randint(lo, hi, shape, generator=g, dtype=torch.int64).to(dtype)


def ids(dtypes):
    return [str(d).replace("torch.", "") for d in dtypes]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_roundtrip_every_dtype(dtype):
    cpu = make((7, 5), dtype)
    dev = cpu.to("ocl")
    assert dev.dtype == dtype and dev.device.type == "ocl"
    back = dev.cpu()
    assert_close(back, cpu, rtol=0, atol=0)
    # 0-dim tensors and .item()
    s = cpu[2, 3].clone()
    assert s.dim() == 0
    ds = s.to("ocl")
    assert ds.item() == s.item()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_printing_every_dtype(dtype):
    cpu = make((3, 2), dtype)
    text = repr(cpu.to("ocl"))
    assert "device='ocl:0'" in text
    # values are printed exactly like the CPU tensor's
    assert " ".join(text.replace(", device='ocl:0'", "").split()) == " ".join(repr(cpu).split())


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_device_to_device_clone_every_dtype(dtype):
    cpu = make((4, 6), dtype, seed=1)
    dev = cpu.to("ocl")
    c = dev.clone()
    assert c.data_ptr() != dev.data_ptr()
    assert_close(c.cpu(), cpu, rtol=0, atol=0)
    d = torch.empty_like(dev)
    d.copy_(dev)
    assert_close(d.cpu(), cpu, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_non_contiguous_device_copy_every_dtype(dtype):
    cpu = make((6, 8), dtype, seed=2)
    dev = cpu.to("ocl")
    # transposed -> contiguous on the device
    t = dev.t().contiguous()
    assert t.is_contiguous()
    assert_close(t.cpu(), cpu.t().contiguous(), rtol=0, atol=0)
    # strided slice -> CPU
    assert_close(dev[::2, 1::3].cpu(), cpu[::2, 1::3], rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_zeros_every_dtype(dtype):
    z = torch.zeros(3, 4, dtype=dtype, device="ocl")
    assert_close(z.cpu(), torch.zeros(3, 4, dtype=dtype), rtol=0, atol=0)
    e = torch.empty(5, dtype=dtype, device="ocl")
    assert e.dtype == dtype and e.shape == (5,)


def test_cpu_to_ocl_non_contiguous_source():
    cpu = torch.randn(16, 9)
    for src in (cpu.t(), cpu[::3, ::2], cpu.unsqueeze(0).expand(3, 16, 9), cpu[:, 4]):
        dev = src.to("ocl")
        assert_close(dev.cpu(), src)


def test_cpu_to_ocl_non_contiguous_destination():
    cpu = torch.randn(10, 12)
    dev = torch.zeros(10, 12, device="ocl")
    dev[:, ::2] = cpu[:, ::2]
    ref = torch.zeros(10, 12)
    ref[:, ::2] = cpu[:, ::2]
    assert_close(dev.cpu(), ref)
    dev2 = torch.zeros(12, 10, device="ocl").t()
    dev2.copy_(cpu)  # destination transposed
    assert_close(dev2.cpu(), cpu)


def test_ocl_to_cpu_non_contiguous_both_sides():
    cpu = torch.randn(8, 10)
    dev = cpu.to("ocl")
    out = torch.zeros(10, 8).t()  # non-contiguous CPU destination
    out.copy_(dev[:, :])
    assert_close(out, cpu)
    out2 = torch.zeros(8, 20)[:, ::2]
    out2.copy_(dev.t().t())
    assert_close(out2, cpu)
    out3 = torch.zeros(4, 10)
    out3.copy_(dev[1::2])
    assert_close(out3, cpu[1::2])
    out4 = torch.zeros(10, 4)
    out4.copy_(dev.t()[:, ::2])
    assert_close(out4, cpu.t()[:, ::2])


def test_ocl_to_ocl_non_contiguous_both_sides():
    cpu = torch.randn(9, 11)
    dev = cpu.to("ocl")
    dst = torch.zeros(11, 18, device="ocl")
    dst[:, ::2] = dev.t()
    ref = torch.zeros(11, 18)
    ref[:, ::2] = cpu.t()
    assert_close(dst.cpu(), ref)


def test_broadcasting_copy():
    row = torch.randn(7)
    dev = torch.zeros(4, 7, device="ocl")
    dev.copy_(row.to("ocl"))
    assert_close(dev.cpu(), row.expand(4, 7))
    dev2 = torch.zeros(4, 7, device="ocl")
    dev2.copy_(row)  # from CPU with broadcasting
    assert_close(dev2.cpu(), row.expand(4, 7))
    dev3 = torch.zeros(3, 5, device="ocl")
    dev3.copy_(torch.tensor(2.5))  # 0-dim CPU source
    assert_close(dev3.cpu(), torch.full((3, 5), 2.5))


def test_storage_offset_views():
    cpu = torch.randn(100)
    dev = cpu.to("ocl")
    assert_close(dev[37:61].cpu(), cpu[37:61])
    assert_close(dev[37:61].clone().cpu(), cpu[37:61])
    assert_close(dev[5:].view(19, 5)[3:, 1:4].cpu(), cpu[5:].view(19, 5)[3:, 1:4])
    # write through an offset view
    dev[10:20] = torch.ones(10)
    ref = cpu.clone()
    ref[10:20] = 1
    assert_close(dev.cpu(), ref)


def test_large_copy():
    cpu = torch.randn(1 << 20)
    dev = cpu.to("ocl")
    assert_close(dev.cpu(), cpu)
    assert_close(dev.view(1024, 1024).t().contiguous().cpu(), cpu.view(1024, 1024).t().contiguous())


CONVERSIONS = [
    (torch.float32, torch.int64),
    (torch.int32, torch.float64),
    (torch.float32, torch.float16),
    (torch.float16, torch.float32),
    (torch.float32, torch.bfloat16),
    (torch.bfloat16, torch.float32),
    (torch.float64, torch.float32),
    (torch.int64, torch.int32),
    (torch.bool, torch.float32),
    (torch.float32, torch.bool),
    (torch.int64, torch.bool),
    (torch.uint8, torch.int64),
    (torch.int8, torch.float32),
    (torch.int16, torch.int32),
    (torch.float32, torch.uint8),
    (torch.float16, torch.bfloat16),
]


def conversion_source(src):
    g = torch.Generator().manual_seed(3)
    if src == torch.bool:
        return torch.randint(0, 2, (9, 13), generator=g).bool()
    if src.is_floating_point:
        # non-negative when the destination might be unsigned; includes 0 and fractions
        v = torch.randn(9, 13, generator=g) * 50
        v[0, :4] = torch.tensor([0.0, -0.0, 0.5, -2.75])
        return v.to(src)
    if src == torch.uint8:
        return torch.randint(0, 256, (9, 13), generator=g).to(src)
    if src == torch.int64:
        v = torch.randint(-(1 << 40), 1 << 40, (9, 13), generator=g)
        v[0, :3] = torch.tensor([0, (1 << 33) + 5, -(1 << 35) - 7])
        return v
    info = torch.iinfo(src)
    return torch.randint(info.min, info.max, (9, 13), generator=g, dtype=torch.int64).to(src)


@pytest.mark.parametrize("src,dst", CONVERSIONS, ids=[f"{a}->{b}".replace("torch.", "") for a, b in CONVERSIONS])
def test_conversion_on_device(src, dst):
    cpu = conversion_source(src)
    if dst == torch.uint8:
        cpu = cpu.abs()
    dev = cpu.to("ocl")
    conv = dev.to(dst)
    assert conv.device.type == "ocl" and conv.dtype == dst
    assert_close(conv.cpu(), cpu.to(dst), rtol=0, atol=0)
    # non-contiguous source and destination
    nc = torch.zeros(13, 9, dtype=dst, device="ocl").t()
    nc.copy_(dev)
    assert_close(nc.cpu(), cpu.to(dst), rtol=0, atol=0)
    assert_close(dev.t().to(dst).cpu(), cpu.t().to(dst), rtol=0, atol=0)


def test_conversion_host_to_device_and_back():
    cpu64 = torch.randn(20, dtype=torch.float64)
    dev32 = torch.empty(20, device="ocl")
    dev32.copy_(cpu64)
    assert_close(dev32.cpu(), cpu64.float())
    cpu_int = torch.empty(20, dtype=torch.int64)
    cpu_int.copy_((dev32 * 10))
    assert_close(cpu_int, (cpu64.float() * 10).long())
    half = torch.randn(6, 4).to("ocl", dtype=torch.float16)
    assert half.dtype == torch.float16 and half.device.type == "ocl"


def test_to_with_dtype_and_device_together():
    cpu = torch.randn(5, 3)
    dev = cpu.to(device="ocl", dtype=torch.float64)
    assert dev.dtype == torch.float64
    assert_close(dev.cpu(), cpu.double())
    back = dev.to(device="cpu", dtype=torch.float16)
    assert_close(back, cpu.double().half())


def test_non_blocking_copies():
    cpu = torch.randn(1 << 16)
    dev = cpu.to("ocl", non_blocking=True)
    out = dev * 2
    back = out.to("cpu", non_blocking=True)
    torch.ocl.synchronize()
    assert_close(back, cpu * 2)
    # into a preallocated CPU tensor
    dst = torch.empty(1 << 16)
    dst.copy_(out, non_blocking=True)
    torch.ocl.synchronize()
    assert_close(dst, cpu * 2)


def test_zero_size_copies():
    for shape in ((0,), (3, 0), (0, 4, 2)):
        cpu = torch.empty(shape)
        dev = cpu.to("ocl")
        assert dev.shape == shape
        assert dev.cpu().shape == shape
        assert dev.clone().shape == shape
        assert dev.to(torch.int64).shape == shape


def test_copy_to_self_and_overlapping_views():
    cpu = torch.arange(10, dtype=torch.float32)
    dev = cpu.to("ocl")
    dev.copy_(dev)
    assert_close(dev.cpu(), cpu)
    dev[2:6].copy_(dev[6:10])
    ref = cpu.clone()
    ref[2:6] = ref[6:10].clone()
    assert_close(dev.cpu(), ref)
    # another tensor over the same bytes (load_state_dict after an in-place DCP load), and views whose
    # ranges overlap at different offsets (one buffer copy would be CL_MEM_COPY_OVERLAP)
    dev[:].copy_(dev)
    assert_close(dev.cpu(), ref)
    dev[3:9].copy_(dev[1:7])
    ref[3:9] = ref[1:7].clone()
    assert_close(dev.cpu(), ref)


def test_item_every_position():
    cpu = torch.randn(3, 4, dtype=torch.float64)
    dev = cpu.to("ocl")
    for i in range(3):
        for j in range(4):
            assert dev[i, j].item() == cpu[i, j].item()
    assert torch.tensor([True], device="ocl").item() is True
    assert torch.tensor([-7], device="ocl").item() == -7
    assert torch.tensor(1 << 50, device="ocl").item() == 1 << 50
    assert dev.t()[2, 1].item() == cpu[1, 2].item()
    with pytest.raises(RuntimeError):
        dev.item()


def test_tolist_and_numpy():
    cpu = torch.randn(3, 3)
    dev = cpu.to("ocl")
    assert dev.tolist() == cpu.tolist()
    assert (dev.cpu().numpy() == cpu.numpy()).all()


FILL_VALUES = {
    torch.float32: 2.5, torch.float64: 1 / 3, torch.float16: 0.1, torch.bfloat16: 1 / 3,
    torch.complex64: 1 + 2j, torch.complex128: -3.5 + 0.25j, torch.bool: True, torch.uint8: 7,
    torch.int8: -7, torch.int16: -300, torch.int32: 123456, torch.int64: (1 << 40) + 1,
}


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids(ALL_DTYPES))
def test_full_and_strided_fill_every_dtype(dtype):
    v = FILL_VALUES[dtype]
    assert_close(torch.full((4, 6), v, dtype=dtype, device="ocl").cpu(), torch.full((4, 6), v, dtype=dtype),
                 rtol=0, atol=0)
    assert_close(torch.ones(3, dtype=dtype, device="ocl").cpu(), torch.ones(3, dtype=dtype), rtol=0, atol=0)
    for index in ((slice(None), slice(None, None, 2)), (slice(1, None),), (slice(None), 3)):
        ref = torch.zeros(4, 6, dtype=dtype)
        ref[index].fill_(v)
        d = torch.zeros(4, 6, dtype=dtype, device="ocl")
        d[index].fill_(v)
        assert_close(d.cpu(), ref, rtol=0, atol=0)
    z = torch.full((4, 6), v, dtype=dtype, device="ocl")
    z.t()[::2].zero_()
    ref = torch.full((4, 6), v, dtype=dtype)
    ref.t()[::2].zero_()
    assert_close(z.cpu(), ref, rtol=0, atol=0)


def test_high_rank_non_contiguous_copies():
    # 9 and 10 dims that cannot be merged (reversed permutation): moving such a tensor to the
    # CPU or making it contiguous must work like on the CPU.
    for rank in (8, 9, 10):
        cpu = torch.randn([2] * rank)
        perm = list(range(rank))[::-1]
        dev = cpu.to("ocl")
        assert_close(dev.permute(perm).cpu(), cpu.permute(perm), rtol=0, atol=0)
        assert_close(dev.permute(perm).contiguous().cpu(), cpu.permute(perm).contiguous(), rtol=0, atol=0)
        dst = torch.zeros([2] * rank, device="ocl")
        dst.copy_(cpu.permute(perm))
        assert_close(dst.cpu(), cpu.permute(perm).contiguous(), rtol=0, atol=0)


def test_view_as_real_and_complex_are_views():
    cpu = torch.randn(4, 3, dtype=torch.complex64)
    dev = cpu.to("ocl")
    r = torch.view_as_real(dev)
    assert r.device.type == "ocl" and r.shape == (4, 3, 2)
    assert r.untyped_storage().data_ptr() == dev.untyped_storage().data_ptr()
    assert_close(r.cpu(), torch.view_as_real(cpu), rtol=0, atol=0)
    r[..., 1].zero_()  # writes through to the complex tensor
    assert_close(dev.cpu(), torch.complex(cpu.real, torch.zeros_like(cpu.real)), rtol=0, atol=0)
    pairs = torch.randn(5, 2)
    c = torch.view_as_complex(pairs.to("ocl"))
    assert c.dtype == torch.complex64 and c.device.type == "ocl"
    assert_close(c.cpu(), torch.view_as_complex(pairs), rtol=0, atol=0)
    assert_close(dev.real.cpu(), cpu.real, rtol=0, atol=0)


def test_dense_copies_as_gpu_kernels():
    """GPUs copy dense tensors of >= 1 MiB whose two addresses agree mod 16 with a kernel of
    16-byte vectors (bytes for the unaligned head and tail), the rest with the buffer copy;
    PYTORCH_OCL_GPU_MAPPING=1 selects that path on a CPU device. The kernel profiler shows which
    one ran."""
    from conftest import run_python

    code = """
        import torch, pytorch_ocl
        torch.manual_seed(0)
        # (dtype, elements, source offset, destination offset in elements, kernel expected)
        cases = [(torch.float32, 1 << 18, 0, 0, True), (torch.float32, (1 << 18) + 3, 1, 5, True),
                 (torch.uint8, (1 << 20) + 5, 3, 19, True), (torch.uint8, (1 << 20) + 29, 15, 15, True),
                 (torch.float16, (1 << 19) + 2, 2, 7, False), (torch.int64, 1 << 17, 1, 3, True),
                 (torch.bool, 1 << 20, 0, 7, False), (torch.complex64, 1 << 17, 1, 7, True),
                 (torch.float32, 1000, 0, 0, False)]
        for dtype, n, src_off, dst_off, kernel in cases:
            src = (torch.randn(n + src_off) * 100).to(dtype)
            d = src.to("ocl")[src_off:]
            out = torch.empty(n + dst_off, dtype=dtype, device="ocl")[dst_off:]
            with pytorch_ocl.profiler.profile() as prof:
                out.copy_(d)
            ran = {name for name, _, _ in prof.records}
            assert ran == ({"copy"} if kernel else set()), (dtype, n, src_off, dst_off, ran)
            assert torch.equal(out.cpu(), src[src_off:]), (dtype, n, src_off, dst_off)
            assert torch.equal(d.clone().cpu(), src[src_off:]), (dtype, n, src_off)
            # The bytes around the destination stay untouched.
            guard = torch.zeros(n + 64, dtype=dtype, device="ocl")
            guard[dst_off:dst_off + n].copy_(d)
            assert torch.equal(guard[:dst_off].cpu(), torch.zeros(dst_off, dtype=dtype))
            assert torch.equal(guard[dst_off + n:].cpu(), torch.zeros(64 - dst_off, dtype=dtype))
        print("ok")
    """
    out = run_python(code, env={"PYTORCH_OCL_GPU_MAPPING": "1"}).stdout
    assert "ok" in out
