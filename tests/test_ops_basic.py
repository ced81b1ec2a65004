"""Native arithmetic and reductions on ocl, checked against the same computation on the CPU."""
import operator

import pytest
import torch
from torch.testing import assert_close

DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool]
DTYPE_IDS = ["float32", "float64", "int64", "int32", "bool"]


def make(shape, dtype, seed=0, nonzero=False):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        t = torch.randint(0, 2, shape, generator=g).bool()
        return torch.ones(shape, dtype=torch.bool) if nonzero else t
    if dtype.is_floating_point:
        t = torch.randn(shape, generator=g, dtype=torch.float64) * 5
        if nonzero:
            t = torch.where(t.abs() < 0.5, torch.full_like(t, 0.75), t)
        return t.to(dtype)
    t = torch.randint(-50, 50, shape, generator=g, dtype=torch.int64)
    if nonzero:
        t = torch.where(t == 0, torch.full_like(t, 7), t)
    return t.to(dtype)


def dev(t):
    return t.to("ocl")


def check(ocl_result, cpu_result, **kw):
    assert ocl_result.device.type == "ocl", ocl_result.device
    assert ocl_result.dtype == cpu_result.dtype, (ocl_result.dtype, cpu_result.dtype)
    assert ocl_result.shape == cpu_result.shape, (ocl_result.shape, cpu_result.shape)
    assert_close(ocl_result.cpu(), cpu_result, equal_nan=True, **kw)


def alpha_for(dtype):
    if dtype == torch.bool:
        return True
    return 0.5 if dtype.is_floating_point else 3


BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
}


def _supported(op, dtype):
    return not (op == "sub" and dtype == torch.bool)


# ---------------------------------------------------------------------------------------
# binary ops: same dtype, alpha, broadcasting, scalars


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_same_dtype(op, dtype):
    if not _supported(op, dtype):
        a, b = make((4, 5), dtype), make((4, 5), dtype, 1)
        with pytest.raises(RuntimeError) as cpu_err:
            BINARY[op](a, b)
        with pytest.raises(RuntimeError) as ocl_err:
            BINARY[op](dev(a), dev(b))
        assert str(ocl_err.value).split("\n")[0] == str(cpu_err.value).split("\n")[0]
        return
    a, b = make((4, 5), dtype), make((4, 5), dtype, 1, nonzero=(op == "div"))
    check(BINARY[op](dev(a), dev(b)), BINARY[op](a, b))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", ["add", "sub"])
def test_binary_alpha(op, dtype):
    if not _supported(op, dtype):
        pytest.skip("sub is not defined for bool (checked in test_binary_same_dtype)")
    a, b = make((6, 3), dtype), make((6, 3), dtype, 1)
    alpha = alpha_for(dtype)
    if dtype.is_floating_point or dtype == torch.bool:
        check(BINARY[op](dev(a), dev(b), alpha=alpha), BINARY[op](a, b, alpha=alpha))
    else:
        check(BINARY[op](dev(a), dev(b), alpha=alpha), BINARY[op](a, b, alpha=alpha))
        # a float alpha is refused for integer tensors, like on the CPU
        with pytest.raises(RuntimeError):
            BINARY[op](dev(a), dev(b), alpha=0.5)
    # scalar other with alpha
    other = True if dtype == torch.bool else 2
    check(BINARY[op](dev(a), other, alpha=alpha), BINARY[op](a, other, alpha=alpha))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_broadcasting(op, dtype):
    if not _supported(op, dtype):
        pytest.skip("sub is not defined for bool")
    nz = op == "div"
    cases = [((3, 1), (1, 4)), ((5, 4), (4,)), ((2, 1, 3), (4, 1)), ((7,), ())]
    for i, (sa, sb) in enumerate(cases):
        a, b = make(sa, dtype, i, nonzero=nz), make(sb, dtype, 10 + i, nonzero=nz)
        check(BINARY[op](dev(a), dev(b)), BINARY[op](a, b))
        check(BINARY[op](dev(b), dev(a)), BINARY[op](b, a))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_python_scalars(op, dtype):
    if not _supported(op, dtype):
        pytest.skip("sub is not defined for bool")
    a = make((3, 4), dtype)
    scalars = [2, 2.5, True] if dtype != torch.bool else [True, 3, 1.5]
    for s in scalars:
        if op == "sub" and isinstance(s, bool):
            continue
        check(BINARY[op](dev(a), s), BINARY[op](a, s))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_python_operators_with_scalars(dtype):
    a = make((3, 4), dtype)
    d = dev(a)
    check(d + 3, a + 3)
    check(3 + d, 3 + a)
    check(d * 2, a * 2)
    check(2 * d, 2 * a)
    check(d * 1.5, a * 1.5)
    check(d / 4, a / 4)
    if dtype != torch.bool:
        check(d - 1, a - 1)
        check(10 - d, 10 - a)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=["float32", "int64"])
