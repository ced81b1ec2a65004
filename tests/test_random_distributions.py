"""Gamma, Dirichlet and Poisson sampling on the device (torch.distributions' Gamma, Beta, Chi2, StudentT,
Dirichlet, Poisson): the samples' distribution against the CPU's (two-sample Kolmogorov-Smirnov distance, total
variation for counts, fixed seeds), reproducibility under torch.manual_seed and generator=, strided and empty
inputs, NaN and zero parameters, and the CPU's dtype errors."""
import pytest
import torch
from torch.testing import assert_close

import pytorch_ocl  # noqa: F401

N = 100_000


def ks_distance(a, b):
    """max |F_a - F_b| over the pooled sample (two-sample Kolmogorov-Smirnov statistic)."""
    a, b = a.double().sort().values, b.double().sort().values
    x = torch.cat([a, b])
    fa = torch.searchsorted(a, x, right=True).double() / len(a)
    fb = torch.searchsorted(b, x, right=True).double() / len(b)
    return (fa - fb).abs().max().item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("alpha", [0.05, 0.3, 1.0, 2.5, 30.0])
def test_gamma_samples_follow_the_cpus_distribution(alpha, dtype):
    if dtype == torch.float64 and not torch.ocl.get_device_properties(0).fp64:
        pytest.skip("no float64")
    torch.manual_seed(1)
    ocl = torch._standard_gamma(torch.full((N,), alpha, dtype=dtype, device="ocl")).cpu()
    cpu = torch._standard_gamma(torch.full((N,), alpha, dtype=dtype))
    assert ocl.dtype == dtype and bool((ocl > 0).all())
    # two samples of 1e5: 0.0086 is the 0.1% critical distance
    assert ks_distance(ocl, cpu) < 0.0086, (alpha, ks_distance(ocl, cpu))


@pytest.mark.parametrize("rate", [0.2, 3.0, 9.9, 10.0, 57.0, 1e4])
def test_poisson_counts_follow_the_cpus_distribution(rate):
    torch.manual_seed(2)
    ocl = torch.poisson(torch.full((N,), rate, device="ocl")).cpu()
    cpu = torch.poisson(torch.full((N,), rate))
    assert bool((ocl == ocl.round()).all() and (ocl >= 0).all())
    assert ks_distance(ocl, cpu) < 0.0086, (rate, ks_distance(ocl, cpu))  # conservative for counts


def test_dirichlet_rows_sum_to_one_with_the_right_means():
    torch.manual_seed(3)
    alpha = torch.tensor([0.5, 1.0, 3.0, 10.0])
    s = torch._sample_dirichlet(alpha.expand(N, 4).to("ocl")).cpu()
    assert_close(s.sum(-1), torch.ones(N), atol=1e-5, rtol=0)
    assert_close(s.mean(0), alpha / alpha.sum(), atol=3e-3, rtol=0)
    tiny = torch._sample_dirichlet(torch.full((3, 3), 1e-3, device="ocl")).cpu()  # gammas at the floor
    assert bool(torch.isfinite(tiny).all())
    assert_close(tiny.sum(-1), torch.ones(3), atol=1e-5, rtol=0)


def test_seeds_and_generators_give_the_same_samples():
    alpha = torch.rand(1000, device="ocl") * 3
    torch.manual_seed(7)
    a = torch._standard_gamma(alpha).cpu()
    torch.manual_seed(7)
    b = torch._standard_gamma(alpha).cpu()
    assert torch.equal(a, b)
    g1, g2 = torch.Generator("ocl").manual_seed(5), torch.Generator("ocl").manual_seed(5)
    assert torch.equal(torch.poisson(alpha * 20, g1).cpu(), torch.poisson(alpha * 20, g2).cpu())
    assert not torch.equal(torch.poisson(alpha * 20, g1).cpu(), torch.poisson(alpha * 20, g1).cpu())


