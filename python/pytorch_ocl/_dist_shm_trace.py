"""Where the time of the shared-memory all-reduce goes (_dist_shm.py): per piece, the seconds of each stage.

Why: a 256 MiB all-reduce moves ~25 ms of copies but took ~100 ms on a 2-GPU host; seeing which stage
(the device read, the copy into the slot, the wait for the peers, the reduction, the copy out, the write
back) holds a piece tells what to change. Stages, in a piece's order:
  read          waiting on the worker for the piece's device->host reads (their events); with a thread per
                stage (_dist_shm_stages.py) the read itself on the reader thread (enqueue and wait)
  wait_read     (stage threads) the worker waiting for the reader to deliver the piece
  copy_in       the staged piece into this rank's slot of the segment
  wait_slot     waiting until every rank has reduced the piece that used this slot set before
  wait_arrive   waiting for the peers' pieces (their ARRIVE words)
  wait_out      waiting until every rank has copied out the result area's previous piece
  reduce        this rank's share of the piece, over every rank's slot, into the result area
  wait_reduced  waiting for the peers' shares (their REDUCED words)
  copy_out      the result area into the staging buffer
  write         enqueueing the host->device write back (asynchronous from pinned memory: the enqueue only)
                (with stage threads, on the writer thread)
  wait_write    (stage threads, once per all-reduce) the worker waiting for the writer's last enqueue
  write_tail    (once per all-reduce, only while tracing) waiting for the device to finish the writes
The pipeline interleaves pieces (piece i + 1 is copied in before piece i is reduced), so the stages of one
piece are not contiguous in time; `wall` is the time from the first stage's start to the last stage's end.
Each stage is also counted for the thread that ran it: the summary's per-thread busy time (stages other
than waits and write_tail) over the wall time shows how much the stage threads overlap (their sum over the
wall: > 1 = overlap).

PYTORCH_OCL_DIST_SHM_TRACE=1 turns it on for every shared-memory group made afterwards; pytorch_ocl.
distributed.shm_trace(group) returns a group's Trace (reset(on=True) starts recording on it).
"""
import threading
import time

from . import _dist_lanes

ENV = "PYTORCH_OCL_DIST_SHM_TRACE"
STAGES = ("read", "wait_read", "copy_in", "wait_slot", "wait_arrive", "wait_out", "reduce", "wait_reduced",
          "copy_out", "write", "wait_write", "write_tail")
MAX_PIECES = 1 << 16  # kept per-piece records; totals go on beyond


def wanted():
    return _dist_lanes.switch_env(ENV, False)


class Trace:
    """Per-piece stage durations of one transport (recorded on its worker and stage threads)."""

    def __init__(self, on=False):
        self._lock = threading.Lock()
        self.reset(on)

    def reset(self, on=None):
        """Forgets what was recorded; `on` (when given) starts or stops recording."""
        if on is not None:
            self.on = bool(on)
        self.pieces = {}  # (call, piece index) -> {stage: seconds}
        self.totals = dict.fromkeys(STAGES, 0.0)
        self.threads = {}  # thread name -> {stage: seconds}
        self.first = self.last = None  # perf_counter of the first stage's start and the last one's end

    def add(self, key, stage, start, end=None, thread=None):
        """Records that `stage` of piece `key` ran from `start` (time.perf_counter()) until `end` (default
        now) on the thread named `thread` (default the calling one)."""
        if not self.on:
            return
        now = time.perf_counter() if end is None else end
        seconds = now - start
        thread = thread or threading.current_thread().name
        with self._lock:  # several threads record
            self.totals[stage] += seconds
            per = self.threads.setdefault(thread, {})
            per[stage] = per.get(stage, 0.0) + seconds
            self.first = start if self.first is None else min(self.first, start)
            self.last = now if self.last is None else max(self.last, now)
            if key in self.pieces or len(self.pieces) < MAX_PIECES:
                stages = self.pieces.setdefault(key, {})
                stages[stage] = stages.get(stage, 0.0) + seconds

    def summary(self):
        """A few lines: per stage, total ms, ms per piece and share of the wall time."""
        n = len(self.pieces)
        wall = (self.last - self.first) if self.first is not None else 0.0
        busy = sum(self.totals.values())
        lines = [f"shm trace: {n} pieces, wall {wall * 1e3:.2f} ms, stages {busy * 1e3:.2f} ms"
                 + (" (more pieces than kept)" if n >= MAX_PIECES else "")]
        for stage in STAGES:
            total = self.totals[stage]
            if total == 0.0:
                continue
            lines.append(f"  {stage:<13}{total * 1e3:9.2f} ms  {total * 1e3 / max(1, n):8.3f} ms/piece"
                         f"  {100 * total / wall if wall else 0:5.1f} %")
        busy = {name: sum(v for k, v in per.items() if not k.startswith("wait") and k != "write_tail")
                for name, per in self.threads.items()}
        if busy and wall:
            lines.append("  busy per thread: " + ", ".join(f"{name} {b * 1e3:.2f} ms ({100 * b / wall:.0f} %)"
                                                          for name, b in sorted(busy.items()))
                         + f"; sum / wall {sum(busy.values()) / wall:.2f}")
        return "\n".join(lines)
