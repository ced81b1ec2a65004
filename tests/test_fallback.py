"""CPU fallback for ops without an ocl kernel: warning once + counter, or an error in strict mode."""
import textwrap
import warnings

import pytest
import torch
from torch.testing import assert_close

import pytorch_ocl

# The stand-ins for "an op without an ocl kernel": operators this file defines with CPU kernels
# only (namespace ocl_fallback_test), so they never get an ocl kernel as the backend grows. They
# reach the same boxed fallback as any aten operator: gcd (integers; functional, out= and in-place
# forms, computed by torch.gcd on the CPU) and mode (values and indices, by torch.mode).
STANDINS = """
import torch
_standin_lib = torch.library.Library("ocl_fallback_test", "DEF")
_standin_lib.define("gcd(Tensor self, Tensor other) -> Tensor")
_standin_lib.define("gcd.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)")
_standin_lib.define("gcd_(Tensor(a!) self, Tensor other) -> Tensor(a!)")
_standin_lib.define("mode(Tensor self, int dim) -> (Tensor values, Tensor indices)")
_standin_lib.impl("gcd", lambda a, b: torch.gcd(a, b), "CPU")
_standin_lib.impl("gcd.out", lambda a, b, *, out: torch.gcd(a, b, out=out), "CPU")
_standin_lib.impl("gcd_", lambda a, b: a.gcd_(b), "CPU")
_standin_lib.impl("mode", lambda x, dim: tuple(torch.mode(x, dim)), "CPU")
gcd = torch.ops.ocl_fallback_test.gcd
gcd_out = torch.ops.ocl_fallback_test.gcd.out
gcd_ = torch.ops.ocl_fallback_test.gcd_
mode = torch.ops.ocl_fallback_test.mode
"""
exec(STANDINS)
GCD, MODE = "ocl_fallback_test::gcd", "ocl_fallback_test::mode"
# The warning tests need an aten operator reached through torch's Python binding: that binding
# turns the fallback's C++ warning into a Python UserWarning (torch.ops.* calls, the stand-ins
# above included, print it to stderr instead). torch._compute_linear_combination (the CPU's helper of
# matrix_exp, which ocl computes otherwise) has no ocl kernel: change it here if it ever gets one.
ATEN_STANDIN = "aten::_compute_linear_combination"


def linear_combination(t):
    """2 * t, as rows of t combined with the coefficients 2 * identity."""
    return torch._compute_linear_combination(t, 2 * torch.eye(t.shape[0], device=t.device))


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
    xi = torch.randint(1, 30, (2, 5)).to("ocl")
    with pytest.raises(NotImplementedError) as info:
        gcd(xi, xi)
    assert GCD in str(info.value)
    assert "ocl" in str(info.value)
    with pytest.raises(NotImplementedError, match=MODE):
        mode(x, 1)


def test_strict_does_not_count():
    pytorch_ocl.reset_fallback_stats()
    x = torch.randint(1, 30, (2, 5)).to("ocl")
    with pytest.raises(NotImplementedError):
        gcd(x, x)
    assert pytorch_ocl.fallback_stats() == {}


def test_non_strict_warns_once_and_counts(non_strict):
    cpu = torch.randn(3, 17)
    x = cpu.to("ocl")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y1 = linear_combination(x)
        y2 = linear_combination(x)
        y3 = linear_combination(x.t()).t()
    msgs = [str(w.message) for w in caught if ATEN_STANDIN in str(w.message)]
    assert len(msgs) == 1, msgs
    assert issubclass([w for w in caught if ATEN_STANDIN in str(w.message)][0].category, UserWarning)
    assert "CPU" in msgs[0]
    for y in (y1, y2, y3):
        assert y.device.type == "ocl"
        assert torch.equal(y.cpu(), linear_combination(cpu))
    stats = pytorch_ocl.fallback_stats()
    keys = [k for k in stats if k.startswith(ATEN_STANDIN)]
    assert len(keys) == 1, stats
    assert stats[keys[0]] == 3
    assert torch.ocl.fallback_stats() == stats
    # the stand-ins count the same way
    z = torch.randint(1, 60, (3, 17)).to("ocl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.equal(gcd(z, z + 4).cpu(), torch.gcd(z.cpu(), z.cpu() + 4))
    assert pytorch_ocl.fallback_stats()[GCD] == 1


def test_non_strict_values_and_indices_correct(non_strict):
    cpu = torch.randint(0, 4, (5, 9)).float()
    x = cpu.to("ocl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values, indices = mode(x, 1)
    ref_v, ref_i = torch.mode(cpu, dim=1)
    assert values.device.type == "ocl" and indices.device.type == "ocl"
    assert_close(values.cpu(), ref_v)
    assert_close(indices.cpu(), ref_i)
    assert any(k.startswith(MODE) for k in pytorch_ocl.fallback_stats())


def test_reset_fallback_stats(non_strict):
    x = torch.randint(1, 30, (2, 4)).to("ocl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gcd(x, x)
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
        "import pytorch_ocl\n" + STANDINS + textwrap.dedent("""
        import warnings
        warnings.simplefilter("always")
        print(pytorch_ocl.is_strict())
        x = torch.tensor([[4, 6, 9], [12, 5, 8]]).to("ocl")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            c = 2 * torch.eye(2, device="ocl")
            h = torch._compute_linear_combination(x.float(), c)
            h = torch._compute_linear_combination(x.float(), c)
            y = gcd(x, x + 2)
            y = gcd(x, x + 2)
        print(sum("aten::_compute_linear_combination" in str(m.message) for m in w))
        print(y.device, y.cpu().tolist())
        print(pytorch_ocl.fallback_stats())
        """),
        env={"PYTORCH_OCL_STRICT": None},
    )
    lines = proc.stdout.splitlines()
    assert lines[0] == "False"
    assert lines[1] == "1"
    x = torch.tensor([[4, 6, 9], [12, 5, 8]])
    assert lines[2] == "ocl:0 " + str(torch.gcd(x, x + 2).tolist())
    assert "'ocl_fallback_test::gcd': 2" in lines[3] and "'aten::_compute_linear_combination': 2" in lines[3]


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
    cpu = torch.arange(1, 13).reshape(3, 4)
    d = cpu.to("ocl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # out= on the device
        out = torch.empty(3, 4, dtype=torch.long, device="ocl")
        gcd_out(d, d + 3, out=out)
        # in-place on a non-contiguous view: the CPU result is written back into the view
        v = d.clone()
        gcd_(v[:, 1::2], torch.full((3, 2), 6, device="ocl"))
        # ops returning Python values and index tensors (native, next to the fallback)
        same = torch.equal(d, cpu.to("ocl"))
        differ = torch.equal(d, (cpu + 1).to("ocl"))
        idx = torch.tensor([0, 2]).to("ocl")
        picked = d[idx]
        put = d.clone()
        put[idx] = -1
    assert_close(out.cpu(), torch.gcd(cpu, cpu + 3))
    ref = cpu.clone()
    ref[:, 1::2].gcd_(torch.full((3, 2), 6))
    assert_close(v.cpu(), ref)
    assert same is True and differ is False
    assert picked.device.type == "ocl"
    assert_close(picked.cpu(), cpu[[0, 2]])
    ref_put = cpu.clone()
    ref_put[[0, 2]] = -1
    assert_close(put.cpu(), ref_put)
    stats = pytorch_ocl.fallback_stats()
    assert any(k.startswith(GCD) for k in stats)
