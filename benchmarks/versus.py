"""The driver fft.py and linalg.py share: a table of cases timed on `ocl` in this process and on each
reference device (cuda, cpu) in a child process that does not load pytorch_ocl, then one markdown table.

Why a child: with ocl registered as PrivateUse1, torch's CUDA autograd misbehaves (torch #161129) and
`pin_memory` goes through ocl's hooks; the reference must be plain torch (see transformer.py).

Every device gets the same guards, so a slow case cannot eat a GPU call:
- a total budget per device (--seconds): once spent, the remaining cases are reported as skipped;
- a per-call limit (--per-call): a case whose single call exceeds it is reported from that one call and
  the larger sizes of its family are skipped; before running a case, its time is extrapolated from the
  family's previous size (time * (size ratio) ** exponent), and a case predicted over the limit is skipped
  without being run (a GPU kernel cannot be interrupted once enqueued).
Cases run in table order, so each family must be listed smallest first.
The child prints one JSON line per case as it lands, so a child cut short still reports what it measured.
"""
import argparse
import collections
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch
from tqdm import tqdm

import common

# label: unique row name (dtype included); family: cases whose times extrapolate from one another;
# size: the family's size parameter; exponent: time ~ size ** exponent; work: flop or bytes of one call;
# make(device, dtype) -> a zero-argument callable running the case once (inputs built before).
Case = collections.namedtuple("Case", "label family size exponent work make dtype")


def add_arguments(parser, seconds: float, per_call: float):
    parser.add_argument("--device", default="ocl:0")
    parser.add_argument("--ref", default=None,
                        help="comma-separated reference devices, each timed in a child process without ocl "
                             "(default: cuda,cpu where CUDA is available, else cpu; 'none' for ocl alone)")
    parser.add_argument("--quick", action="store_true", help="small sizes (PoCL / CI smoke run)")
    parser.add_argument("--only", default="", help="comma-separated substrings: run only cases whose label has one")
    parser.add_argument("--seconds", type=float, default=seconds, help="total time budget per device")
    parser.add_argument("--per-call", type=float, default=per_call, help="per-call limit (see versus.py)")
    parser.add_argument("--child", help=argparse.SUPPRESS)


def select(cases, only: str):
    words = [w for w in only.split(",") if w]
    return [c for c in cases if not words or any(w in c.label for w in words)]


def measure_device(device, cases, per_call: float, seconds: float, emit, desc: str):
    """Times each case on `device`; emit(label, seconds or None, note) as each lands."""
    deadline = time.perf_counter() + seconds
    last = {}  # family -> (size, seconds per call) of its last measured case
    over = set()  # families with a case over the per-call limit
    for case in tqdm(cases, desc=desc, unit="case", file=sys.stderr):
        if time.perf_counter() > deadline:
            emit(case.label, None, "budget spent")
            continue
        if case.family in over:
            emit(case.label, None, "smaller size over limit")
            continue
        prev = last.get(case.family)
        if prev and prev[1] * (case.size / prev[0]) ** case.exponent > per_call:
            emit(case.label, None, f"est. {prev[1] * (case.size / prev[0]) ** case.exponent:.3g} s > limit")
            over.add(case.family)
            continue
        try:
            fn = case.make(device, getattr(torch, case.dtype))
            fn()  # program builds, plans, library initialisation
            common.synchronize(device)
            start = time.perf_counter()
            fn()
            common.synchronize(device)
            once = time.perf_counter() - start
            if once > per_call:
                over.add(case.family)
                t, note = once, "1 call"
            else:
                iters = max(3, min(25, int(0.5 / max(once, 1e-6))))
                t, note = statistics.median(common.time_it(fn, device, iters, warmup=0)), ""
            last[case.family] = (case.size, t)
            emit(case.label, t, note)
        except Exception as e:  # noqa: BLE001 - an unsupported case is a row, not the end of the run
            emit(case.label, None, f"{type(e).__name__}: {str(e).splitlines()[0][:70]}" if str(e) else type(e).__name__)
        fn = None
        if torch.device(device).type == "cuda":
            torch.cuda.empty_cache()


def child_main(args, cases):
    """The reference side: a description line, then one JSON line per case."""
    device = args.child
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 products in full precision, as ocl's
    print(json.dumps({"device": common.device_description(device) + reference_notes(device)}), flush=True)
    measure_device(device, cases, args.per_call, args.seconds,
                   lambda label, t, note: print(json.dumps({"label": label, "t": t, "note": note}), flush=True),
                   desc=device)
    return 0


def reference_notes(device) -> str:
    if device == "cuda":
        lib = torch.backends.cuda.preferred_linalg_library()
        return f", torch {torch.__version__}, CUDA {torch.version.cuda}, linalg {str(lib).split('.')[-1]}"
    if device == "cpu":
        return f", torch {torch.__version__}"
    return ""


