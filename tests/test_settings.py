"""Numeric PYTORCH_OCL_* settings (dlprim's env_int): a malformed or out-of-range value is an error naming the
setting, never a silent default: raised by the first op that reads it, or, for the settings build threads read, by
the device's first use (test_gemm_engine_tuning.py covers PYTORCH_OCL_SPLIT_WAVES and PYTORCH_OCL_WGMMA_MARGIN)."""
import pytest

from conftest import run_python

OPS = {
    # depthwise convolution: outputs per work-item
    "PYTORCH_OCL_DW_VW": """
        x = torch.randn(2, 4, 9, 9, device="ocl")
        torch.nn.functional.conv2d(x, torch.randn(4, 1, 3, 3, device="ocl"), groups=4).cpu()
    """,
    # a multi-tensor (foreach) launch's tensors
    "PYTORCH_OCL_MULTI_SLOTS": """
        ts = [torch.randn(5, device="ocl") for _ in range(3)]
        torch._foreach_add_(ts, 1.0)
        ts[0].cpu()
    """,
    # the fused LSTM step's K-slices (the fused path forced: CPU devices run a GEMM and a cell launch per step)
    "PYTORCH_OCL_RNN_KSPLIT": """
        lstm = torch.nn.LSTM(8, 16).to("ocl")
        lstm(torch.randn(3, 2, 8, device="ocl"))[0].cpu()
    """,
    # read on build threads: checked when the device's context is made
    "PYTORCH_OCL_BUILD_THREADS": """
        torch.ones(3, device="ocl").cpu()
    """,
}


def script(name):
    """The op of `name` in a try block: prints the error, or "no error"."""
    body = "\n".join("    " + ln.strip() for ln in OPS[name].strip().splitlines())
    return f"import torch, pytorch_ocl\ntry:\n{body}\n    print('no error')\nexcept RuntimeError as e:\n    print('ERROR', e)\n"


@pytest.mark.parametrize("value", ["many", "0", "-2", "4.5"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_malformed_setting_is_an_error(name, value):
    out = run_python(script(name), env={name: value, "PYTORCH_OCL_LSTM_FUSED": "1"}).stdout
    assert "ERROR" in out and name in out and f"'{value}'" in out, out


@pytest.mark.parametrize("name", sorted(OPS))
def test_valid_setting_runs(name):
    out = run_python(script(name), env={name: "2", "PYTORCH_OCL_LSTM_FUSED": "1"}).stdout
    assert "no error" in out, out


@pytest.mark.parametrize("value", ["many", "-2"])
def test_malformed_build_processes_is_an_error(value):
    out = run_python(script("PYTORCH_OCL_BUILD_THREADS"), env={"PYTORCH_OCL_BUILD_PROCESSES": value}).stdout
    assert "ERROR" in out and "PYTORCH_OCL_BUILD_PROCESSES" in out and f"'{value}'" in out, out
