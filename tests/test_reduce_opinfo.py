"""OpInfo-driven checks of the reduction, scan and softmax ops against the CPU.

For every OpInfo entry of these ops (op_db filtered by name), up to MAX_SAMPLES sample inputs
are run on the CPU and on ocl: forward outputs are compared, and for float samples of ops
with autograd the gradients of every input (random upstream gradient, same on both sides).
Each sample also runs with non-contiguous inputs (noncontiguous_like). Strict mode is on, so
an op without an ocl kernel raises NotImplementedError naming it: when that op is not one of
ours (e.g. an elementwise op used by a backward formula) the pair is counted as "blocked"
and reported, not failed.

Run directly for a report: python3 tests/test_reduce_opinfo.py [--dtypes]
"""
import collections
import os
import re
import sys

os.environ.setdefault("PYTORCH_OCL_STRICT", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

import pytorch_ocl  # noqa: E402,F401
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402
from torch.testing._internal.common_utils import noncontiguous_like  # noqa: E402
from opinfo_compare import map_tensors, tensor_leaves  # noqa: E402

# (OpInfo name, variant) pairs under test; variants not listed are skipped.
OPS = [
    ("sum", ""), ("mean", ""), ("prod", ""), ("nansum", ""), ("nanmean", ""),
    ("amax", ""), ("amin", ""), ("max", "reduction_with_dim"), ("max", "reduction_no_dim"),
    ("min", "reduction_with_dim"), ("min", "reduction_no_dim"), ("argmax", ""), ("argmin", ""),
    ("aminmax", ""), ("any", ""), ("all", ""), ("count_nonzero", ""),
    ("var", ""), ("var", "unbiased"), ("std", ""), ("std", "unbiased"),
    ("var_mean", ""), ("var_mean", "unbiased"), ("std_mean", ""), ("std_mean", "unbiased"),
    ("linalg.vector_norm", ""), ("norm", ""), ("norm", "fro"), ("norm", "inf"), ("logsumexp", ""),
    ("cumsum", ""), ("cumprod", ""), ("cummax", ""), ("cummin", ""), ("logcumsumexp", ""),
    ("softmax", ""), ("softmax", "with_dtype"), ("log_softmax", ""), ("log_softmax", "with_dtype"),
    ("nn.functional.softmin", ""), ("_softmax_backward_data", ""),
]
# The aten ops this work implements: a strict-mode miss on one of these is a failure.
OUR_ATEN_OPS = re.compile(
    r"aten::(sum|mean|prod|nansum|amax|amin|max|min|argmax|argmin|aminmax|_aminmax|any|all|count_nonzero|"
    r"var|std|var_mean|std_mean|linalg_vector_norm|norm|logsumexp|cumsum|cumprod|_cummax_helper|"
    r"_cummin_helper|_logcumsumexp|_softmax|_log_softmax|_softmax_backward_data|_log_softmax_backward_data)\b"
)
MAX_SAMPLES = 12
OTHER_DTYPES = [torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int8, torch.uint8,
                torch.bool]
DEVICE = "ocl:0"


def _tolerance(dtype):
    if dtype in (torch.float16, torch.bfloat16):
        return dict(rtol=2e-2, atol=2e-2)
    if dtype == torch.float32:
        return dict(rtol=1.3e-5, atol=1e-4)
    return dict(rtol=1e-7, atol=1e-7) if dtype == torch.float64 else {}


def _to_device(obj, noncontig):
    def move(t):
        d = t.detach()
        d = noncontiguous_like(d) if noncontig and d.numel() > 1 else d
        d = d.to(DEVICE)
        return d.requires_grad_(t.requires_grad)

    return map_tensors(obj, move)


def _missing_op(err):
    m = re.search(r"'?(aten::[\w.]+)'?", str(err))
    return m.group(1) if m else "?"


class Outcome:
    PASS, FAIL, BLOCKED = "pass", "fail", "blocked"


def _classify_exception(e):
    """(outcome, detail) for an exception raised on the ocl side."""
    if isinstance(e, NotImplementedError):
        op = _missing_op(e)
        return (Outcome.FAIL if OUR_ATEN_OPS.match(op) else Outcome.BLOCKED), op
    return Outcome.FAIL, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"


def _run_sample(op, sample, dtype, noncontig, check_grad):
    """Returns (forward outcome, detail), (grad outcome or None, detail)."""
    args = (sample.input,) + tuple(sample.args)
    kwargs = dict(sample.kwargs)
    try:
        expected = op(*args, **kwargs)
    except Exception:  # the CPU rejects it too: not a meaningful pair
        return None, None
    dargs, dkwargs = _to_device(args, noncontig), _to_device(kwargs, noncontig)
    try:
        actual = op(*dargs, **dkwargs)
        actual_cpu = map_tensors(actual, lambda t: t.detach().cpu())
    except Exception as e:  # noqa: BLE001
        return _classify_exception(e), None
    try:
        torch.testing.assert_close(actual_cpu, map_tensors(expected, lambda t: t.detach()), equal_nan=True,
                                   check_device=False, **_tolerance(dtype))
        fwd = (Outcome.PASS, "")
    except AssertionError as e:
        return (Outcome.FAIL, "forward: " + str(e).replace("\n", " ")[:300]), None
    if not check_grad:
        return fwd, None
    outs = [t for t in tensor_leaves(expected) if t.is_floating_point() and t.requires_grad]
    douts = [t for t in tensor_leaves(actual) if t.is_floating_point() and t.requires_grad]
    ins = [t for t in tensor_leaves((args, kwargs)) if t.requires_grad]
    dins = [t for t in tensor_leaves((dargs, dkwargs)) if t.requires_grad]
    if not outs or not ins:
        return fwd, None
    gen = torch.Generator().manual_seed(0)
    gouts = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in outs]
    try:
        expected_g = torch.autograd.grad(outs, ins, gouts, allow_unused=True)
    except Exception:  # noqa: BLE001
        return fwd, None
    try:
        actual_g = torch.autograd.grad(douts, dins, [g.to(DEVICE) for g in gouts], allow_unused=True)
        actual_g = [g.cpu() if g is not None else None for g in actual_g]
    except Exception as e:  # noqa: BLE001
        return fwd, _classify_exception(e)
    try:
        for a, b in zip(actual_g, expected_g):
            if a is None or b is None:
                assert a is None and b is None, "one side has no gradient"
                continue
            torch.testing.assert_close(a, b, equal_nan=True, **_tolerance(dtype))
        return fwd, (Outcome.PASS, "")
    except AssertionError as e:
        return fwd, (Outcome.FAIL, "grad: " + str(e).replace("\n", " ")[:300])


