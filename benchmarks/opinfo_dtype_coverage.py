"""The whole op_db in one dtype on ocl (strict mode): the pass rate of (op, sample) pairs, per
op, and the failing samples, as markdown. The issue 17 yardstick for dtypes other than float32
(complex64 first):

    python3 benchmarks/opinfo_dtype_coverage.py --dtype complex64 [--samples 4] [--grad]
        [--ops 'exp,log,...'] [--out results/opinfo_complex64.md]

Each sample runs as tests/opinfo_compare.py runs it (copied to ocl, compared with the CPU;
where the CPU raises, ocl must raise; --grad: input gradients too where the op and dtype
support autograd). Ops run in a worker process: a crash (signal) is counted as a failure of
that op and the worker restarts after it, so one crash does not end the run.

float16 / bfloat16: a sample that fails only as `Tensor-likes are not close` is run once
more against a float64 reference (tests/float64_reference.py); when ocl's error is finite and no more
than the CPU's own, it is counted apart, as passing against float64, with both errors (in units of torch's
default tolerance for the dtype) in the report; it stays out of the plain pass count. With --grad the
input gradients are a second group, judged the same way where they differ from the CPU's.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import common

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

RANDOM_OPS = {"bernoulli", "multinomial", "normal", "uniform", "exponential", "geometric", "log_normal", "cauchy",
              "randint", "randint_like", "randn", "randn_like", "rand_like", "nn.functional.dropout",
              "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout", "nn.functional.dropout2d",
              "nn.functional.dropout3d", "nn.functional.rrelu", "empty", "empty_like", "empty_strided",
              "new_empty", "new_empty_strided", "torch.empty", "nn.functional.fractional_max_pool2d",
              "nn.functional.fractional_max_pool3d", "svd_lowrank", "pca_lowrank"}


def op_list(dtype, names):
    from torch.testing._internal.common_methods_invocations import op_db
    ops = [o for o in op_db if dtype in o.supported_dtypes("cpu")]
    if names:
        ops = [o for o in ops if o.name in names]
    return ops


def label(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def worker(dtype_name, start, samples, grad, names):
    import torch
    import pytorch_ocl
    from float64_reference import float64_errors
    from opinfo_compare import _check_sample
    pytorch_ocl.set_strict(True)
    dtype = getattr(torch, dtype_name)
    ops = op_list(dtype, names)
    for idx in range(start, len(ops)):
        op = ops[idx]
        deterministic = op.name not in RANDOM_OPS and not op.name.startswith("empty")
        with_grad = grad and deterministic and op.supports_autograd and dtype in op.supported_backward_dtypes("cpu")
        passed, failures, by_float64 = 0, [], []
        try:
            for i, sample in enumerate(op.sample_inputs("cpu", dtype, requires_grad=with_grad)):
                if i >= samples:
                    break
                try:
                    torch.manual_seed(0)
                    _check_sample(op, sample, deterministic, with_grad)
                    passed += 1
                except Exception as e:  # noqa: BLE001 - collected and reported
                    errs = None
                    if "not close" in str(e) and dtype in (torch.float16, torch.bfloat16):
                        errs = float64_errors(op, sample, dtype, with_grad)
                    note = "" if errs is None else f" (vs float64: ocl {errs[0]:.3g}, CPU {errs[1]:.3g} x tol)"
                    if errs is not None and errs[0] <= errs[1] and errs[0] != float("inf"):
                        by_float64.append(f"sample {i}{note}")
                    else:
                        failures.append(f"sample {i}: {type(e).__name__}: "
                                        f"{(str(e).splitlines() or [''])[0][:160]}{note}")
        except Exception as e:  # noqa: BLE001 - the sampler itself failed: not counted
            failures.append(f"sampler: {type(e).__name__}: {str(e)[:120]}")
        print("RESULT\t" + json.dumps([idx, label(op), passed, failures, by_float64]), flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="complex64")
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--grad", action="store_true")
    parser.add_argument("--ops", default="", help="comma-separated OpInfo names (default: all)")
    parser.add_argument("--out", default="")
    parser.add_argument("--worker-start", type=int, default=-1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    names = {n for n in args.ops.split(",") if n}
    if args.worker_start >= 0:
        worker(args.dtype, args.worker_start, args.samples, args.grad, names)
        return 0
    import torch  # noqa: F401
    n_ops = len(op_list(getattr(torch, args.dtype), names))
    start, t0 = 0, time.time()
    results = {}
    while start < n_ops:
        cmd = [sys.executable, os.path.abspath(__file__), "--dtype", args.dtype, "--samples", str(args.samples),
               "--ops", args.ops, "--worker-start", str(start)] + (["--grad"] if args.grad else [])
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        last = start - 1
        for line in proc.stdout:
            if line.startswith("RESULT\t"):
                idx, name, passed, failures, by_float64 = json.loads(line[7:])
                results[idx] = (name, passed, failures, by_float64)
                last = idx
        rc = proc.wait()
        if last + 1 < n_ops:  # the worker died on op last + 1
            from torch.testing._internal.common_methods_invocations import op_db  # noqa: F401
            ops = op_list(getattr(torch, args.dtype), names)
            results[last + 1] = (label(ops[last + 1]), 0, [f"process died (exit {rc})"], [])
        start = last + 2
    total = sum(p + len(f64) + len([f for f in fs if not f.startswith("sampler")])
                for _, p, fs, f64 in results.values())
    passed = sum(p for _, p, _, _ in results.values())
    passed64 = sum(len(f64) for _, _, _, f64 in results.values())
    full = sum(1 for _, p, fs, f64 in results.values() if not fs and not f64 and p)
    full64 = sum(1 for _, p, fs, f64 in results.values() if not fs and f64)
    lines = [f"# op_db coverage in {args.dtype}" + (" (forward + gradients)" if args.grad else " (forward)"), "",
             f"torch {torch.__version__}, device {torch.ocl.get_device_properties(0).name if hasattr(torch, 'ocl') else '?'}, "
             f"up to {args.samples} samples per op, strict mode, {time.time() - t0:.0f} s", "",
             f"**{passed}/{total} (op, sample) pairs pass = {100.0 * passed / max(1, total):.1f}%**; "
             f"ops passing every sample: {full}/{len(results)}", ""]
    if passed64:
        lines += [f"Passing against float64 (ocl's error no more than the CPU's; not in the count above): "
                  f"{passed64} more pairs, {passed + passed64}/{total} = {100.0 * (passed + passed64) / total:.1f}%; "
                  f"ops passing every sample this way: {full64} more, {full + full64}/{len(results)}", "",
                  "## Passing against float64", ""]
        for idx in sorted(results):
            name, p, fs, f64 = results[idx]
            if f64:
                lines.append(f"- `{name}` {len(f64)}/{p + len(fs) + len(f64)}: " + "; ".join(f64))
        lines.append("")
    lines += ["## Failing ops", ""]
    for idx in sorted(results):
        name, p, fs, f64 = results[idx]
        if fs:
            lines.append(f"- `{name}` {p}/{p + len(fs) + len(f64)}: {fs[0]}")
    common.emit("\n".join(lines) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
