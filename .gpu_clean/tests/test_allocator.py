"""Caching device allocator: reuse, statistics, empty_cache, OOM and recovery."""
import gc

import pytest
import torch
from torch.testing import assert_close

MiB = 1 << 20


def _clean():
    gc.collect()
    torch.ocl.synchronize()
    torch.ocl.empty_cache()


def test_reuse_same_size_does_not_grow_reserved():
    _clean()
    n = 3 * MiB // 4  # 3 MiB of float32: a large-pool block
    a = torch.empty(n, device="ocl")
    reserved = torch.ocl.memory_reserved()
    assert reserved >= 3 * MiB
    del a
    for _ in range(5):
        b = torch.empty(n, device="ocl")
        assert torch.ocl.memory_reserved() == reserved
        del b
    # small pool too
    s = torch.empty(100, device="ocl")
    r_small = torch.ocl.memory_reserved()
    del s
    for _ in range(5):
        s = torch.empty(100, device="ocl")
        assert torch.ocl.memory_reserved() == r_small
        del s


def test_reused_block_holds_new_values():
    _clean()
    a = torch.full((1 << 18,), 3.0, device="ocl")
    del a
    b = torch.full((1 << 18,), -1.5, device="ocl")
    assert_close(b.cpu(), torch.full((1 << 18,), -1.5))


def test_memory_allocated_tracks_tensors():
    _clean()
    base = torch.ocl.memory_allocated()
    x = torch.empty(1000, dtype=torch.float32, device="ocl")
    after = torch.ocl.memory_allocated()
    assert after - base >= 4000
    assert after - base < 4000 + 1024  # rounded to the allocator's granularity only
    y = torch.empty(2 * MiB, dtype=torch.uint8, device="ocl")
    assert torch.ocl.memory_allocated() - after >= 2 * MiB
    del x, y
    assert torch.ocl.memory_allocated() == base


def test_memory_stats_keys_and_consistency():
    _clean()
    x = torch.empty(5 * MiB, dtype=torch.uint8, device="ocl")
    stats = torch.ocl.memory_stats()
    for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.current",
                "reserved_bytes.all.peak", "active_bytes.all.current", "segment.all.current",
                "allocation.all.current", "num_ooms", "num_alloc_retries", "requested_bytes.all.current",
                "allocated_bytes.small_pool.current", "allocated_bytes.large_pool.current"):
        assert key in stats, key
    assert stats["allocated_bytes.all.current"] == torch.ocl.memory_allocated()
    assert stats["reserved_bytes.all.current"] == torch.ocl.memory_reserved()
    assert stats["allocated_bytes.all.peak"] == torch.ocl.max_memory_allocated()
    assert stats["reserved_bytes.all.peak"] == torch.ocl.max_memory_reserved()
    assert stats["reserved_bytes.all.current"] >= stats["allocated_bytes.all.current"]
    assert (stats["allocated_bytes.small_pool.current"] + stats["allocated_bytes.large_pool.current"]
            == stats["allocated_bytes.all.current"])
    assert stats["requested_bytes.all.current"] <= stats["allocated_bytes.all.current"]
    assert torch.ocl.memory_stats(0) == torch.ocl.memory_stats("ocl:0")
    del x


def test_peak_and_reset_peak():
    _clean()
    torch.ocl.reset_peak_memory_stats()
    base = torch.ocl.memory_allocated()
    x = torch.empty(8 * MiB, dtype=torch.uint8, device="ocl")
    del x
    assert torch.ocl.max_memory_allocated() >= base + 8 * MiB
    assert torch.ocl.memory_allocated() == base
    torch.ocl.reset_peak_memory_stats()
    assert torch.ocl.max_memory_allocated() == base
    assert torch.ocl.max_memory_reserved() == torch.ocl.memory_reserved()


def test_empty_cache_lowers_reserved():
    _clean()
    x = torch.empty(16 * MiB, dtype=torch.uint8, device="ocl")
    held = torch.ocl.memory_reserved()
    del x
    assert torch.ocl.memory_reserved() == held  # cached, not returned
    torch.ocl.empty_cache()
    assert torch.ocl.memory_reserved() <= held - 16 * MiB