def _opinfos():
    wanted = set(OPS)
    found = [op for op in op_db if (op.name, op.variant_test_name) in wanted]
    assert len(found) == len(wanted), sorted(wanted - {(o.name, o.variant_test_name) for o in found})
    return found


def run_op(op, dtype, max_samples=MAX_SAMPLES, grads=True):
    """Results [(kind, sample index, contiguity, outcome, detail)] of one OpInfo at one dtype."""
    results = []
    if dtype not in op.supported_dtypes("cpu"):
        return results
    requires_grad = grads and op.supports_autograd and dtype.is_floating_point
    samples = list(op.sample_inputs("cpu", dtype, requires_grad=requires_grad))[:max_samples]
    for i, sample in enumerate(samples):
        for noncontig in (False, True):
            fwd, grad = _run_sample(op, sample, dtype, noncontig, requires_grad)
            layout = "noncontig" if noncontig else "contig"
            if fwd is not None:
                results.append(("forward", i, layout) + tuple(fwd))
            if grad is not None:
                results.append(("grad", i, layout) + tuple(grad))
    return results


def _label(op):
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def summarize(all_results):
    """{(kind): Counter(outcome)} and blocked ops."""
    counts = collections.defaultdict(collections.Counter)
    blocked = collections.Counter()
    for (label, dtype), results in all_results.items():
        for kind, _, _, outcome, detail in results:
            counts[(kind, dtype)][outcome] += 1
            if outcome == Outcome.BLOCKED:
                blocked[detail] += 1
    return counts, blocked


_OPINFOS = {_label(op): op for op in _opinfos()}


@pytest.fixture(scope="module")
def float32_results():
    return {}