def test_scalar_divided_by_tensor(dtype):
    a = make((3, 4), dtype, nonzero=True)
    check(1 / dev(a), 1 / a)
    check(3.5 / dev(a), 3.5 / a)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_zero_dim_tensors(op, dtype):
    if not _supported(op, dtype):
        pytest.skip("sub is not defined for bool")
    a = make((4, 3), dtype, nonzero=True)
    for s in (torch.tensor(3), torch.tensor(2.5), torch.tensor(2.5, dtype=torch.float64), torch.tensor(True)):
        if op == "sub" and s.dtype == torch.bool:
            continue
        # a 0-dim CPU tensor is allowed as the other operand of an ocl tensor
        check(BINARY[op](dev(a), s), BINARY[op](a, s))
        # a 0-dim ocl tensor broadcasts like any other
        check(BINARY[op](dev(a), dev(s)), BINARY[op](a, s))
        check(BINARY[op](dev(s), dev(a)), BINARY[op](s, a))
        # ... and as the first operand
        check(BINARY[op](s, dev(a)), BINARY[op](s, a))
    # 0-dim op 0-dim
    x, y = make((), dtype, 1), make((), dtype, 2, nonzero=True)
    check(BINARY[op](dev(x), dev(y)), BINARY[op](x, y))
    check(BINARY[op](dev(x), y), BINARY[op](x, y))


PROMOTIONS = [
    (torch.int32, torch.int64),
    (torch.int32, torch.float32),
    (torch.int64, torch.float64),
    (torch.float32, torch.float64),
    (torch.bool, torch.int32),
    (torch.bool, torch.float32),
    (torch.int64, torch.float32),
]


@pytest.mark.parametrize("da,db", PROMOTIONS, ids=[f"{a}-{b}".replace("torch.", "") for a, b in PROMOTIONS])
@pytest.mark.parametrize("op", list(BINARY))
def test_type_promotion(op, da, db):
    if op == "sub" and da == torch.bool:
        pytest.skip("sub is not defined for bool")
    a, b = make((5, 6), da, 1, nonzero=True), make((5, 6), db, 2, nonzero=True)
    check(BINARY[op](dev(a), dev(b)), BINARY[op](a, b))
    check(BINARY[op](dev(b), dev(a)), BINARY[op](b, a))


def test_int_tensor_with_float_zero_dim_cpu_tensor():
    a = make((4,), torch.int32)
    s = torch.tensor(1.5, dtype=torch.float64)
    check(dev(a) * s, a * s)
    check(dev(a) + s, a + s)


# ---------------------------------------------------------------------------------------
# in-place and out=


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_inplace(dtype):
    a, b = make((4, 6), dtype), make((4, 6), dtype, 1, nonzero=True)
    alpha = alpha_for(dtype)
    for name, kwargs in (("add_", {"alpha": alpha}), ("mul_", {}), ("sub_", {"alpha": alpha})):
        if dtype == torch.bool and name == "sub_":
            continue
        x_cpu, x_dev = a.clone(), dev(a)
        ptr = x_dev.data_ptr()
        getattr(x_cpu, name)(b, **kwargs)
        r = getattr(x_dev, name)(dev(b), **kwargs)
        assert r is x_dev and x_dev.data_ptr() == ptr
        check(x_dev, x_cpu)
    if dtype.is_floating_point:
        x_cpu, x_dev = a.clone(), dev(a)
        x_cpu.div_(b)
        x_dev.div_(dev(b))
        check(x_dev, x_cpu)
        x_cpu.add_(2.5).mul_(0.5).div_(3)
        x_dev.add_(2.5).mul_(0.5).div_(3)
        check(x_dev, x_cpu)
    else:
        # true division cannot be written into an integer tensor: same error as the CPU
        with pytest.raises(RuntimeError, match="can't be cast"):
            dev(a).div_(dev(b))
    # python in-place operators
    x_cpu, x_dev = a.clone(), dev(a)
    x_cpu += b
    x_dev += dev(b)
    check(x_dev, x_cpu)


