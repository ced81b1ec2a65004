"""OpInfo yardstick shared by the op-family tests: runs the samples of PyTorch's OpInfo entries
on ocl and on the CPU and compares them. `python tests/opinfo_compare.py NAME...` prints the
pass rate of the named ops (forward; input gradients for float32), with up to
--max-samples=N samples per dtype (default 200); the tests use the first 20."""
import re
import sys

import torch
from torch.testing import assert_close

import pytorch_ocl  # noqa: F401  (registers the device before torch.testing._internal is imported)


def _to_ocl(x):
    return x.to("ocl") if isinstance(x, torch.Tensor) else x


def _factory_kwargs(kwargs):
    """Factory samples name the device in kwargs: point them at ocl."""
    return {k: ("ocl" if k == "device" else v) for k, v in kwargs.items()}


def missing_foreign_op(exc, foreign):
    """The name of the missing operator when `exc` is a strict-mode refusal of an operator in
    `foreign` (base names of ops another op family implements), else None."""
    m = re.search(r"operator 'aten::([a-zA-Z0-9_]+)", str(exc))
    if isinstance(exc, NotImplementedError) and m and m.group(1) in foreign:
        return m.group(1)
    return None


def map_tensors(obj, fn):
    """`obj` (tensors nested in lists, tuples, named tuples and dicts) with fn applied to every tensor."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, (list, tuple)):
        items = [map_tensors(o, fn) for o in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, dict):
        return {k: map_tensors(v, fn) for k, v in obj.items()}
    return obj


def tensor_leaves(obj):
    """The tensors of `obj` in map_tensors' order."""
    out = []
    map_tensors(obj, lambda t: out.append(t) or t)
    return out


def transposed_matrices(t):
    """A non-contiguous copy of `t` with its values (the last two dims stored transposed); arguments that are not
    matrices as they are. For `sample.transform`."""
    if not isinstance(t, torch.Tensor) or t.dim() < 2:
        return t
    return t.detach().transpose(-1, -2).contiguous().transpose(-1, -2).requires_grad_(t.requires_grad)


def transposed_copy(t):
    """A non-contiguous copy of complex matrix `t` with its values (the last two dims stored
    transposed; `.to` keeps those strides, where it would make a gapped tensor contiguous); other
    arguments as they are. For `sample.transform`."""
    return transposed_matrices(t) if isinstance(t, torch.Tensor) and t.is_complex() else t


def _tensors(tree):
    return [t for t in torch.utils._pytree.tree_leaves(tree) if isinstance(t, torch.Tensor)]


# Ops whose index outputs may order ties differently from the CPU (unstable sorts): their
# indices are checked by gathering the input, not compared.
TIE_ORDER_FREE = {"sort", "argsort", "msort", "topk"}
# Ops whose vector outputs are unique only up to a sign (complex: a unit phase) per column: their
# outputs are compared, and differentiated, through the sample's output_process_fn_grad, which
# the OpInfos define as sign/phase-invariant functions of them (|V|, U @ Vh, ...). linalg.eig's
# (eigenvalues, |V|) also assumes LAPACK's eigenvalue order, which the op_db samples get.
PHASE_FREE = {"linalg.eigh", "linalg.svd", "svd", "svd_lowrank", "pca_lowrank", "linalg.eig"}


def _sort_dim(op_name, sample):
    if "dim" in sample.kwargs:
        return sample.kwargs["dim"]
    pos = 1 if op_name == "topk" else 0
    args = [a for a in sample.args if isinstance(a, int) and not isinstance(a, bool)]
    return args[pos] if len(args) > pos else -1


def _check_tie_free_indices(op_name, sample, o, r, ref_values):
    x = sample.input.detach()
    if x.dim() == 0:
        assert torch.equal(o.cpu(), r)
        return
    dim = _sort_dim(op_name, sample)
    expected = x.gather(dim, r) if ref_values is None else ref_values.detach()
    assert_close(x.gather(dim, o.cpu()), expected, equal_nan=True, rtol=0, atol=0)


