"""torch.distributed on ocl tensors through the "ocl_gloo" c10d backend (pytorch_ocl/distributed.py).

Each test spawns one process per rank (the bodies are in dist_workers.py and check their own values)
on a free localhost port, and fails instead of hanging if the ranks are not done by a deadline.
All ranks share ocl:0 (PoCL has one device) except in the LOCAL_RANK test, which asks PoCL for two.
"""
import os
import socket
import subprocess
import sys
import time

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import dist_nccl_workers
import dist_workers
from conftest import REPO, _base_env

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="torch built without distributed/gloo")

DEADLINE_S = 90


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(fn, world, *args, join=True):
    """Starts `world` ranks running fn(rank, world, port, *args); with `join`, waits for them and
    re-raises a rank's exception. Returns the processes."""
    ctx = mp.start_processes(fn, args=(world, _free_port(), *args), nprocs=world, join=False, start_method="spawn")
    if join:
        deadline = time.monotonic() + DEADLINE_S
        try:
            while not ctx.join(timeout=1):  # raises ProcessRaisedException when a rank failed
                if time.monotonic() > deadline:
                    pytest.fail(f"{fn.__name__}: ranks still running after {DEADLINE_S} s")
        finally:
            _kill(ctx.processes)
    return ctx.processes


def _kill(processes):
    for p in processes:
        if p.is_alive():
            p.kill()
            p.join()


def test_backend_registered_for_ocl():
    from torch.distributed import Backend

    assert Backend.default_device_backend_map["ocl"] == "ocl_gloo"
    assert Backend.backend_capability["ocl_gloo"] == ["ocl"]
    assert Backend.default_device_backend_map["cpu"] == "gloo"  # untouched


@pytest.mark.parametrize("world", [2, 3])
def test_collectives(world):
    """Every collective's values, dtypes and strided tensors; Work.wait() is stream-ordered (consumers right
    after it see the results, and on 2 ranks it returns while the device is still busy)."""
    _spawn(dist_workers.collectives, world)


def test_gloo_lane_count(monkeypatch):
    """PYTORCH_OCL_GLOO_LANES, else min(4, CPUs / processes on this host); bad values name the variable.
    (The lanes themselves run in test_collectives and the DDP test: dist_lane_workers.py.)"""
    from pytorch_ocl import _dist_lanes

    monkeypatch.setenv("PYTORCH_OCL_GLOO_LANES", "3")
    assert _dist_lanes.default_count(2) == 3
    for bad in ("0", "-2", "four"):
        monkeypatch.setenv("PYTORCH_OCL_GLOO_LANES", bad)
        with pytest.raises(ValueError, match="PYTORCH_OCL_GLOO_LANES"):
            _dist_lanes.default_count(2)
    monkeypatch.delenv("PYTORCH_OCL_GLOO_LANES")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert _dist_lanes.default_count(8) == 4  # capped
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")
    assert _dist_lanes.default_count(8) == 2
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    assert _dist_lanes.default_count(32) == 1  # the world size when torchrun did not say

    # a 25 MiB bucket of float32 on 4 lanes: 8 equal pieces (two full waves), not 7 chunks of 4 MiB
    lanes = _dist_lanes.Lanes(None, 0, 1, None, "gloo")
    assert lanes.pieces(25 << 18, 4, 4 << 20) is None  # one lane: the chunks themselves
    lanes._groups = ["gloo"] * 4
    pieces = lanes.pieces(25 << 18, 4, 4 << 20)
    assert len(pieces) == 8 and {b - a for a, b in pieces} == {(25 << 18) // 8}
    assert pieces[0][0] == 0 and pieces[-1][1] == 25 << 18 and all(p[1] == q[0] for p, q in zip(pieces, pieces[1:]))
    assert len(lanes.pieces(6, 8, 16)) == 4 and len(lanes.pieces(3, 8, 8)) == 3  # at most one piece per element


def test_group_of_one_reduces_on_the_device():
    _spawn(dist_workers.alone, 1)


@pytest.mark.parametrize("transport", ["shm", "gloo", "peer", "nccl"])
def test_ddp_matches_single_process(transport):
    if transport in ("peer", "nccl") and not _cpu_device() and (
            torch.ocl.device_count() < 2 or torch.cuda.device_count() < 2):
        pytest.skip(f"{transport} needs a GPU per rank (2 GPUs); on a CPU device (PoCL) the transport runs emulated")
    _spawn(dist_workers.ddp, 2, transport)


@pytest.mark.parametrize("transport,world", [("nccl", 2), ("peer", 3)])
def test_device_side_allreduce_emulated(transport, world):
    """_dist_nccl.py's staging, pool and stream order (NCCL's place taken by gloo), and _dist_peer.py's buffer
    exchange, control words and rank-order reduction (3 ranks: each reads two others), on host memory the CPU
    device uses in place: every dtype and op they take (and those they leave to the host path), strided tensors,
    several in flight."""
    if not _cpu_device():
        pytest.skip("the emulation needs a CPU device (PoCL)")
    _spawn(dist_nccl_workers.emulated, world, transport)


def _cpu_device():
    return torch.ocl.get_device_properties(0).type == "cpu"


def _torchrun_example(*args, steps=3, env=None):
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         os.path.join(REPO, "examples", "ddp_train.py"), "--steps", str(steps), *args],
        env={**_base_env(), **(env or {})}, cwd=REPO, capture_output=True, text=True, timeout=3 * DEADLINE_S,  # cold builds per rank
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"check OK: weights identical on all 2 ranks after {steps} steps" in proc.stdout, proc.stdout
    return proc.stdout