def test_inplace_broadcast_and_type_rules():
    a = make((3, 4), torch.float32)
    row = make((4,), torch.float32, 1)
    x = dev(a)
    x.add_(dev(row))
    check(x, a + row)
    x_int = dev(make((3, 4), torch.int64))
    with pytest.raises(RuntimeError):
        x_int.add_(dev(row))  # float result into int tensor
    x_f = dev(a)
    x_f.add_(dev(make((3, 4), torch.int64, 2)))
    check(x_f, a + make((3, 4), torch.int64, 2))


def test_inplace_on_non_contiguous_views():
    a = make((6, 8), torch.float32)
    x = dev(a)
    x[:, ::2].mul_(10)
    x.t()[1:3].add_(1)
    ref = a.clone()
    ref[:, ::2].mul_(10)
    ref.t()[1:3].add_(1)
    check(x, ref)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", list(BINARY))
def test_out_argument(op, dtype):
    if not _supported(op, dtype):
        pytest.skip("sub is not defined for bool")
    a, b = make((4, 5), dtype), make((4, 5), dtype, 1, nonzero=True)
    expected = BINARY[op](a, b)
    out = torch.empty(4, 5, dtype=expected.dtype, device="ocl")
    r = BINARY[op](dev(a), dev(b), out=out)
    assert r is out
    check(out, expected)
    # non-contiguous out
    big = torch.zeros(5, 8, dtype=expected.dtype, device="ocl")
    out_t = big.t()[::2, :]  # shape (4, 5), strided
    assert not out_t.is_contiguous()
    BINARY[op](dev(a), dev(b), out=out_t)
    ref_big = torch.zeros(5, 8, dtype=expected.dtype)
    ref_big.t()[::2, :] = expected
    check(big, ref_big)
    # out of the wrong shape (empty) is resized
    out0 = torch.empty(0, dtype=expected.dtype, device="ocl")
    BINARY[op](dev(a), dev(b), out=out0)
    check(out0, expected)


def test_out_with_wider_dtype():
    a, b = make((3, 3), torch.int32), make((3, 3), torch.int32, 1)
    out = torch.empty(3, 3, dtype=torch.float64, device="ocl")
    torch.add(dev(a), dev(b), out=out)
    check(out, torch.add(a, b, out=torch.empty(3, 3, dtype=torch.float64)))
    out_i = torch.empty(3, 3, dtype=torch.int32, device="ocl")
    with pytest.raises(RuntimeError):
        torch.div(dev(a), dev(b), out=out_i)


def test_out_on_cpu_is_rejected():
    a = dev(make((3,), torch.float32))
    with pytest.raises(RuntimeError):
        torch.add(a, a, out=torch.empty(3))


# ---------------------------------------------------------------------------------------
# layouts


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", list(BINARY))
def test_non_contiguous_inputs(op, dtype):
    if not _supported(op, dtype):
        pytest.skip("sub is not defined for bool")
    a = make((8, 6), dtype)
    b = make((6, 8), dtype, 1, nonzero=True)
    c = make((16, 6), dtype, 2, nonzero=True)
    da, db, dc = dev(a), dev(b), dev(c)
    check(BINARY[op](da, db.t()), BINARY[op](a, b.t()))  # transposed
    check(BINARY[op](da, dc[::2]), BINARY[op](a, c[::2]))  # sliced with a step
    check(BINARY[op](da[1::3, ::2], db.t()[1::3, 1::2]), BINARY[op](a[1::3, ::2], b.t()[1::3, 1::2]))
    check(BINARY[op](da.t(), db), BINARY[op](a.t(), b))
    # expanded operand
    row = make((1, 6), dtype, 3, nonzero=True)
    check(BINARY[op](da, dev(row).expand(8, 6)), BINARY[op](a, row.expand(8, 6)))


def test_high_rank_and_offsets():
    a = make((2, 3, 4, 5, 6), torch.float32)
    b = make((6, 5, 4, 3, 2), torch.float32, 1)
    da, db = dev(a), dev(b)
    bp = b.permute(4, 3, 2, 1, 0)
    check(da + db.permute(4, 3, 2, 1, 0), a + bp)
    check(da[:, 1:, ::2, 2:, 1::2] * db.permute(4, 3, 2, 1, 0)[:, 1:, ::2, 2:, 1::2],
          a[:, 1:, ::2, 2:, 1::2] * bp[:, 1:, ::2, 2:, 1::2])