def _check_sample(op, sample, compare, grad, tol=None, grad_tol=None):
    """Raises when ocl disagrees with the CPU on one sample; returns False when nothing ran on ocl.
    `grad_tol`: {dtype: dict(rtol=, atol=)} for the input gradients (default: torch's)."""
    from torch.utils._pytree import tree_map
    args = tree_map(_to_ocl, (sample.input, sample.args, _factory_kwargs(sample.kwargs)))
    if grad:
        args = tree_map(lambda t: t.detach().requires_grad_() if isinstance(t, torch.Tensor) and t.requires_grad
                        else t, args)
    try:
        ref = op(sample.input, *sample.args, **sample.kwargs)
    except Exception as cpu_error:  # noqa: BLE001 - the CPU refuses: ocl must refuse too
        try:
            op(args[0], *args[1], **args[2])
        except Exception:  # noqa: BLE001
            return True
        raise AssertionError(f"the CPU raised {type(cpu_error).__name__} ({cpu_error}) but ocl did not")
    out = op(args[0], *args[1], **args[2])
    if isinstance(out, torch.Tensor) and out.device.type == "cpu":
        return False  # a factory sample without a device argument: nothing ran on ocl
    if op.name in PHASE_FREE:
        ref, out = sample.output_process_fn_grad(ref), sample.output_process_fn_grad(out)
    outs, refs = _tensors(out), _tensors(ref)
    assert len(outs) == len(refs), f"{len(outs)} outputs, expected {len(refs)}"
    for k, (o, r) in enumerate(zip(outs, refs)):
        assert o.device.type == "ocl" and o.shape == r.shape and o.dtype == r.dtype, (
            f"got {o.device} {o.dtype} {tuple(o.shape)}, expected {r.dtype} {tuple(r.shape)}")
        if compare and op.name in TIE_ORDER_FREE and r.dtype == torch.int64 and sample.input.dtype != torch.int64 \
                or compare and op.name in TIE_ORDER_FREE and k == len(refs) - 1 and len(refs) > 1:
            _check_tie_free_indices(op.name, sample, o, r, refs[0] if len(refs) > 1 else None)
        elif compare and op.name == "argsort":
            _check_tie_free_indices(op.name, sample, o, r, None)
        elif compare:
            assert_close(o.cpu(), r.detach(), equal_nan=True, **((tol or {}).get(r.dtype, {})))
    if grad and compare and any(r.layout == torch.sparse_coo for r in refs):
        # torch.randn_like has no sparse COO kernel: differentiate the sample's dense view of the outputs
        # (op_db's to_sparse samples give to_dense as output_process_fn_grad).
        outs, refs = _tensors(sample.output_process_fn_grad(out)), _tensors(sample.output_process_fn_grad(ref))
    if grad and compare:
        leaves_cpu = [t for t in _tensors((sample.input, sample.args, sample.kwargs)) if t.requires_grad]
        leaves_ocl = [t for t in _tensors(args) if t.requires_grad]
        pairs = [(o, r) for o, r in zip(outs, refs) if r.requires_grad]
        if leaves_cpu and pairs:
            gs = [torch.randn_like(r.detach()) for _, r in pairs]
            try:
                gc = torch.autograd.grad([r for _, r in pairs], leaves_cpu, gs, allow_unused=True)
            except Exception:  # noqa: BLE001 - no CPU gradient to compare with (a torch limitation)
                return True
            go = torch.autograd.grad([o for o, _ in pairs], leaves_ocl, [g.to("ocl") for g in gs],
                                     allow_unused=True)
            for x, y in zip(go, gc):
                if y is not None:
                    assert_close(x.cpu(), y, equal_nan=True, **((grad_tol or {}).get(y.dtype, {})))
    return True


def sample_failures(op, dtype, grad, max_samples, tol, grad_tol=None, transform=transposed_copy, seed=None):
    """The first `max_samples` op_db samples of `op` in `dtype`, each as given and through `transform`
    (non-contiguous), checked against the CPU: one message per failing (sample, variant). `seed`: reseeded
    before each check (ops that draw random numbers, e.g. the lowrank ones)."""
    failures = []
    for i, sample in enumerate(op.sample_inputs("cpu", dtype, requires_grad=grad)):
        if i >= max_samples:
            break
        for variant in ("as given", "non-contiguous"):
            s = sample if variant == "as given" else sample.transform(transform)
            try:
                if seed is not None:
                    torch.manual_seed(seed)
                assert _check_sample(op, s, True, grad, tol, grad_tol)
            except Exception as e:  # noqa: BLE001 - collected and reported
                # the first lines of an assert_close message hold the mismatch counts and the greatest differences
                detail = " | ".join(line.strip() for line in str(e).splitlines()[:4] if line.strip())
                failures.append(f"sample {i} {variant}: {type(e).__name__}: {detail[:400]}")
    return failures


