"""OpenCL program cache: warm start from the on-disk cache, corrupt and unusable cache files."""
import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import torch
from torch.testing import assert_close

import pytorch_ocl

from conftest import _base_env

# A few kernels (random fill, elementwise, reduction, conversion): prints the results and
# the cache counters as JSON on the last line.
WORKLOAD = """
import json, warnings
import torch, pytorch_ocl
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.manual_seed(0)
    x = torch.randn(64, 33, device="ocl")
    y = (x * 2 + 1) / 3
    s = y.sum(1)
    h = y.to(torch.float16)
    result = {
        "x": x.cpu().tolist(),
        "s": s.cpu().tolist(),
        "h": h.cpu().float().tolist(),
    }
result["stats"] = pytorch_ocl.program_cache_stats()
result["warnings"] = [str(w.message) for w in caught]
result["path"] = pytorch_ocl._C.disk_cache_path()
result["usable"] = pytorch_ocl._C.disk_cache_usable()
result["warning"] = pytorch_ocl._C.disk_cache_warning()
print(json.dumps(result))
"""


def run_workload(run_py, cache_dir):
    proc = run_py(WORKLOAD, env={"PYTORCH_OCL_CACHE_DIR": str(cache_dir)})
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc


def expected_from(result):
    x = torch.tensor(result["x"])
    y = (x * 2 + 1) / 3
    return {"s": y.sum(1), "h": y.to(torch.float16).float()}


def check_results(result):
    exp = expected_from(result)
    assert_close(torch.tensor(result["s"]), exp["s"], rtol=1e-5, atol=1e-4)
    assert_close(torch.tensor(result["h"]), exp["h"], rtol=0, atol=0)
    # the same seed gives the same numbers as this process
    torch.manual_seed(0)
    assert_close(torch.tensor(result["x"]), torch.randn(64, 33, device="ocl").cpu(), rtol=0, atol=0)


def test_disk_cache_compiled_in():
    assert pytorch_ocl._C.disk_cache_compiled is True
    assert pytorch_ocl._C.disk_cache_path().endswith("kernels.sqlite")


def test_stats_shape():
    stats = pytorch_ocl.program_cache_stats()
    assert {"builds", "disk_hits", "build_seconds", "load_seconds", "binary_seconds"} <= set(stats)
    assert all(isinstance(stats[k], int) and stats[k] >= 0 for k in ("builds", "disk_hits"))
    assert all(isinstance(stats[k], float) and stats[k] >= 0 for k in ("build_seconds", "load_seconds", "binary_seconds"))


def test_warm_start_builds_nothing(run_py, tmp_path):
    cache = tmp_path / "cache"
    cold, _ = run_workload(run_py, cache)
    assert cold["path"] == str(cache / "kernels.sqlite")
    assert cold["usable"] is True
    assert cold["stats"]["builds"] > 0
    assert cold["stats"]["disk_hits"] == 0
    assert (cache / "kernels.sqlite").is_file()
    check_results(cold)

    warm, _ = run_workload(run_py, cache)
    assert warm["stats"]["builds"] == 0, warm["stats"]
    assert warm["stats"]["disk_hits"] == cold["stats"]["builds"]
    assert warm["warnings"] == []
    assert warm["x"] == cold["x"] and warm["s"] == cold["s"] and warm["h"] == cold["h"]
    check_results(warm)


def test_nested_cache_dir_is_created(run_py, tmp_path):
    cache = tmp_path / "a" / "b" / "c"
    result, _ = run_workload(run_py, cache)
    assert (cache / "kernels.sqlite").is_file()
    assert result["usable"] is True
    check_results(result)