@pytest.mark.parametrize("op", list(BINARY))
def test_zero_size(op):
    for sa, sb in (((0,), (0,)), ((3, 0), (3, 0)), ((0, 4), (4,)), ((2, 0, 3), (1, 3))):
        a, b = torch.randn(sa), torch.randn(sb)
        check(BINARY[op](dev(a), dev(b)), BINARY[op](a, b))
    out = torch.empty(0, device="ocl")
    BINARY[op](torch.empty(0, device="ocl"), torch.empty(0, device="ocl"), out=out)
    assert out.shape == (0,)


def test_large_elementwise():
    a, b = torch.randn(1 << 20), torch.randn(1 << 20)
    check(dev(a) * dev(b) + 1, a * b + 1)
    check(dev(a).view(1024, 1024).t() + dev(b).view(1024, 1024), a.view(1024, 1024).t() + b.view(1024, 1024))


def test_int64_precision_kept():
    a = torch.tensor([(1 << 40) + 3, -(1 << 45) + 1, (1 << 62)], dtype=torch.int64)
    b = torch.tensor([5, 7, -(1 << 61)], dtype=torch.int64)
    check(dev(a) + dev(b), a + b)
    check(dev(a) - dev(b), a - b)
    check(dev(a) * 3, a * 3)
    check(dev(a) + (1 << 35), a + (1 << 35))
    check(dev(a).add(dev(b), alpha=1 << 20), a.add(b, alpha=1 << 20))


def test_float64_precision_kept():
    a = torch.tensor([1.0 + 2 ** -40, 1e300, -3.0], dtype=torch.float64)
    b = torch.tensor([2 ** -45, 1e-300, 1.0 / 3], dtype=torch.float64)
    check(dev(a) + dev(b), a + b, rtol=0, atol=0)
    check(dev(a) * dev(b), a * b, rtol=0, atol=0)
    check(dev(a) / dev(b), a / b, rtol=0, atol=0)
    check(dev(a) + 2 ** -42, a + 2 ** -42, rtol=0, atol=0)


def test_division_special_values():
    a = torch.tensor([1.0, -1.0, 0.0, 5.0])
    b = torch.tensor([0.0, 0.0, 0.0, -0.0])
    check(dev(a) / dev(b), a / b)
    ai = torch.tensor([1, -1, 0, 7], dtype=torch.int64)
    bi = torch.tensor([0, 0, 0, 2], dtype=torch.int64)
    check(dev(ai) / dev(bi), ai / bi)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("op", list(BINARY))
def test_half_types(op, dtype):
    a, b = make((8, 9), dtype), make((8, 9), dtype, 1, nonzero=True)
    check(BINARY[op](dev(a), dev(b)), BINARY[op](a, b))
    check(BINARY[op](dev(a), 1.5), BINARY[op](a, 1.5))
    check(BINARY[op](dev(a), dev(b.float())), BINARY[op](a, b.float()))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32],
                         ids=["float32", "float64", "int64", "int32"])
def test_neg(dtype):
    a = make((5, 7), dtype)
    check(-dev(a), -a)
    check(torch.neg(dev(a).t()), torch.neg(a.t()))
    out = torch.empty(5, 7, dtype=dtype, device="ocl")
    torch.neg(dev(a), out=out)
    check(out, -a)
    x = dev(a)
    x.neg_()
    check(x, -a)


def test_fill_and_zero():
    x = torch.empty(4, 5, device="ocl")
    x.fill_(2.5)
    check(x, torch.full((4, 5), 2.5))
    x[:, ::2].fill_(-1)
    ref = torch.full((4, 5), 2.5)
    ref[:, ::2] = -1
    check(x, ref)
    x.t()[1].zero_()
    ref.t()[1] = 0
    check(x, ref)
    x.fill_(torch.tensor(7.0))
    check(x, torch.full((4, 5), 7.0))
    x.fill_(torch.tensor(3.0, device="ocl"))
    check(x, torch.full((4, 5), 3.0))
    for dtype, v in ((torch.int64, (1 << 40) + 1), (torch.int32, -5), (torch.bool, True), (torch.float64, 1 / 3),
                     (torch.float16, 0.1), (torch.int8, -7), (torch.uint8, 200)):
        check(torch.full((3,), v, dtype=dtype, device="ocl"), torch.full((3,), v, dtype=dtype))
        check(torch.zeros(3, dtype=dtype, device="ocl"), torch.zeros(3, dtype=dtype))
        check(torch.ones(2, 2, dtype=dtype, device="ocl"), torch.ones(2, 2, dtype=dtype))