def test_example_under_torchrun():
    """examples/ddp_train.py as torchrun starts it (RANK/LOCAL_RANK/WORLD_SIZE from the environment)."""
    _torchrun_example()


def test_example_bf16_compress_under_torchrun():
    """--bf16-compress: torch's bf16_compress_hook on the DDP model (bfloat16 all-reduces through ocl_gloo)."""
    out = _torchrun_example("--bf16-compress", "--warmup", "1")
    assert "bf16-compressed" in out, out


def test_example_gpt2_under_torchrun(tmp_path):
    """--model gpt2: transformers' GPT2LMHeadModel (tiny config, random tokens) under DDP, its gradients through the
    peer-memory transport (emulated on a CPU device), --trace printing each rank's timeline of the timed steps'
    all-reduces."""
    pytest.importorskip("transformers")
    cpu = _cpu_device()
    out = _torchrun_example("--model", "gpt2", "--batch", "2", "--seq-len", "16", "--vocab", "64", "--n-layer", "1",
                            "--n-embd", "32", "--n-head", "2", "--warmup", "1", "--trace",
                            "--trace-plot", str(tmp_path / "trace.png"),
                            env={"PYTORCH_OCL_DIST_PEER": "emulate"} if cpu else None)
    assert "tokens/s" in out, out
    if cpu or (torch.ocl.device_count() >= 2 and torch.cuda.device_count() >= 2):
        assert "through peer" in out, out
        for rank in (0, 1):
            for step in (1, 2):
                assert f"trace rank {rank} step {step}: " in out and "the exchange took" in out, out
        assert "longest exchange" in out and "the other ranks ready" in out, out
        # the timeline plot (--trace-plot), where matplotlib is installed
        assert (tmp_path / "trace.png").exists() or "matplotlib is not installed" in out, out


def test_fsdp2_matches_single_process_and_checkpoints(tmp_path):
    _spawn(dist_workers.fsdp, 2, str(tmp_path / "ckpt"))


# gloo's own timeout ("hang" through gloo) is gloo's mechanism, unchanged by ours: not rerun, to keep CI short
@pytest.mark.parametrize("mode,transport", [("kill", "shm"), ("hang", "shm"), ("kill", "gloo"), ("kill", "peer")])
def test_missing_rank_fails_instead_of_hanging(tmp_path, mode, transport):
    world = 3
    if transport == "peer" and not _cpu_device():  # the real peer link: a GPU per rank (ocl:rank), as many as import
        from pytorch_ocl import _C  # CUDA's memory (a CPU device may follow the GPUs: PoCL on the GPU host)

        world = min(world, next((i for i in range(torch.ocl.device_count()) if not _C._imports_opaque_fd(i)),
                                torch.ocl.device_count()))
        if world < 2:
            pytest.skip("the peer link on GPUs needs two of them")
    procs = _spawn(dist_workers.dead_peer, world, str(tmp_path), mode, transport, join=False)
    try:
        deadline = time.monotonic() + DEADLINE_S
        for p in procs[:-1]:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
            assert not p.is_alive(), "a surviving rank hung"
    finally:
        _kill(procs)
    early = [f.read_text() for f in sorted(tmp_path.glob("rank?")) if "before the timed all-reduce" in f.read_text()]
    assert not early, "\n".join(early)  # the killed rank's too: what failed on it may explain the others
    for rank in range(world - 1):
        result = tmp_path / f"rank{rank}"
        assert result.exists(), (f"rank {rank} ended (exit code {procs[rank].exitcode}) without an outcome; its "
                                 f"crash report: {(tmp_path / f'rank{rank}.fault').read_text()!r}")
        seconds, outcome = result.read_text().split("\n", 1)
        assert outcome.startswith("RuntimeError") or outcome.startswith("DistBackendError"), outcome
        assert float(seconds) < 30, (seconds, outcome)
        if mode == "kill" and transport in ("shm", "peer"):  # seen through /proc, not by the timeout
            assert "has exited" in outcome, outcome
        if mode == "hang":
            assert "timed out" in outcome.lower(), outcome
            assert float(seconds) >= 4, (seconds, outcome)  # it waited for the 5 s timeout


