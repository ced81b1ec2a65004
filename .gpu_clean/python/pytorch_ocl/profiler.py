"""Per-kernel device times from OpenCL event profiling.

    with pytorch_ocl.profiler.profile("trace.csv") as prof:
        model(x)
    print(prof.table())

Every kernel launched while the block runs (built-in ops and user Kernels) is timed on the
device; the CSV has one row per launch (kernel, start_us, duration_us), the table one row per
kernel name (calls, total, mean). Recording costs one event per launch: use it to find hot
kernels, not to measure overall speed.
"""
import csv
from collections import OrderedDict

from . import _C

__all__ = ["profile"]


class profile:
    def __init__(self, path=None):
        self.path = path
        self.records = []

    def __enter__(self):
        _C.profiler_start()
        return self

    def __exit__(self, *exc):
        raw = _C.profiler_stop()
        t0 = min((r[1] for r in raw), default=0)
        self.records = [(name, (start - t0) / 1e3, (end - start) / 1e3) for name, start, end in raw]
        if self.path:
            with open(self.path, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["kernel", "start_us", "duration_us"])
                w.writerows((n, f"{s:.3f}", f"{d:.3f}") for n, s, d in self.records)
        return False

    def summary(self):
        """[{kernel, calls, total_us, mean_us}] sorted by total time, largest first."""
        acc = OrderedDict()
        for name, _, dur in self.records:
            calls, total = acc.get(name, (0, 0.0))
            acc[name] = (calls + 1, total + dur)
        rows = [{"kernel": k, "calls": c, "total_us": t, "mean_us": t / c} for k, (c, t) in acc.items()]
        return sorted(rows, key=lambda r: -r["total_us"])

    def table(self) -> str:
        rows = self.summary()
        width = max([len("kernel")] + [len(r["kernel"]) for r in rows])
        lines = [f"{'kernel':<{width}}  {'calls':>7}  {'total (us)':>12}  {'mean (us)':>10}"]
        lines += [f"{r['kernel']:<{width}}  {r['calls']:>7}  {r['total_us']:>12.1f}  {r['mean_us']:>10.2f}" for r in rows]
        return "\n".join(lines)
