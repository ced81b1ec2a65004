"""The README's list of what runs natively tells the truth: every operator it names has an ocl kernel
in the dispatcher (`python -m pytorch_ocl --ops`) or is a composite of such kernels."""
import os
import re
import subprocess
import sys

import torch

import pytorch_ocl.__main__ as cli

README = os.path.join(os.path.dirname(__file__), "..", "README.md")
NOT_OPS = {"non_blocking"}  # backticked words in the section that are not operator names


def named_ops():
    text = open(README).read()
    section = text[text.index("What runs natively"):text.index("### `torch.ocl`")]
    return sorted({w for w in re.findall(r"`([^`]+)`", section) if re.fullmatch(r"[a-z_][a-z0-9_]*", w)} - NOT_OPS)


def test_every_named_operator_has_an_ocl_kernel():
    native = set(cli.native_ops())
    assert len(native) > 300
    def composite(op):
        try:
            return torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{op}", "CompositeImplicitAutograd")
        except RuntimeError:  # no such operator
            return False

    missing = [op for op in named_ops() if op not in native and not composite(op)]
    assert not missing, f"README names operators without an ocl kernel: {missing}"


def test_ops_flag_lists_them():
    proc = subprocess.run([sys.executable, "-m", "pytorch_ocl", "--ops"], capture_output=True, text=True, check=True)
    listed = proc.stdout.split()
    assert "mm" in listed and "_scaled_dot_product_fused_attention_overrideable" in listed
    assert listed == sorted(listed) and "aten operators with an ocl kernel" in proc.stderr
