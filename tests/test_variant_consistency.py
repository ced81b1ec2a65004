"""An element's result does not depend on which kernel variant computed it: the vectorized contiguous
kernel (operands on a 4-element boundary), the one-element contiguous kernel (a view one element in),
the strided kernel (a transposed view) and the multi-tensor batch (_foreach_*) must agree bit for bit.
Two DDP ranks whose allocators place a tensor differently must compute the same AdamW step."""
import pytest
import torch

OPS = {
    "sqrt": lambda a, b: a.abs().sqrt(),
    "div": lambda a, b: a / (b.abs() + 0.5),
    "div_scalar": lambda a, b: a / 0.0316227766,
    "addcdiv": lambda a, b: a.addcdiv(b, b.abs() + 0.1, value=-3e-3),
    "addcmul": lambda a, b: a.addcmul(b, b, value=1e-3),
    "mul_add": lambda a, b: a * 0.999997 + b,
    "exp": lambda a, b: a.exp(),
    "tanh": lambda a, b: a.tanh(),
    "sigmoid": lambda a, b: a.sigmoid(),
    "log1p": lambda a, b: a.abs().log1p(),
    "rsqrt": lambda a, b: (a.abs() + 0.1).rsqrt(),
    "lerp": lambda a, b: a.lerp(b, 0.1),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_variants_agree(name):
    f = OPS[name]
    g = torch.Generator().manual_seed(0)
    a, b = (torch.randn(4099, generator=g) for _ in range(2))
    da, db = a.to("ocl"), b.to("ocl")
    vec = f(da[1:].clone(), db[1:].clone()).cpu()  # aligned copies: the vectorized kernel
    one = f(da[1:], db[1:]).cpu()  # one element in: the one-element kernel
    ta = torch.stack([da, da]).t()[1:, 0]  # stride 2: the strided kernel
    tb = torch.stack([db, db]).t()[1:, 0]
    strided = f(ta, tb).cpu()
    assert torch.equal(vec, one), (vec - one).abs().max()
    assert torch.equal(vec, strided), (vec - strided).abs().max()


def test_foreach_agrees_with_single_ops():
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(n, generator=g).to("ocl") for n in (7, 64, 1000, 4099)]
    ys = [torch.randn(x.shape, generator=g).to("ocl").abs() + 0.1 for x in xs]
    batched = torch._foreach_addcdiv([x.clone() for x in xs], xs, ys, -3e-3)
    for x, y, r in zip(xs, ys, batched):
        assert torch.equal(r.cpu(), x.addcdiv(x, y, value=-3e-3).cpu())
    sq = torch._foreach_sqrt(ys)
    for y, r in zip(ys, sq):
        assert torch.equal(r.cpu(), y.sqrt().cpu())