def test_strided_empty_and_special_parameters():
    alpha = torch.rand(40, 30, device="ocl").t() * 4  # transposed
    out = torch._standard_gamma(alpha)
    assert out.shape == alpha.shape and bool((out > 0).all())
    assert torch._standard_gamma(torch.empty(0, 3, device="ocl")).shape == (0, 3)
    special = torch.tensor([0.0, float("nan"), -1.0])
    # the smallest normal float, as on the CPU
    assert torch.equal(torch._standard_gamma(special.to("ocl")).cpu(), torch._standard_gamma(special))
    assert torch.equal(torch.poisson(torch.zeros(5, device="ocl")).cpu(), torch.zeros(5))
    bad = torch.poisson(torch.tensor([1.0, -1.0], device="ocl"))
    with pytest.raises(RuntimeError, match="invalid Poisson rate, expected rate to be non-negative"):
        bad.cpu()  # the CPU's check, reported where the host next waits


def test_torch_distributions_sample_on_the_device():
    torch.manual_seed(4)
    d = torch.distributions

    def t(v):
        return torch.tensor(v, device="ocl")

    cases = [(d.Gamma(t(2.0), t(4.0)), 0.5), (d.Beta(t(2.0), t(5.0)), 2 / 7), (d.Chi2(t(3.0)), 3.0),
             (d.Poisson(t(6.5)), 6.5), (d.StudentT(t(5.0)), 0.0), (d.Dirichlet(t([1.0, 3.0])), 0.5)]
    for dist, mean in cases:
        s = dist.sample((N,))
        assert s.device.type == "ocl"
        assert abs(s.mean().item() - mean) < 0.02 * max(1.0, abs(mean)) + 0.01, (type(dist).__name__, s.mean())


@pytest.mark.parametrize("op,dtype,name", [(torch._standard_gamma, torch.half, "gamma_cpu"),
                                           (torch._standard_gamma, torch.long, "gamma_cpu"),
                                           (torch.poisson, torch.long, "poisson_cpu"),
                                           (torch._sample_dirichlet, torch.bfloat16, "dirichlet")])
def test_dtype_errors_match_the_cpu(op, dtype, name):
    for device in ("cpu", "ocl"):
        with pytest.raises(NotImplementedError, match=f'"{name}" not implemented for'):
            op(torch.ones(3, dtype=dtype, device=device))


@pytest.mark.parametrize("count,prob", [(10.0, 0.3), (7.0, 0.9), (40.0, 0.5), (1000.0, 0.02), (1e5, 0.7), (55.0, 0.2)])
def test_binomial_counts_follow_the_cpus_distribution(count, prob):
    """Inversion below n min(p, 1 - p) = 10, BTRS above; p above 1/2 through the failures."""
    torch.manual_seed(5)
    ocl = torch.binomial(torch.full((N,), count, device="ocl"), torch.full((N,), prob, device="ocl")).cpu()
    cpu = torch.binomial(torch.full((N,), count), torch.full((N,), prob))
    assert bool((ocl == ocl.round()).all() and (ocl >= 0).all() and (ocl <= count).all())
    assert ks_distance(ocl, cpu) < 0.0086, (count, prob, ks_distance(ocl, cpu))


def test_binomial_edges_broadcast_and_errors():
    count = torch.tensor([0.0, -1.0, 5.0, 5.0, 5.0, float("nan")])
    prob = torch.tensor([0.5, 0.5, 0.0, 1.0, 1.5, 0.5])
    got = torch.binomial(count.to("ocl"), prob.to("ocl")).cpu()
    assert_close(got[:5], torch.binomial(count[:5], prob[:5]))  # 0, 0, 0, n, n as on the CPU
    assert torch.isnan(got[5])  # the CPU's loop never ends on a NaN count; here NaN
    out = torch.binomial(torch.full((2, 1), 10.0, device="ocl"), torch.full((3,), 0.5, device="ocl"))
    assert out.shape == (2, 3)
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        torch.binomial(torch.ones(3, device="ocl"), torch.ones(3, dtype=torch.double, device="ocl"))
    assert torch.distributions.Binomial(10, torch.tensor(0.3, device="ocl")).sample((5,)).device.type == "ocl"
