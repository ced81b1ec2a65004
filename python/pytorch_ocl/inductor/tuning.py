"""Launch shapes of generated reduction kernels: (RBLOCK lanes per row, XBLOCK rows per work-group),
build options of the kernel (-DRBLOCK=.. -DXBLOCK=..), so one source serves every shape.

PYTORCH_OCL_INDUCTOR_TUNE=1, or a graph compiled with mode="max-autotune" / "max-autotune-no-cudagraphs": time
the candidates at a kernel's first launch for each size through the project's tuner (dlprim autotune_select), which
keeps the fastest in the kernel cache, so later processes load it instead of timing (kernels that update a buffer
in place or add atomically are never re-run: they keep the heuristic; PYTORCH_OCL_AUTOTUNE=0 turns timing off).
Otherwise: the codegen heuristic (kernel.py). PYTORCH_OCL_TUNE=random:SEED (the project's test mode for every tuner): a
seeded random candidate per kernel and size, so tests reach every shape a tuned run can pick."""
import os
import random
import time

import torch

from .. import _C

_chosen = {}


def candidates(rnumel, max_wg, xfast=False):
    """Power-of-two (RBLOCK, XBLOCK) with RBLOCK*XBLOCK <= min(256, max_wg), RBLOCK not past the row
    (xfast: at least 8 columns per work-group, see kernel.py)."""
    cap = 1
    while cap * 2 <= min(256, max_wg):
        cap *= 2
    out = [(1, min(64, cap))]
    if xfast:
        r = 2
        while r <= cap // 8 and r // 2 < max(rnumel, 1):
            out.append((r, min(64, cap // r)))
            r *= 2
        return out
    r = 8
    while r <= cap and r // 2 < max(rnumel, 1):
        out.append((r, max(1, cap // r // 4) if r < 64 else 1))
        r *= 2
    return out


def mode(kernel=None):
    """("random", seed), ("time", None) or ("off", None); `kernel` asks for timing when its graph was compiled
    with max-autotune."""
    tune = os.environ.get("PYTORCH_OCL_TUNE", "")
    if tune.startswith("random:"):
        return "random", tune.split(":", 1)[1]
    wanted = os.environ.get("PYTORCH_OCL_INDUCTOR_TUNE", "0") == "1" or getattr(kernel, "max_autotune", False)
    if wanted and os.environ.get("PYTORCH_OCL_AUTOTUNE") != "0":
        return "time", None
    return "off", None


def choose(kernel, device, xnumel, rnumel, launch, rerunnable):
    """(RBLOCK, XBLOCK) for this launch; `launch(rblock, xblock)` enqueues the kernel with that shape."""
    m, seed = mode(kernel)
    default = (kernel.rblock, kernel.xblock)
    if m == "off":
        return default
    key = (kernel.name, device, xnumel, rnumel)
    if key in _chosen:
        return _chosen[key]
    max_wg = torch.ocl.get_device_properties(device).max_work_group_size
    cands = candidates(rnumel, max_wg, getattr(kernel, "xfast", False))
    if m == "random":
        pick = random.Random(f"{seed}:{kernel.name}:{xnumel}:{rnumel}").choice(cands)
    elif not rerunnable:
        pick = default
    else:
        def time_us(config):
            c = tuple(int(v) for v in config.split(","))
            launch(*c)  # warm-up: builds the variant
            torch.ocl.synchronize(device)
            start = time.perf_counter()
            for _ in range(3):
                launch(*c)
            torch.ocl.synchronize(device)
            return (time.perf_counter() - start) / 3 * 1e6

        names = [f"{r},{x}" for r, x in cands]
        chosen = _C._autotune_select(device, "inductor_reduction", f"{kernel.name}:{xnumel}:{rnumel}", names,
                                     f"{default[0]},{default[1]}", time_us)
        pick = tuple(int(v) for v in chosen.split(","))
    _chosen[key] = pick
    return pick