def run_opinfo(op, dtypes, compare=True, check_grad=True, max_samples=20, foreign=(), blocked=None, tol=None,
               sample_filter=None):
    """(passed count, [failure messages]) over the samples of `op` in `dtypes`: forward vs the
    CPU (errors included: where the CPU raises, ocl must raise), and the input gradients for
    float32 samples when the op supports autograd. Samples that stop at a missing operator of
    `foreign` go to `blocked` instead of the failures. `tol`: {dtype: dict(rtol=, atol=)}.
    `sample_filter(dtype, sample)`: run only the samples (of the first max_samples) it accepts."""
    passed, failures = 0, []
    for dtype in dtypes:
        if dtype not in op.supported_dtypes("cpu"):
            continue
        grad = check_grad and dtype == torch.float32 and op.supports_autograd
        for i, sample in enumerate(op.sample_inputs("cpu", dtype, requires_grad=grad)):
            if i >= max_samples:
                break
            if sample_filter is not None and not sample_filter(dtype, sample):
                continue
            try:
                if _check_sample(op, sample, compare, grad, tol):
                    passed += 1
            except Exception as e:  # noqa: BLE001 - collected and reported
                if blocked is not None and missing_foreign_op(e, foreign):
                    blocked.append(missing_foreign_op(e, foreign))
                    continue
                failures.append(f"{op.name}.{op.variant_test_name} {dtype} sample {i}: {type(e).__name__}: "
                                f"{(str(e).splitlines() or [''])[0][:200]}")
    return passed, failures


def opinfos_named(names):
    """OpInfo entries (op_db and the _foreach_ databases) with one of `names`."""
    from torch.testing._internal import common_methods_invocations as cmi
    dbs = [cmi.op_db] + [getattr(cmi, n) for n in ("foreach_unary_op_db", "foreach_binary_op_db",
                                                    "foreach_pointwise_op_db", "foreach_reduce_op_db",
                                                    "foreach_other_op_db") if hasattr(cmi, n)]
    return [o for db in dbs for o in db if o.name in names]


def opinfo_params(names, dtypes, variants=None):
    """pytest parameters (op, dtype) for the OpInfo entries named in `names`, in each of `dtypes` the CPU supports;
    `variants` (op name -> variant_test_names) keeps only those variants of the ops it names."""
    import pytest

    variants = variants or {}
    return [pytest.param(op, dt, id=f"{op.name}.{op.variant_test_name}-{dt}")
            for op in opinfos_named(set(names))
            if op.name not in variants or op.variant_test_name in variants[op.name]
            for dt in dtypes if dt in op.supported_dtypes("cpu")]


# The CPU rounds alpha to float16/bfloat16 in its vectorised loops but not in their scalar tails,
# so _foreach_ samples with alpha can differ from any single formula by an ulp (more after cancellation).
FOREACH_REDUCED_TOL = {torch.float16: dict(rtol=1e-2, atol=1e-2), torch.bfloat16: dict(rtol=2e-2, atol=5e-2)}


if __name__ == "__main__":
    names = [a for a in sys.argv[1:] if not a.startswith("--")]
    max_samples = next((int(a.split("=")[1]) for a in sys.argv[1:] if a.startswith("--max-samples=")), 200)
    dtypes = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
              torch.int8, torch.uint8, torch.bool]
    random_ops = {"bernoulli", "multinomial", "normal", "uniform", "exponential", "geometric", "log_normal", "cauchy",
                  "randint", "randint_like", "randn", "randn_like", "rand_like", "nn.functional.dropout"}
    # ops of the other families (elementwise math, reductions) some samples need
    foreign = {"min", "max", "ge", "le", "eq", "ne", "lt", "gt", "lerp", "sqrt", "pow", "linalg_vector_norm", "abs",
               "sgn", "sign", "scatter"}
    total_p = total_n = 0
    for op in opinfos_named(names):
        deterministic = op.name not in random_ops
        blocked = []
        p, f = run_opinfo(op, dtypes, compare=deterministic, check_grad=deterministic, foreign=foreign,
                          blocked=blocked, max_samples=max_samples,
                          tol=FOREACH_REDUCED_TOL if op.name.startswith("_foreach_") else None)
        total_p += p
        total_n += p + len(f)
        label = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
        print(f"{label:40s} {p:5d}/{p + len(f):5d}" + ("" if deterministic else "  (random: shape/dtype/device only)"))
        if blocked:
            print(f"    {len(blocked)} more samples need ops of other families: {sorted(set(blocked))}")
        for msg in f[:5]:
            print("    " + msg)
    print(f"{'TOTAL':40s} {total_p:5d}/{total_n:5d} = {100.0 * total_p / max(1, total_n):.1f}%")


def raises_like_cpu(fn, x, device="ocl"):
    """fn raises on x on the CPU and the same exception type on the device, not a strict-mode fallback error."""
    import pytest

    with pytest.raises(Exception) as cpu_err:
        fn(x)
    with pytest.raises(type(cpu_err.value)) as dev_err:
        fn(x.to(device))
    assert "PYTORCH_OCL_STRICT" not in str(dev_err.value)
