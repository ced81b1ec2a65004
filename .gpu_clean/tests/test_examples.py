"""The examples in examples/ run (--quick, strict mode, no CPU fallback) and their checks pass."""
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, _base_env

EXAMPLES = {
    "custom_matmul.py": ["linear M=17 N=5 K=33 bias=True", "linear M=70 N=130 K=33 bias=False", "M=5 N=9 K=0",
                         "vs float64 CPU", "launched the kernel 9 times for 9 nn.Linear", "GPT logits", "GPT loss",
                         "GPT gradients"],
    "custom_conv2d.py": ["conv2d grid: 108 cases", "launched the kernel 8 times for 8 nn.Conv2d", "ResNet logits",
                         "ResNet gradients"],
}


@pytest.mark.parametrize("script", sorted(EXAMPLES))
def test_example_runs_and_its_checks_pass(script):
    proc = subprocess.run([sys.executable, os.path.join(REPO, "examples", script), "--quick", "--device", "ocl:0"],
                          env=_base_env({"PYTORCH_OCL_STRICT": "1"}), cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    out = proc.stdout
    assert proc.returncode == 0, f"{script} exited with {proc.returncode}\n{out}\n{proc.stderr}"
    checks = [line for line in out.splitlines() if line.startswith("check ")]
    assert checks and all(line.startswith("check OK") for line in checks), out
    for expected in EXAMPLES[script]:
        assert any(expected in line for line in checks), f"no check line for {expected!r}:\n{out}"
    assert re.search(r"custom/built-in = [0-9.]+x", out), out  # the timing comparison was printed
    assert "all checks passed" in out