def test_corrupt_db_is_moved_aside(run_py, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    db = cache / "kernels.sqlite"
    garbage = b"this is not a database\n" + bytes(range(256)) * 20
    db.write_bytes(garbage)
    result, proc = run_workload(run_py, cache)
    text = " ".join(result["warnings"]) + proc.stderr
    assert "cache" in text and "kernels.sqlite" in text, text
    assert "corrupt" in text or "unreadable" in text or "unusable" in text
    check_results(result)
    assert (cache / "kernels.sqlite.corrupt").read_bytes() == garbage
    assert result["usable"] is True
    # the fresh database serves the next process
    again, _ = run_workload(run_py, cache)
    assert again["stats"]["builds"] == 0
    assert again["warnings"] == []
    check_results(again)


def test_truncated_db_recovers(run_py, tmp_path):
    cache = tmp_path / "cache"
    run_workload(run_py, cache)
    db = cache / "kernels.sqlite"
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])
    result, proc = run_workload(run_py, cache)
    check_results(result)
    text = " ".join(result["warnings"]) + proc.stderr
    assert "cache" in text, "a damaged cache must be reported"
    again, _ = run_workload(run_py, cache)
    assert again["stats"]["builds"] == 0
    check_results(again)


def test_locked_db_write_failure_names_its_cause(run_py, tmp_path):
    """Another process holding the cache's write lock past the busy timeout (10 s): the process computes on, and
    its one warning names the cause ("database is locked"), not the failed clean-up after it ("cannot rollback -
    no transaction is active", as a process on the 2-GPU H200 host once reported)."""
    cache = tmp_path / "cache"
    run_workload(run_py, cache)  # the database exists, with the workload's programs
    con = sqlite3.connect(cache / "kernels.sqlite", timeout=0)
    con.execute("BEGIN IMMEDIATE")  # the write lock; readers go on
    try:
        proc = run_py(WORKLOAD.replace("x * 2 + 1", "x * 5 - 1"),  # new programs to store, stored by this process
                      env={"PYTORCH_OCL_CACHE_DIR": str(cache), "PYTORCH_OCL_BINARY_WORKER": "0"})
    finally:
        con.rollback()
        con.close()
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    text = " ".join(result["warnings"]) + result["warning"] + proc.stderr
    assert "database is locked" in text and "cannot rollback" not in text, text
    x = torch.tensor(result["x"])
    assert_close(torch.tensor(result["s"]), ((x * 5 - 1) / 3).sum(1), rtol=1e-5, atol=1e-4)


def test_db_locked_at_open_is_left_in_place(run_py, tmp_path):
    """A cache another process holds exclusively past the busy timeout (10 s) when this one opens it: this process
    runs without the disk cache and says why, and the file stays where it is (moving it aside, as a corrupt file is,
    gave the processes still using it I/O errors), so the next process starts warm."""
    cache = tmp_path / "cache"
    run_workload(run_py, cache)
    con = sqlite3.connect(cache / "kernels.sqlite", timeout=0)
    con.execute("BEGIN EXCLUSIVE")  # readers wait too
    try:
        locked, proc = run_workload(run_py, cache)
    finally:
        con.rollback()
        con.close()
    text = " ".join(locked["warnings"]) + locked["warning"] + proc.stderr
    assert "database is locked" in text and "SQLite code 5/" in text, text
    assert locked["usable"] is False
    check_results(locked)
    assert not (cache / "kernels.sqlite.corrupt").exists()
    warm, _ = run_workload(run_py, cache)
    assert warm["usable"] is True and warm["stats"]["builds"] == 0
    check_results(warm)


def test_garbage_binaries_in_valid_db_are_rebuilt(run_py, tmp_path):
    cache = tmp_path / "cache"
    cold, _ = run_workload(run_py, cache)
    con = sqlite3.connect(cache / "kernels.sqlite")
    con.execute("UPDATE programs SET binary = x'00112233445566778899'")
    con.commit()
    con.close()
    result, _ = run_workload(run_py, cache)
    assert result["stats"]["builds"] == cold["stats"]["builds"]
    check_results(result)
    healed, _ = run_workload(run_py, cache)
    assert healed["stats"]["builds"] == 0
    check_results(healed)


def test_unusable_cache_location_warns_and_works(run_py, tmp_path):
    # Tests run as root, so permissions cannot make a directory read-only: put the cache
    # "directory" under a regular file, where it can never be created.
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    cache = blocker / "sub"
    result, proc = run_workload(run_py, cache)
    text = " ".join(result["warnings"]) + proc.stderr
    assert "cache" in text and str(cache) in text, text
    assert result["usable"] is False
    assert "cache" in result["warning"]
    assert result["stats"]["builds"] > 0
    check_results(result)
    assert blocker.read_text() == "x"


