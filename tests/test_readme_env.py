"""The environment-variable table (docs/environment.md, linked from the README) names every PYTORCH_OCL_* variable
the code reads (C++, OpenCL C and Python sources), so a switch added to the code cannot stay undocumented."""
import os
import re

ROOT = os.path.join(os.path.dirname(__file__), "..")
NOT_VARIABLES = {"PYTORCH_OCL_TORCH_AT_LEAST"}  # a C++ macro (csrc/core/TorchCompat.h), not a variable


def names_in_code():
    found = set()
    for top in ("csrc", "dlprim", "python"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".cpp", ".h", ".cl", ".py")):
                    with open(os.path.join(d, f), errors="replace") as fh:
                        found.update(re.findall(r"PYTORCH_OCL_[A-Z0-9_]*[A-Z0-9]", fh.read()))
    return found - NOT_VARIABLES


def test_every_variable_is_in_the_environment_table():
    table = open(os.path.join(ROOT, "docs", "environment.md")).read()
    first_cells = re.findall(r"^\|([^|]*)\|", table, re.M)  # a row may name several related variables
    documented = {n for cell in first_cells for n in re.findall(r"`(PYTORCH_OCL_[A-Z0-9_]+)`", cell)}
    names = names_in_code()
    assert len(names) > 40, names
    missing = sorted(names - documented)
    assert not missing, f"read by the code but not in docs/environment.md: {missing}"