def test_empty_cache_keeps_live_tensors_valid():
    _clean()
    cpu = torch.randn(1 << 16)
    keep = cpu.to("ocl")
    junk = torch.empty(4 * MiB, dtype=torch.uint8, device="ocl")
    del junk
    torch.ocl.empty_cache()
    assert_close(keep.cpu(), cpu)
    assert torch.ocl.memory_allocated() >= keep.numel() * 4


def test_accelerator_memory_api():
    _clean()
    x = torch.empty(3 * MiB, dtype=torch.uint8, device="ocl")
    assert torch.accelerator.memory_allocated() == torch.ocl.memory_allocated()
    assert torch.accelerator.memory_reserved() == torch.ocl.memory_reserved()
    assert torch.accelerator.max_memory_allocated() >= torch.accelerator.memory_allocated()
    stats = torch.accelerator.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.ocl.memory_allocated()
    held = torch.ocl.memory_reserved()
    del x
    torch.accelerator.empty_cache()
    assert torch.ocl.memory_reserved() <= held - 3 * MiB


def test_many_sizes_values_survive_splitting():
    _clean()
    sizes = [1, 7, 129, 1000, 4097, 70000, 300000, 1 << 20]
    cpus = [torch.randn(n) for n in sizes]
    devs = [c.to("ocl") for c in cpus]
    # free every other tensor, then allocate different sizes into the holes
    for i in range(0, len(devs), 2):
        devs[i] = None
    fresh_cpu = [torch.randn(n // 2 + 1) for n in sizes]
    fresh = [c.to("ocl") for c in fresh_cpu]
    for i in range(1, len(devs), 2):
        assert_close(devs[i].cpu(), cpus[i])
    for c, d in zip(fresh_cpu, fresh):
        assert_close(d.cpu(), c)


def test_zero_size_allocation():
    x = torch.empty(0, device="ocl")
    assert x.numel() == 0
    assert x.cpu().shape == (0,)
    y = torch.empty((3, 0, 2), device="ocl", dtype=torch.int64)
    assert y.cpu().shape == (3, 0, 2)


def test_device_index_out_of_range_is_an_error():
    with pytest.raises((IndexError, RuntimeError)) as info:
        torch.empty(1, device="ocl:7")
    msg = str(info.value)
    assert "7" in msg and "out of range" in msg
    with pytest.raises((IndexError, RuntimeError), match="out of range"):
        torch.zeros(2, 2).to("ocl:7")
    with pytest.raises((IndexError, RuntimeError), match="out of range"):
        torch.randn(2, device="ocl:7")
    # the process is still healthy
    assert_close(torch.ones(2, device="ocl").cpu(), torch.ones(2))


def test_oom_and_recovery_with_memory_limit(run_py):
    proc = run_py(
        """
        import gc, torch, pytorch_ocl
        MiB = 1 << 20
        a = torch.ones(40 * MiB // 4, device="ocl")   # 40 MiB of the 64 MiB limit
        try:
            b = torch.empty(40 * MiB // 4, device="ocl")
            print("NO-OOM")
        except torch.OutOfMemoryError as e:
            print("OOM-TYPE", type(e).__name__, isinstance(e, RuntimeError))
            print("OOM-MSG", str(e).replace("\\n", " "))
        print("NUM-OOMS", torch.ocl.memory_stats()["num_ooms"])
        # the tensor that fit is intact
        print("A-OK", bool((a.cpu() == 1).all()))
        del a
        gc.collect()
        torch.ocl.empty_cache()
        b = torch.full((40 * MiB // 4,), 2.0, device="ocl")
        print("RECOVERED", float(b.sum().item()))
        # without empty_cache: freeing is enough, the allocator retries after releasing its cache
        del b
        c = torch.full((20 * MiB // 4,), 1.0, device="ocl")
        d = torch.full((20 * MiB // 4,), 1.0, device="ocl")
        del c, d
        e = torch.full((50 * MiB // 4,), 3.0, device="ocl")
        print("RETRY-OK", float(e[:10].sum().item()))
        """,
        env={"PYTORCH_OCL_MEMORY_LIMIT": str(64 << 20)},
    )
    out = {line.split(" ", 1)[0]: line.split(" ", 1)[1] if " " in line else "" for line in proc.stdout.splitlines()}
    assert "NO-OOM" not in out, proc.stdout
    assert out["OOM-TYPE"] == "OutOfMemoryError True"
    msg = out["OOM-MSG"]
    assert "MiB" in msg and "device 0" in msg
    assert "40" in msg  # the requested size
    assert int(out["NUM-OOMS"]) >= 1
    assert out["A-OK"] == "True"
    assert float(out["RECOVERED"]) == 2.0 * 40 * (1 << 20) / 4
    assert float(out["RETRY-OK"]) == 30.0


def test_oom_larger_than_limit_single_allocation(run_py):
    proc = run_py(
        """
        import torch, pytorch_ocl
        try:
            torch.empty(100 << 20, dtype=torch.uint8, device="ocl")
            print("NO-OOM")
        except torch.OutOfMemoryError as e:
            print("OOM", str(e).replace("\\n", " "))
        x = torch.ones(1000, device="ocl")
        print("AFTER", float(x.sum().item()))
        """,
        env={"PYTORCH_OCL_MEMORY_LIMIT": str(32 << 20)},
    )
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("OOM "), proc.stdout
    assert "100" in lines[0] and "MiB" in lines[0] and "device 0" in lines[0]
    assert lines[1] == "AFTER 1000.0"


def test_bad_memory_limit_env_is_reported(run_py):
    proc = run_py(
        """
        import torch, pytorch_ocl
        try:
            torch.empty(10, device="ocl")
            print("NO-ERROR")
        except Exception as e:
            print("ERR", type(e).__name__, e)
        """,
        env={"PYTORCH_OCL_MEMORY_LIMIT": "lots"},
    )
    assert proc.stdout.startswith("ERR"), proc.stdout
    assert "PYTORCH_OCL_MEMORY_LIMIT" in proc.stdout


def test_random_churn_then_everything_released(run_py):
    proc = run_py(
        """
        import gc, random, torch, pytorch_ocl
        random.seed(0)
        cpu_ref, live = [], []
        for i in range(400):
            n = random.choice([1, 100, 1000, 50000, 300000, 1 << 20, 3 << 20])
            live.append((torch.full((n,), i % 251, dtype=torch.uint8, device="ocl"), i % 251))
            if len(live) > 16:
                live.pop(random.randrange(len(live)))
        ok = all(bool((t.cpu() == v).all()) for t, v in live)
        s = torch.ocl.memory_stats()
        print("VALUES", ok)
        print("BOUNDED", s["reserved_bytes.all.peak"] < 200 << 20)
        del live
        gc.collect()
        s = torch.ocl.memory_stats()
        print("FREED", s["allocated_bytes.all.current"], s["allocation.all.current"], s["active.all.current"],
              s["active_bytes.all.current"], s["requested_bytes.all.current"])
        torch.ocl.empty_cache()
        s = torch.ocl.memory_stats()
        print("RELEASED", s["reserved_bytes.all.current"], s["segment.all.current"], s["inactive_split.all.current"],
              s["inactive_split_bytes.all.current"])
        torch.ocl.reset_accumulated_memory_stats()
        s = torch.ocl.memory_stats()
        print("ACCUMULATED", s["allocation.all.allocated"], s["allocation.all.freed"], s["num_alloc_retries"], s["num_ooms"])
        """
    )
    lines = proc.stdout.splitlines()
    assert lines == ["VALUES True", "BOUNDED True", "FREED 0 0 0 0 0", "RELEASED 0 0 0 0", "ACCUMULATED 0 0 0 0"], lines
