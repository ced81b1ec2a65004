"""CPU fallback for ops without an ocl kernel: warning once + counter, or an error in strict mode."""
import warnings

import pytest
import torch
from torch.testing import assert_close

import pytorch_ocl

# The stand-in for "an op without an ocl kernel": renorm (functional, out= and in-place forms;
# 2-D inputs). Rows whose L1 norm exceeds MAXNORM are scaled down.
MAXNORM = 5.0


@pytest.fixture
def non_strict():
    pytorch_ocl.set_strict(False)
    pytorch_ocl.reset_fallback_stats()
    yield
    pytorch_ocl.set_strict(True)
    pytorch_ocl.reset_fallback_stats()


def test_strict_flag_roundtrip():
    assert pytorch_ocl.is_strict() is True  # PYTORCH_OCL_STRICT=1 (conftest)
    pytorch_ocl.set_strict(False)
    try:
        assert pytorch_ocl.is_strict() is False
    finally:
        pytorch_ocl.set_strict(True)
    assert pytorch_ocl.is_strict() is True


def test_strict_raises_not_implemented_naming_the_op():
    x = torch.randn(2, 5).to("ocl")
    with pytest.raises(NotImplementedError) as info:
        torch.renorm(x, 1, 0, MAXNORM)
    assert "aten::renorm" in str(info.value)
    assert "ocl" in str(info.value)
    with pytest.raises(NotImplementedError, match="kthvalue"):
        torch.kthvalue(x, 2)


def test_strict_does_not_count():
    pytorch_ocl.reset_fallback_stats()
    x = torch.randn(2, 5).to("ocl")
    with pytest.raises(NotImplementedError):
        torch.renorm(x, 1, 0, MAXNORM)
    assert pytorch_ocl.fallback_stats() == {}


def test_non_strict_warns_once_and_counts(non_strict):
    cpu = torch.randn(3, 17)
    x = cpu.to("ocl")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y1 = torch.renorm(x, 1, 0, MAXNORM)
        y2 = torch.renorm(x, 1, 0, MAXNORM)
        y3 = x.renorm(1, 0, MAXNORM)
    msgs = [str(w.message) for w in caught if "renorm" in str(w.message)]
    assert len(msgs) == 1, msgs
    assert issubclass([w for w in caught if "renorm" in str(w.message)][0].category, UserWarning)
    assert "aten::renorm" in msgs[0] and "CPU" in msgs[0]
    for y in (y1, y2, y3):
        assert y.device.type == "ocl"
        assert_close(y.cpu(), torch.renorm(cpu, 1, 0, MAXNORM))
    stats = pytorch_ocl.fallback_stats()
    keys = [k for k in stats if k.startswith("aten::renorm")]
    assert len(keys) == 1, stats
    assert stats[keys[0]] == 3
    assert torch.ocl.fallback_stats() == stats


def test_non_strict_kthvalue_values_correct(non_strict):
    cpu = torch.randn(5, 9)
    x = cpu.to("ocl")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        values, indices = torch.kthvalue(x, 3, dim=1)
    assert any("kthvalue" in str(w.message) for w in caught)
    ref_v, ref_i = torch.kthvalue(cpu, 3, dim=1)
    assert values.device.type == "ocl" and indices.device.type == "ocl"
    assert_close(values.cpu(), ref_v)
    assert_close(indices.cpu(), ref_i)
    assert any(k.startswith("aten::kthvalue") for k in pytorch_ocl.fallback_stats())