# ---------------------------------------------------------------------------------------
# autograd and printing


def test_backward_matches_cpu():
    torch.manual_seed(0)
    a_cpu = torch.randn(5, 5, requires_grad=True)
    b_cpu = torch.randn(5, 1, requires_grad=True)
    a_dev = a_cpu.detach().to("ocl").requires_grad_()
    b_dev = b_cpu.detach().to("ocl").requires_grad_()

    def f(a, b):
        return ((a + b * 2 - a / 3) * a - b).sum() + (a * 0.5).mean()

    f(a_cpu, b_cpu).backward()
    f(a_dev, b_dev).backward()
    assert a_dev.grad.device.type == "ocl" and b_dev.grad.device.type == "ocl"
    assert_close(a_dev.grad.cpu(), a_cpu.grad)
    assert_close(b_dev.grad.cpu(), b_cpu.grad)


def test_backward_sum_dims_and_accumulation():
    a_cpu = torch.randn(4, 6, requires_grad=True)
    a_dev = a_cpu.detach().to("ocl").requires_grad_()
    for a in (a_cpu, a_dev):
        (a.sum(0) * 3).sum().backward()
        (a.sum(1, keepdim=True) / 2).sum().backward()  # gradients accumulate
    assert_close(a_dev.grad.cpu(), a_cpu.grad)


def test_issue_example_in_process():
    x1_cpu = torch.randn(5, 5, requires_grad=True)
    x1 = x1_cpu.detach().to("ocl").requires_grad_()
    x2 = torch.ones(5, 5).to("ocl:0")
    y = (x1 + x2 * 2 - x1 / 3).sum()
    y.backward()
    y_cpu = (x1_cpu + torch.ones(5, 5) * 2 - x1_cpu / 3).sum()
    y_cpu.backward()
    assert_close(y.detach().cpu(), y_cpu.detach())
    assert_close(x1.grad.cpu(), x1_cpu.grad)


def test_printing():
    cpu = torch.tensor([[1.5, -2.0], [0.25, 3.0]])
    d = dev(cpu)
    text = repr(d)
    assert "device='ocl:0'" in text
    assert " ".join(text.replace(", device='ocl:0'", "").split()) == " ".join(repr(cpu).split())
    assert "device='ocl:0'" in str(d)
    g = d.clone().requires_grad_()
    assert "requires_grad=True" in repr(g)
    assert "grad_fn=<AddBackward0>" in repr(g + 1)
    assert "device='ocl:0'" in repr(torch.tensor(3, device="ocl"))
    assert "device='ocl:0'" in repr(torch.empty(0, device="ocl"))
    big = torch.arange(3000, dtype=torch.float32)
    assert " ".join(repr(dev(big)).replace(", device='ocl:0'", "").split()) == " ".join(repr(big).split())
    assert "device='ocl:0'" in repr(dev(big))


def test_python_operator_module_dispatch():
    a, b = make((3, 3), torch.float32), make((3, 3), torch.float32, 1, nonzero=True)
    for fn in (operator.add, operator.sub, operator.mul, operator.truediv):
        check(fn(dev(a), dev(b)), fn(a, b))


@pytest.mark.parametrize("dtype,value", [(torch.float16, 70000.0), (torch.float16, -1e5), (torch.bfloat16, 1e39),
                                         (torch.uint8, 300), (torch.int8, 200), (torch.int32, 2 ** 40),
                                         (torch.float32, 1e300)],
                         ids=["f16-70000", "f16--1e5", "bf16-1e39", "u8-300", "i8-200", "i32-2^40", "f32-1e300"])
def test_fill_out_of_range_value_errors_like_cpu(dtype, value):
    with pytest.raises(RuntimeError, match="overflow") as cpu_err:
        torch.full((2,), value, dtype=dtype)
    with pytest.raises(RuntimeError, match="overflow") as ocl_err:
        torch.full((2,), value, dtype=dtype, device="ocl").cpu()
    assert str(ocl_err.value).split("\n")[0] == str(cpu_err.value).split("\n")[0]