@pytest.mark.parametrize("label", sorted(_OPINFOS))
def test_opinfo_float32(label, float32_results):
    results = run_op(_OPINFOS[label], torch.float32)
    float32_results[label] = results
    failures = [r for r in results if r[3] == Outcome.FAIL]
    assert not failures, "\n".join(map(str, failures))


@pytest.mark.parametrize("label", sorted(_OPINFOS))
def test_opinfo_other_dtypes(label):
    """Forward only, fewer samples: every declared dtype the kernels support."""
    failures = []
    for dtype in OTHER_DTYPES:
        if dtype == torch.float64 and not torch.ocl.get_device_properties(0).fp64:
            continue
        for r in run_op(_OPINFOS[label], dtype, max_samples=4, grads=False):
            if r[3] == Outcome.FAIL:
                failures.append((dtype,) + r)
    assert not failures, "\n".join(map(str, failures))


def test_opinfo_float32_pass_rate(float32_results):
    """Forward (op, sample) pairs of float32 must pass at >= 95% (blocked pairs count as not passing)."""
    if len(float32_results) < len(_OPINFOS):
        pytest.skip("needs the float32 tests of this module in the same run")
    fwd = collections.Counter(r[3] for res in float32_results.values() for r in res if r[0] == "forward")
    total = sum(fwd.values())
    assert total > 0 and fwd[Outcome.PASS] / total >= 0.95, fwd


def main(argv):
    dtypes = [torch.float32] + (OTHER_DTYPES if "--dtypes" in argv else [])
    all_results = {}
    for label, op in sorted(_OPINFOS.items()):
        for dtype in dtypes:
            res = run_op(op, dtype, max_samples=MAX_SAMPLES if dtype == torch.float32 else 4,
                         grads=dtype == torch.float32)
            all_results[(label, dtype)] = res
            c = collections.Counter((r[0], r[3]) for r in res)
            print(f"{label:32s} {str(dtype):16s} " + " ".join(f"{k[0]}:{k[1]}={v}" for k, v in sorted(c.items())))
            for r in res:
                if r[3] != Outcome.PASS:
                    print("    ", r)
    counts, blocked = summarize(all_results)
    print("\nsummary:")
    for (kind, dtype), c in sorted(counts.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        total = sum(c.values())
        print(f"  {kind:8s} {str(dtype):16s} pass {c[Outcome.PASS]}/{total} = {c[Outcome.PASS] / total:.1%}"
              f"  fail {c[Outcome.FAIL]}  blocked {c[Outcome.BLOCKED]}")
    print("blocked by missing non-reduction ops:", dict(blocked))


if __name__ == "__main__":
    main(sys.argv[1:])


def test_reductions_of_broadcast_inputs():
    """Expanded (stride-0) inputs reduced over each dim: with a broadcast kept dim innermost, the CPU column
    kernel took the offsets 0 0 3 3 for a unit-stride run from their end points alone (the (2, 2)
    cosine_similarity of (1, 2, 3) and (2, 1, 3) inputs, op_db's sample 6, came out wrong)."""
    torch.manual_seed(0)
    x, y = torch.randn(1, 2, 3), torch.randn(2, 1, 3)
    inputs = [*torch.broadcast_tensors(x, y), torch.randn(3, 1, 6).expand(3, 5, 6), torch.randn(1, 4).expand(300, 4),
              torch.randn(7, 1).expand(7, 130)]
    fns = [lambda t, d: t.sum(d), lambda t, d: t.mean(d), lambda t, d: t.var(d), lambda t, d: t.amax(d),
           lambda t, d: t.prod(d), lambda t, d: t.logsumexp(d), lambda t, d: t.argmax(d),
           lambda t, d: torch.linalg.vector_norm(t, 2, d)]
    for t in inputs:
        for d in range(t.dim()):
            for fn in fns:
                torch.testing.assert_close(fn(t.to("ocl"), d).cpu(), fn(t, d), rtol=1e-5, atol=1e-5)
    cos = torch.nn.functional.cosine_similarity
    torch.testing.assert_close(cos(x.to("ocl"), y.to("ocl"), dim=-1).cpu(), cos(x, y, dim=-1))