def test_concurrent_cold_start_same_cache(tmp_path):
    cache = tmp_path / "cache"
    env = _base_env({"PYTORCH_OCL_CACHE_DIR": str(cache)})
    procs = [
        subprocess.Popen([sys.executable, "-c", textwrap.dedent(WORKLOAD)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=180) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        result = json.loads(out.strip().splitlines()[-1])
        check_results(result)
    con = sqlite3.connect(cache / "kernels.sqlite")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert con.execute("SELECT count(*) FROM programs").fetchone()[0] > 0
    con.close()


def test_in_process_reuse_builds_and_loads_nothing():
    a = torch.randn(100, device="ocl")
    b = a * 3 + 2
    b.sum().item()
    before = pytorch_ocl.program_cache_stats()
    for _ in range(3):
        c = torch.randn(100, device="ocl")
        d = c * 3 + 2
        d.sum().item()
    after = pytorch_ocl.program_cache_stats()
    assert after["builds"] == before["builds"]
    assert after["disk_hits"] == before["disk_hits"]
    assert_close(b.cpu(), a.cpu() * 3 + 2)
    assert_close(d.cpu(), c.cpu() * 3 + 2)


def test_cache_dir_env_respected_for_default(run_py, tmp_path):
    proc = run_py(
        "import pytorch_ocl; print(pytorch_ocl._C.disk_cache_path())",
        env={"PYTORCH_OCL_CACHE_DIR": None, "XDG_CACHE_HOME": str(tmp_path / "xdg")},
    )
    assert proc.stdout.strip() == os.path.join(str(tmp_path / "xdg"), "pytorch_ocl", "kernels.sqlite")


# The database's descriptor broken from outside after the first programs are stored (every read of it now fails:
# it reads a directory), then new programs looked up, built and stored.
BROKEN_DESCRIPTOR = """
import json, os, warnings
import torch, pytorch_ocl
db = os.path.realpath(pytorch_ocl._C.disk_cache_path())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.manual_seed(0)
    x = torch.randn(64, 33, device="ocl")
    (x * 2 + 1).cpu()
    pytorch_ocl._C.flush_program_cache()
    if os.environ.get("BREAK_CACHE_FD") == "1":
        broken = [int(f) for f in os.listdir("/proc/self/fd")
                  if os.path.realpath(f"/proc/self/fd/{f}") == db]
        assert broken, "the cache's database is not open"
        directory = os.open("/", os.O_RDONLY)
        for f in broken:
            os.dup2(directory, f)
    s = (x.sin() * 3).sum(1)
    c = x.cos()
    result = {"x": x.cpu().tolist(), "s": s.cpu().tolist(), "c": c.cpu().tolist()}
    pytorch_ocl._C.flush_program_cache()
result["stats"] = pytorch_ocl.program_cache_stats()
result["warnings"] = [str(w.message) for w in caught]
result["usable"] = pytorch_ocl._C.disk_cache_usable()
print(json.dumps(result))
"""


def test_descriptor_broken_under_the_cache_reopens_it(run_py, tmp_path):
    """SQLite's descriptor broken from outside (a driver once closed ours: the 2-GPU runs' "kernel cache read failed
    (disk I/O error)" on every op): the cache opens the file again, once, with one warning, and goes on reading and
    storing; the next process starts warm."""
    env = {"PYTORCH_OCL_CACHE_DIR": str(tmp_path / "cache")}
    proc = run_py(BROKEN_DESCRIPTOR, env={**env, "BREAK_CACHE_FD": "1"})
    broken = json.loads(proc.stdout.strip().splitlines()[-1])
    cache_warnings = [w for w in broken["warnings"] if "cache" in w]
    assert len(cache_warnings) == 1 and "reopened" in cache_warnings[0], broken["warnings"]
    assert broken["usable"] is True
    x = torch.tensor(broken["x"])
    assert_close(torch.tensor(broken["s"]), (x.sin() * 3).sum(1), rtol=1e-5, atol=1e-4)
    assert_close(torch.tensor(broken["c"]), x.cos(), rtol=1e-5, atol=1e-5)
    warm = json.loads(run_py(BROKEN_DESCRIPTOR, env=env).stdout.strip().splitlines()[-1])
    assert warm["stats"]["builds"] == 0 and warm["warnings"] == [], warm