# ---------------------------------------------------------------------------------------
# views, resize_, set_

VIEW_OPS = {
    "view": lambda t: t.view(20, 6),
    "reshape_non_contiguous": lambda t: t.transpose(0, 1).reshape(-1),
    "as_strided": lambda t: t.as_strided((3, 3), (7, 2), 5),
    "unsqueeze_squeeze": lambda t: t.unsqueeze(1).squeeze(1),
    "permute": lambda t: t.permute(2, 0, 1),
    "flatten": lambda t: t.flatten(1),
    "narrow": lambda t: t.narrow(2, 1, 3),
    "select": lambda t: t[2],
    "ellipsis": lambda t: t[..., 1],
    "none_index": lambda t: t[None, :, None],
    "negative_index_and_step": lambda t: t[-1, ::2, -3:],
    "chunk": lambda t: t.chunk(2, 1)[1],
    "split": lambda t: t.split(2, 2)[2],
    "unbind": lambda t: t.unbind(1)[3],
    "diagonal": lambda t: t.diagonal(0, 1, 2),
    "movedim": lambda t: t.movedim(0, 2),
    "expand": lambda t: t[:, :1].expand(4, 7, 6),
    "mT": lambda t: t.mT,
    "unflatten": lambda t: t.unflatten(2, (2, 3)),
    "unfold": lambda t: t.unfold(2, 2, 2),
    "view_dtype": lambda t: t.view(torch.int32),
    "index_0dim_tensor": lambda t: t[torch.tensor(1)],
    "detach": lambda t: t.detach(),
}


@pytest.mark.parametrize("name", list(VIEW_OPS))
def test_view_ops(name):
    a = torch.arange(120, dtype=torch.float32).reshape(4, 5, 6)
    d = dev(a)
    v = VIEW_OPS[name](d)
    check(v, VIEW_OPS[name](a))
    if name == "reshape_non_contiguous":
        return  # a copy, not a view
    assert v.untyped_storage().data_ptr() == d.untyped_storage().data_ptr()
    # writes through the view reach the base
    if v.dtype == torch.float32 and name != "expand":
        v.fill_(-1)
        ref = a.clone()
        VIEW_OPS[name](ref).fill_(-1)
        check(d, ref)


def test_resize_keeps_data_and_grows():
    x = dev(torch.tensor([1.0, 2.0, 3.0]))
    x.resize_(1000)
    assert x.shape == (1000,)
    check(x[:3], torch.tensor([1.0, 2.0, 3.0]))
    x[3:] = 5.0
    x.resize_(2)
    check(x, torch.tensor([1.0, 2.0]))
    x.resize_(2, 3)
    assert x.shape == (2, 3)
    check(x.flatten()[:2], torch.tensor([1.0, 2.0]))
    e = torch.empty(0, device="ocl")
    e.resize_(4, 5).fill_(2.0)
    check(e, torch.full((4, 5), 2.0))


def test_set_storage_and_tensor():
    base = dev(torch.arange(10, dtype=torch.float32))
    y = torch.empty(0, device="ocl")
    y.set_(base.untyped_storage(), 2, (2, 3), (3, 1))
    check(y, torch.arange(10, dtype=torch.float32).as_strided((2, 3), (3, 1), 2))
    z = torch.empty(0, device="ocl")
    z.set_(base)
    check(z, torch.arange(10, dtype=torch.float32))
    z.fill_(0)
    check(base, torch.zeros(10))
    w = torch.empty(0, device="ocl")
    w.set_(base.untyped_storage())
    assert w.shape == (10,)
    empty = dev(torch.ones(3))
    empty.set_()
    assert empty.numel() == 0


def test_high_rank_non_mergeable_elementwise_and_sum():
    a = torch.randn([2] * 10)
    b = torch.randn([2] * 10)
    perm = list(range(10))[::-1]
    check(dev(a) + dev(b).permute(perm), a + b.permute(perm))
    check(dev(a).permute(perm).sum(), a.permute(perm).sum(), rtol=1e-5, atol=1e-5)
    check(dev(a).permute(perm).sum((0, 1, 2)), a.permute(perm).sum((0, 1, 2)), rtol=1e-5, atol=1e-5)