def test_reset_fallback_stats(non_strict):
    x = torch.randn(2, 4).to("ocl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.renorm(x, 1, 0, MAXNORM)
    assert pytorch_ocl.fallback_stats()
    pytorch_ocl.reset_fallback_stats()
    assert pytorch_ocl.fallback_stats() == {}


def test_native_ops_do_not_fall_back(non_strict):
    cpu_a, cpu_b = torch.randn(8, 8), torch.randn(8)
    a, b = cpu_a.to("ocl"), cpu_b.to("ocl")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = ((a + b) * 2 - a / 3).sum(0).mean()
        c = a.t().contiguous()
        n = -a
        v = r.item()
    assert [str(w.message) for w in caught if "ocl" in str(w.message)] == []
    assert pytorch_ocl.fallback_stats() == {}
    assert_close(v, ((cpu_a + cpu_b) * 2 - cpu_a / 3).sum(0).mean().item(), rtol=1e-5, atol=1e-5)
    assert_close(c.cpu(), cpu_a.t().contiguous())
    assert_close(n.cpu(), -cpu_a)


def test_non_strict_in_fresh_process_default(run_py):
    # Without PYTORCH_OCL_STRICT the default is non-strict: warn once per op and run on the CPU.
    proc = run_py(
        """
        import warnings, torch, pytorch_ocl
        warnings.simplefilter("always")
        print(pytorch_ocl.is_strict())
        x = torch.tensor([[3.0, 1.0, 2.0], [30.0, 10.0, 20.0]]).to("ocl")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = torch.renorm(x, 1, 0, 6.0)
            y = torch.renorm(x, 1, 0, 6.0)
        print(sum("renorm" in str(m.message) for m in w))
        print(y.device, y.cpu().tolist())
        print(pytorch_ocl.fallback_stats())
        """,
        env={"PYTORCH_OCL_STRICT": None},
    )
    lines = proc.stdout.splitlines()
    assert lines[0] == "False"
    assert lines[1] == "1"
    assert lines[2].startswith("ocl:0 [[3.0, 1.0, 2.0], [")  # row 0 is within the max norm, row 1 is scaled
    assert "'aten::renorm" in lines[3] and ": 2" in lines[3]


def test_strict_env_zero_means_off(run_py):
    proc = run_py("import pytorch_ocl; print(pytorch_ocl.is_strict())", env={"PYTORCH_OCL_STRICT": "0"})
    assert proc.stdout.strip() == "False"


def test_non_strict_internal_fallback_complex128_copy(run_py):
    # A non-contiguous complex128 copy on the device must work (or be done natively) in the
    # default, non-strict mode; it must never crash the process.
    proc = run_py(
        """
        import warnings, torch, pytorch_ocl
        warnings.simplefilter("ignore")
        c = torch.randn(3, 4, dtype=torch.complex128)
        y = c.to("ocl").t().contiguous()
        print(torch.equal(y.cpu(), c.t().contiguous()))
        """,
        env={"PYTORCH_OCL_STRICT": "0"},
        check=False,
    )
    assert proc.returncode == 0, f"process died with status {proc.returncode}: {proc.stderr[-2000:]}"
    assert proc.stdout.strip() == "True"


def test_non_strict_fallback_out_inplace_and_views(non_strict):
    cpu = torch.arange(12.0).reshape(3, 4)
    d = cpu.to("ocl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # out= on the device
        out = torch.empty(3, 4, device="ocl")
        torch.renorm(d, 1, 1, MAXNORM, out=out)
        # in-place on a non-contiguous view: the CPU result is written back into the view
        v = d.clone()
        v[:, 1::2].renorm_(1, 0, MAXNORM)
        # ops returning Python values and index tensors
        same = torch.equal(d, cpu.to("ocl"))
        differ = torch.equal(d, (cpu + 1).to("ocl"))
        idx = torch.tensor([0, 2]).to("ocl")
        picked = d[idx]
        put = d.clone()
        put[idx] = -1.0
    assert_close(out.cpu(), torch.renorm(cpu, 1, 1, MAXNORM))
    ref = cpu.clone()
    ref[:, 1::2].renorm_(1, 0, MAXNORM)
    assert_close(v.cpu(), ref)
    assert same is True and differ is False
    assert picked.device.type == "ocl"
    assert_close(picked.cpu(), cpu[[0, 2]])
    ref_put = cpu.clone()
    ref_put[[0, 2]] = -1.0
    assert_close(put.cpu(), ref_put)
    stats = pytorch_ocl.fallback_stats()
    assert any(k.startswith("aten::renorm") for k in stats)
    assert any(k.startswith("aten::equal") for k in stats)