def test_init_with_device_id():
    """init_process_group(device_id=ocl:N) binds the group as with cuda:N; new_group under it works."""
    _spawn(dist_workers.bound_device, 2)


def test_device_from_local_rank():
    """torch.ocl.set_device(LOCAL_RANK) with two devices (PoCL exposing two pthread devices)."""
    old = {k: os.environ.get(k) for k in ("POCL_DEVICES", "PYTORCH_OCL_DEVICES")}
    os.environ["POCL_DEVICES"] = "pthread pthread"  # read by the spawned ranks' OpenCL runtime
    os.environ.pop("PYTORCH_OCL_DEVICES", None)
    try:
        _spawn(dist_workers.local_rank_device, 2)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_registration_is_cheap(run_py):
    """`import torch` (autoload) registers the backend without building the process group class."""
    out = run_py("""
        import sys, torch
        from torch.distributed import Backend
        print(Backend.default_device_backend_map.get("ocl"), "pytorch_ocl._dist_pg" in sys.modules)
    """).stdout.split()
    assert out == ["ocl_gloo", "False"]


def test_nccl_transport_finds_the_rank_gpu_by_pci_slot():
    """_dist_nccl matches the rank's ocl device to its CUDA device by PCI address: on the 2-GPU H200 host both GPUs
    sit on bus 0 (devices 6 and 7), so a bus alone named one GPU for both ranks and the transport was refused."""
    from pytorch_ocl._dist_nccl import _match_pci

    cuda = [(0, 0, 6), (0, 0, 7)]
    assert _match_pci("0:0:6", cuda) == 0 and _match_pci("0:0:7", cuda) == 1  # slot as the device number
    assert _match_pci("0:0:48", cuda) == 0 and _match_pci("0:0:56", cuda) == 1  # slot as device << 3 | function
    assert _match_pci("0:1:6", cuda) is None and _match_pci("1:0:6", cuda) is None  # another bus or domain
    assert _match_pci("0:0:8", [(0, 0, 1), (0, 0, 8)]) is None  # 8 is device 8, or device 1 function 0: neither


def test_import_leaves_the_callers_descriptor_and_the_kernel_cache_alone(tmp_path):
    """_C._import_external_memory hands the driver a duplicate of the descriptor: NVIDIA's driver keeps the one it
    imports and closes it when the buffer is released, and our callers closed theirs right after the import, so the
    release closed whatever had taken that number since (the kernel cache's SQLite file: "kernel cache read failed
    (disk I/O error)" on every op of the 2-GPU runs)."""
    from pytorch_ocl import _C, _dist_nccl

    if _cpu_device() or not _C._imports_opaque_fd(0) or not torch.cuda.is_available():
        pytest.skip("needs an ocl device that imports CUDA memory (NVIDIA)")
    index = _dist_nccl._cuda_index_at(_C._pci_bus(0))
    if index is None:
        pytest.skip("no CUDA device at ocl:0's PCI address")
    cuda = _dist_nccl._Cuda(index)
    nbytes = cuda.granularity
    ptr, handle, fd = cuda.allocate(nbytes)
    try:
        imported = _C._import_external_memory(fd, nbytes, 0)
    finally:
        os.close(fd)  # as the transports do: the caller's descriptor is the caller's
    try:
        with open(tmp_path / "after", "w+") as f:  # the lowest free number: the one just closed
            imported.fill_(7)
            torch.ocl.synchronize()
            del imported  # the release: the driver closes the descriptor it holds
            torch.ocl.synchronize()
            f.write("intact")
            f.flush()  # OSError (bad file descriptor) where the release closed this file
            f.seek(0)
            assert f.read() == "intact"
    finally:
        cuda.free(ptr, handle, nbytes)
