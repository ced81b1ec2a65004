"""OpInfo coverage of the pointwise families on ocl (strict mode): the pass rate of (op, sample)
pairs per dtype and the failing samples, written as markdown.

    python3 benchmarks/opinfo_coverage.py [--out results/opinfo_pointwise.md] [--dtypes float32,float16,...]

Runs the same comparison as tests/test_pointwise_opinfo.py (forward vs the CPU; gradients and
non-contiguous samples in float32).
"""
import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import common  # noqa: E402

common.import_backend()

import pytorch_ocl  # noqa: E402
import torch  # noqa: E402

import pointwise_opinfo as P  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/opinfo_pointwise.md")
    parser.add_argument("--dtypes", default="", help="comma-separated dtype names (default: all of the test's)")
    args = parser.parse_args(argv)
    pytorch_ocl.set_strict(True)
    wanted = {getattr(torch, d) for d in args.dtypes.split(",") if d}
    start = time.time()
    per_dtype = collections.defaultdict(lambda: [0, 0])
    per_op = collections.defaultdict(lambda: [0, 0])
    failures = []
    for op, dtype in P.cases():
        if wanted and dtype not in wanted:
            continue
        for label, err in P.run_case(op, dtype):
            name = str(dtype)[6:]
            per_dtype[name][1] += 1
            per_op[P.opinfo_id(op)][1] += 1
            if err is None:
                per_dtype[name][0] += 1
                per_op[P.opinfo_id(op)][0] += 1
            else:
                failures.append(f"{P.opinfo_id(op)} {name} {label}: {err}")
    rows = [[d, p, t, f"{100.0 * p / t:.1f}%"] for d, (p, t) in sorted(per_dtype.items())]
    all_ops = sorted(per_op)
    fully = [o for o in all_ops if per_op[o][0] == per_op[o][1]]
    preamble = [f"ocl: {common.device_description('ocl:0')}", f"torch {torch.__version__}",
                f"{len(all_ops)} OpInfos, up to {P.MAX_SAMPLES} samples each in float32 (+ non-contiguous copies, "
                f"+ gradients), {P.MAX_SAMPLES_OTHER} in the other dtypes; strict mode (a CPU fallback fails)",
                f"OpInfos passing every sample: {len(fully)}/{len(all_ops)}; run time {time.time() - start:.0f} s"]
    notes = failures or ["no failures"]
    md = common.write_markdown(args.out, "OpInfo coverage of the pointwise families", preamble,
                               ["dtype", "passed", "total", "pass rate"], rows, notes)
    print(common.markdown_table(["dtype", "passed", "total", "pass rate"], rows))
    print("\n".join(failures))
    print(f"wrote {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
