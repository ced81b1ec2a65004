"""OpInfo-driven check of the pointwise families on ocl against the CPU (forward; gradients and
non-contiguous samples in float32). Strict mode: a CPU fallback fails the sample.

The pass rate over (op, sample) pairs is printed at the end of the module, per dtype;
benchmarks/opinfo_coverage.py writes the same table to results/opinfo_pointwise.md.
"""
import collections

import pytest
import torch

import pointwise_opinfo as P

# Samples that fail for a reason outside the pointwise kernels, with that reason.
KNOWN_FAILURES = {
    # masked_fill's gradient for a tensor `value` is grad.masked_select(mask).sum(): masked_select
    # (a data-dependent gather) is an indexing op, not part of the pointwise table.
    "masked_fill": "masked_select",
}

RESULTS = collections.defaultdict(list)  # dtype name -> [(op id, sample label, error or None)]
CASES = P.cases()


@pytest.fixture(scope="module", autouse=True)
def _summary(request):
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or not RESULTS:
        return
    lines = ["", "OpInfo pointwise pass rate (strict, (op, sample) pairs):"]
    for dtype, rows in sorted(RESULTS.items()):
        passed = sum(1 for r in rows if r[2] is None)
        lines.append(f"  {dtype:>14}: {passed}/{len(rows)} = {100.0 * passed / len(rows):.1f}%")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled():  # teardown output is captured otherwise
        for line in lines:
            reporter.write_line(line)


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{P.opinfo_id(op)}-{str(dt)[6:]}" for op, dt in CASES])
def test_opinfo(op, dtype):
    results = P.run_case(op, dtype)
    RESULTS[str(dtype)[6:]].extend((P.opinfo_id(op), label, err) for label, err in results)
    failures = [(label, err) for label, err in results if err]
    known = KNOWN_FAILURES.get(op.name)
    unexpected = [f for f in failures if not (known and known in f[1])]
    assert not unexpected, "\n".join(f"{label}: {err}" for label, err in unexpected)
    if failures:
        pytest.xfail(f"{len(failures)} sample(s) need {known}")