def run_reference(script, ref, args):
    """{label: (t, note)}, the description and whether we were interrupted, from `script --child ref`;
    the lines that landed before a failure, a timeout or Ctrl-C (timeout -s INT) count."""
    cmd = [sys.executable, os.path.abspath(script), "--child", ref, "--seconds", str(args.seconds),
           "--per-call", str(args.per_call), "--only", args.only] + ["--quick"] * args.quick + extra_child_args(args)
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    results, desc, status, interrupted = {}, ref, "", False
    # stderr goes through: the child's progress bar and any traceback show as they come
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    deadline = time.perf_counter() + args.seconds * 2 + 120
    try:
        for line in proc.stdout:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if "device" in d:
                desc = d["device"]
            else:
                results[d["label"]] = (d["t"], d["note"])
            if time.perf_counter() > deadline:
                status = "timed out"
                break
    except KeyboardInterrupt:
        status, interrupted = "interrupted", True
    if status:
        proc.kill()
    rc = proc.wait()
    status = status or (f"exit {rc}" if rc else "")
    if status:
        desc += f" (child {status}; {len(results)} cases came back)"
        print(f"{ref} reference child: {status}; {len(results)} cases came back", file=sys.stderr)
    return results, desc, interrupted


def extra_child_args(args):
    return ["--large"] if getattr(args, "large", False) else []


def ratio(t_ref, t_ocl):
    return t_ref / t_ocl if t_ref and t_ocl else None


def main(args, cases, script, title, unit: str, work_name: str, notes):
    """Times ocl here and each reference in a child; prints rows as they land; writes args.out."""
    if args.child:
        return child_main(args, cases)
    common.import_backend()
    if not torch.ocl.is_available():
        import pytorch_ocl

        print(f"no OpenCL device: {pytorch_ocl._C.enumeration_error()}")
        return 1
    refs = args.ref or ("cuda,cpu" if torch.cuda.is_available() else "cpu")
    refs = [] if refs == "none" else [r for r in refs.split(",") if r]
    ref_results, descs, interrupted = {}, {}, False
    for r in refs:
        if interrupted:
            ref_results[r], descs[r] = {}, f"{r} (not run: interrupted)"
        else:
            ref_results[r], descs[r], interrupted = run_reference(script, r, args)
    by_label = {c.label: c for c in cases}
    rows, done = [], set()
    scale = 1e9

    def emit(label, t, note):
        done.add(label)
        c = by_label[label]
        times = [t] + [ref_results[r].get(label, (None, "not run"))[0] for r in refs]
        rates = [c.work / x / scale if x else None for x in times]
        ref_notes = [f"{r}: {ref_results[r][label][1]}" for r in refs if ref_results[r].get(label, (0, ""))[1]]
        row = [label] + [x * 1e3 if x else None for x in times] + rates + [ratio(x, t) for x in times[1:]]
        rows.append(row + ["; ".join(([f"ocl: {note}"] if note else []) + ref_notes)])
        tqdm.write(" | ".join(common.fmt(v) for v in rows[-1]), file=sys.stderr)

    try:
        if interrupted:
            raise KeyboardInterrupt
        measure_device(args.device, cases, args.per_call, args.seconds, emit, desc=args.device)
    except KeyboardInterrupt:  # a time limit (timeout -s INT): keep the rows measured so far
        print("interrupted: writing the rows measured so far", file=sys.stderr)
    for c in cases:  # the references' times of the cases ocl did not reach
        if c.label not in done:
            emit(c.label, None, "not run")
    header = (["case", "ocl ms"] + [f"{r} ms" for r in refs] + [f"ocl {unit}"] + [f"{r} {unit}" for r in refs]
              + [f"{r}/ocl" for r in refs] + ["notes"])
    summary = []
    for i, r in enumerate(refs):
        got = [row[2 + 2 * len(refs) + 1 + i] for row in rows]
        got = [g for g in got if g]
        if got:
            summary.append(f"geomean {r} time / ocl time over {len(got)} cases: "
                           f"{math.exp(sum(map(math.log, got)) / len(got)):.3f}")
    print(common.markdown_table(header, rows))
    print("\n".join(summary))
    preamble = ([f"ocl: {common.device_description(args.device)}"] + [f"{r}: {descs[r]}" for r in refs]
                + [f"limits per device: {args.seconds:g} s in all, {args.per_call:g} s per call"
                   + (", --quick" if args.quick else "")] + summary)
    notes = [f"ms: median of 3-25 calls after one untimed call (builds, plans); {unit} = {work_name} / median time",
             "r/ocl: reference time / ocl time (> 1: ocl faster)",
             "run in table order; a case predicted (from its family's previous size) or measured over the per-call "
             "limit skips that family's larger sizes"] + list(notes)
    md = common.write_markdown(args.out, title, preamble, header, rows, notes)
    print(f"\nwrote {md}")
    return 0
