"""op_db samples of the integer and bool paths against the CPU, strict mode (issue 17's other dtypes):
matrix products in integer dtypes (dlprim's small GEMM in the integer type, wrapping as the CPU's), angle of
integers, tril/triu_indices, integer max pooling and int64 average pooling, int64 convolutions (ConvInteger.cpp),
uint8 upsampling (nearest; bilinear / bicubic, antialiased too, bit-exact with the CPU's fixed-point passes), addr and F.unfold of bool; on the samples as given and on non-contiguous (transposed)
copies, plus hand-made corners (wrap-around, alpha/beta truncation, out=, errors) and the dtype of 16-bit batch
norm statistics."""
import os

os.environ.setdefault("PYTORCH_OCL_STRICT", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

import pytorch_ocl  # noqa: E402,F401
from opinfo_compare import opinfo_params, sample_failures, transposed_matrices  # noqa: E402

# op names -> the dtypes they are checked in (each op and dtype is a program build, ~1 s on PoCL)
CASES = {
    "mm addmm bmm baddbmm addbmm addmv mv dot vdot addr matmul einsum inner tensordot nn.functional.linear":
        (torch.int64,),
    "mm addmm bmm addr": (torch.int32, torch.uint8, torch.int8, torch.int16),
    "angle": (torch.int64, torch.bool),
    "tril_indices triu_indices": (torch.int64, torch.int32),
    "nn.functional.max_pool2d nn.functional.max_pool3d": (torch.int32, torch.uint8),
    "nn.functional.avg_pool1d nn.functional.avg_pool2d nn.functional.avg_pool3d": (torch.int64,),
    "nn.functional.conv1d nn.functional.conv2d nn.functional.conv3d nn.functional.conv_transpose1d "
    "nn.functional.conv_transpose2d nn.functional.conv_transpose3d": (torch.int64,),
    "nn.functional.interpolate nn.functional.upsample_bilinear _upsample_bilinear2d_aa": (torch.uint8,),
    "nn.functional.unfold": (torch.bool,),
}
# uint8 interpolation: the modes the CPU has in uint8 (linear, trilinear and area raise there)
VARIANTS = {"nn.functional.interpolate": {"nearest", "nearest-exact", "bilinear", "bicubic"}}
MAX_SAMPLES = 2


def _cases():
    return [p for names, dtypes in CASES.items() for p in opinfo_params(names.split(), dtypes, VARIANTS)]


@pytest.mark.parametrize("op,dtype", _cases())
def test_dtype_opinfo(op, dtype):
    failures = sample_failures(op, dtype, False, MAX_SAMPLES, None, transform=transposed_matrices)
    assert not failures, "\n".join(failures)


def test_bool_addr_and_unfold():
    """addr of bool is ATen's logical form (op_db has no bool addr samples); F.unfold moves bool elements."""
    v1, v2, s = torch.tensor([True, False, True]), torch.tensor([False, True]), torch.tensor([[True], [False], [False]])
    for beta, alpha in ((True, True), (False, True), (True, False)):
        got = torch.addr(s.to("ocl"), v1.to("ocl"), v2.to("ocl"), beta=beta, alpha=alpha).cpu()
        assert torch.equal(got, torch.addr(s, v1, v2, beta=beta, alpha=alpha))
    x = torch.rand(2, 3, 5, 4) > 0.5
    f = torch.nn.functional.unfold
    assert torch.equal(f(x.to("ocl"), 2, padding=1, stride=(2, 1)).cpu(), f(x, 2, padding=1, stride=(2, 1)))


def test_integer_matmul_corners():
    """Products that wrap around, alpha/beta truncated to integers as on the CPU, out= and transposed
    operands, an empty K, bool refused, float alpha refused by addr."""
    close = torch.testing.assert_close
    a = torch.randint(-2**40, 2**40, (6, 9), dtype=torch.int64)
    b = torch.randint(-2**40, 2**40, (9, 5), dtype=torch.int64)
    c = torch.randint(-100, 100, (6, 5), dtype=torch.int64)
    ao, bo, co = a.to("ocl"), b.to("ocl"), c.to("ocl")
    close((ao @ bo).cpu(), a @ b)  # int64 overflow wraps identically
    close(torch.addmm(co, ao, bo, beta=3, alpha=-2).cpu(), torch.addmm(c, a, b, beta=3, alpha=-2))
    close(torch.addmm(co, ao, bo, beta=0.5, alpha=1.5).cpu(), torch.addmm(c, a, b, beta=0.5, alpha=1.5))
    out = torch.empty(5, 6, dtype=torch.int64, device="ocl").t()
    torch.mm(ao.t().contiguous().t(), bo, out=out)
    close(out.cpu(), a @ b)
    close(torch.mm(ao[:, :0], bo[:0]).cpu(), torch.zeros(6, 5, dtype=torch.int64))
    u = torch.randint(0, 256, (4, 7), dtype=torch.uint8)
    close((u.to("ocl") @ u.t().to("ocl")).cpu(), u @ u.t())  # uint8 wraps mod 256
    with pytest.raises((TypeError, RuntimeError, NotImplementedError)):
        torch.mm(ao.bool(), bo.bool())
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        torch.addr(co, ao[:, 0], bo[0], alpha=1.5)
    with pytest.raises(RuntimeError, match="row must be non-negative"):
        torch.tril_indices(-1, 3, device="ocl")
    with pytest.raises(NotImplementedError):
        torch.triu_indices(3, 3, dtype=torch.float32, device="ocl")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_batch_norm_saved_stats_dtype(dtype):
    """16-bit batch norm saves its statistics in the input dtype, or float32 with float32 parameters (mixed), as the
    CPU and CUDA do; the backward reads either."""
    x = torch.randn(4, 3, 5, dtype=dtype)
    for pdt in (dtype, torch.float32):
        w, b, rm, rv = torch.rand(3, dtype=pdt) + 0.5, torch.randn(3, dtype=pdt), torch.zeros(3, dtype=pdt), \
            torch.ones(3, dtype=pdt)
        for training in (True, False):
            args = [t.to("ocl") for t in (x, w, b, rm.clone(), rv.clone())]
            got = torch.native_batch_norm(*args, training, 0.1, 1e-5)
            exp = torch.native_batch_norm(x, w, b, rm.clone(), rv.clone(), training, 0.1, 1e-5)
            assert [t.dtype for t in got] == [t.dtype for t in exp]
            for g, e in zip(got, exp):
                torch.testing.assert_close(g.cpu(), e, rtol=2e-2, atol=2e-2)
    # the 16-bit saved statistics feed the backward
    g = torch.randn(4, 3, 5, dtype=dtype)
    xc, xo = x.clone().requires_grad_(), x.to("ocl").requires_grad_()
    (torch.nn.functional.batch_norm(xc, None, None, training=True) * g).sum().backward()
    (torch.nn.functional.batch_norm(xo, None, None, training=True) * g.to("ocl")).sum().backward()
    torch.testing.assert_close(xo.grad.cpu(), xc.grad, rtol=3e-2, atol=3e-2)
