"""pytorch_ocl.Kernel: user OpenCL C on ocl tensors, checked against the CPU."""
import pytest
import torch
from torch.testing import assert_close

import pytorch_ocl
from pytorch_ocl import Kernel, LocalMemory, float32, float64, int32, int64, uint8

AXPY = """
__kernel void axpy(__global float* y, ulong y_off, __global const float* x, ulong x_off, float a, int n) {
    int i = get_global_id(0);
    if (i < n) y[y_off + i] += a * x[x_off + i];
}
"""

# Sums each work-group's slice in local memory: exercises LocalMemory and local_size.
BLOCK_SUM = """
__kernel void block_sum(__global float* out, ulong out_off, __global const float* x, ulong x_off,
                        __local float* tmp, long n) {
    size_t lid = get_local_id(0), gid = get_global_id(0), L = get_local_size(0);
    tmp[lid] = gid < n ? x[x_off + gid] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = L / 2; s > 0; s >>= 1) {
        if (lid < s) tmp[lid] += tmp[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) out[out_off + get_group_id(0)] = tmp[0];
}
"""

TYPED = """
__kernel void typed(__global double* out, ulong o, char a, uchar b, long c, double d, int e) {
    out[o + 0] = a; out[o + 1] = b; out[o + 2] = c; out[o + 3] = d; out[o + 4] = e;
}
"""


def test_axpy_matches_cpu():
    x, y = torch.randn(1000), torch.randn(1000)
    xo, yo = x.to("ocl"), y.to("ocl")
    Kernel(AXPY, "axpy")(yo, xo, 2.5, 1000, global_size=1024, local_size=64)
    assert_close(yo.cpu(), y + 2.5 * x)


def test_views_pass_their_element_offset():
    base = torch.randn(3, 500)
    b = base.to("ocl")
    y = torch.zeros(500, device="ocl")
    Kernel(AXPY, "axpy")(y, b[2], float32(1.0), int32(500), global_size=500)
    assert_close(y.cpu(), base[2])


def test_local_memory_and_groups():
    x = torch.randn(64 * 10)
    out = torch.empty(10, device="ocl")
    Kernel(BLOCK_SUM, "block_sum")(out, x.to("ocl"), LocalMemory(64 * 4), int64(x.numel()),
                                   global_size=640, local_size=64)
    assert_close(out.cpu(), x.view(10, 64).sum(1), rtol=1e-5, atol=1e-5)


def test_typed_scalars():
    out = torch.zeros(5, dtype=torch.float64, device="ocl")
    Kernel(TYPED, "typed")(out, pytorch_ocl.int8(-3), uint8(200), int64(2**40), float64(0.1), int32(-7),
                           global_size=1)
    assert out.cpu().tolist() == [-3.0, 200.0, float(2**40), 0.1, -7.0]


def test_typed_scalar_range_errors():
    with pytest.raises(TypeError, match="uchar"):
        uint8(300)
    with pytest.raises(TypeError, match="int"):
        Kernel(AXPY, "axpy")(torch.zeros(1, device="ocl"), torch.zeros(1, device="ocl"), 1.0, 2**40, global_size=1)


def test_launch_is_ordered_on_the_stream():
    y = torch.zeros(256, device="ocl")
    x = torch.ones(256, device="ocl")
    k = Kernel(AXPY, "axpy")
    for _ in range(10):
        k(y, x, 1.0, 256, global_size=256)
    y.add_(1)  # a built-in op after the user kernels sees their results
    assert_close(y.cpu(), torch.full((256,), 11.0))


def test_cpu_tensor_is_rejected():
    with pytest.raises(TypeError, match="argument 0 is a tensor on cpu"):
        Kernel(AXPY, "axpy")(torch.zeros(4), torch.zeros(4, device="ocl"), 1.0, 4, global_size=4)


def test_non_contiguous_needs_opt_in():
    x = torch.randn(8, 8, device="ocl").t()
    with pytest.raises(ValueError, match="not contiguous"):
        Kernel(AXPY, "axpy")(torch.zeros(64, device="ocl"), x, 1.0, 64, global_size=64)
    y = torch.zeros(64, device="ocl")
    Kernel(AXPY, "axpy", strided=True)(y, x, 1.0, 64, global_size=64)  # reads storage order
    assert_close(y.cpu(), x.cpu().t().reshape(-1))


def test_bad_argument_types():
    k = Kernel(AXPY, "axpy")
    with pytest.raises(TypeError, match="unsupported type"):
        k("text", global_size=1)
    with pytest.raises(TypeError, match="bool"):
        k(True, global_size=1)
    with pytest.raises(ValueError, match="global_size"):
        k(torch.zeros(1, device="ocl"), torch.zeros(1, device="ocl"), 1.0, 1, global_size=(1, 2, 3, 4))
    with pytest.raises(RuntimeError, match="not a multiple of local_size"):
        k(torch.zeros(1, device="ocl"), torch.zeros(1, device="ocl"), 1.0, 1, global_size=10, local_size=4)


def test_wrong_argument_count_is_reported():
    with pytest.raises(RuntimeError, match="axpy"):
        Kernel(AXPY, "axpy")(torch.zeros(4, device="ocl"), global_size=4)


def test_build_failure_shows_build_log():
    with pytest.raises(RuntimeError) as e:
        Kernel("__kernel void broken(__global float* x) { x[0] = undefined_name; }", "broken").build()
    msg = str(e.value)
    assert "Build log" in msg and "undefined_name" in msg


def test_unknown_kernel_name():
    with pytest.raises(RuntimeError, match="no_such_kernel"):
        Kernel(AXPY, "no_such_kernel").build()


def test_build_options():
    src = "__kernel void fill(__global float* y, ulong o) { y[o + get_global_id(0)] = VALUE; }"
    y = torch.zeros(8, device="ocl")
    Kernel(src, "fill", options="-DVALUE=4.5f")(y, global_size=8)
    assert_close(y.cpu(), torch.full((8,), 4.5))


def test_device_argument_mismatch():
    k = Kernel(AXPY, "axpy")
    with pytest.raises(ValueError, match="ocl device"):
        k(torch.zeros(1, device="ocl"), torch.zeros(1, device="ocl"), 1.0, 1, global_size=1, device="cpu")
