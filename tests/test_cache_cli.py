"""`python -m pytorch_ocl cache export|import|warmup|info` (pytorch_ocl/cache.py): an export imported into an
empty cache makes a warm run that builds and tunes nothing; a corrupt, truncated, incomplete or foreign file
changes nothing in the cache it is imported into; entries of other devices are skipped with a message."""
import json
import shutil
import sqlite3

import pytest

# Kernels of several families (random fill, elementwise, reduction, GEMM tuned with two shape classes,
# a convolution) and the cache counters as JSON on the last line.
WORKLOAD = """
import json, torch, pytorch_ocl
torch.manual_seed(0)
x = torch.randn(64, 48, device="ocl")
y = ((x * 2 + 1).relu() @ torch.randn(48, 40, device="ocl")).sum(0)
z = torch.nn.functional.conv2d(torch.randn(2, 3, 8, 8, device="ocl"), torch.randn(4, 3, 3, 3, device="ocl"))
w = torch.randn(100, 200, device="ocl") @ torch.randn(200, 70, device="ocl")
out = {"y": y.cpu().tolist(), "z": float(z.sum()), "w": float(w.sum())}
out["stats"] = pytorch_ocl.program_cache_stats()
out["tune"] = pytorch_ocl.ops.autotune_stats()
print(json.dumps(out))
"""

# Imports FILE (argv[1]) through the CLI entry, then runs the workload in the same process.
IMPORT_THEN_RUN = """
import sys
from pytorch_ocl import cache
rc = cache.main(["import", sys.argv[1]])
print("rc", rc)
""" + WORKLOAD


def last_json(proc):
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cli(run_py, args, cache_dir, check=True):
    code = "import sys; from pytorch_ocl.__main__ import main; sys.exit(main(%r))" % (args,)
    return run_py(code, env={"PYTORCH_OCL_CACHE_DIR": str(cache_dir)}, check=check)


def cli_many(run_py, commands, cache_dir):
    """Runs several CLI commands in one process (one interpreter start); prints "== rc N" after each."""
    code = ("import sys\nfrom pytorch_ocl.__main__ import main\nfor args in %r:\n"
            "    rc = main(args)\n    sys.stdout.flush(); sys.stderr.flush()\n"
            "    print('== rc', rc, flush=True); print('== rc', rc, file=sys.stderr, flush=True)\n" % (commands,))
    proc = run_py(code, env={"PYTORCH_OCL_CACHE_DIR": str(cache_dir)})
    outs = proc.stdout.split("== rc ")[:-1]
    errs = proc.stderr.split("== rc ")[:-1]
    rcs = [int(o.split("\n", 1)[0]) for o in proc.stdout.split("== rc ")[1:]]
    # the text of command i is after the i-th marker's line
    texts = [o.split("\n", 1)[1] if i else o for i, o in enumerate(outs)]
    etexts = [e.split("\n", 1)[1] if i else e for i, e in enumerate(errs)]
    return list(zip(rcs, texts, etexts))


def rows(db):
    con = sqlite3.connect(db)
    try:
        return {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall()) for t in ("programs", "tuning")}
    finally:
        con.close()


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A cache filled by the workload, its export file, and the workload's result."""
    from conftest import run_python

    base = tmp_path_factory.mktemp("export")
    src = base / "src"
    cold = last_json(run_python(WORKLOAD, env={"PYTORCH_OCL_CACHE_DIR": str(src)}))
    assert cold["stats"]["builds"] > 0 and cold["tune"]["timed"] >= 1, cold
    path = base / "kernels.ocl-cache"
    proc = run_python("import sys; from pytorch_ocl.__main__ import main; sys.exit(main(%r))"
                      % (["cache", "export", str(path)],), env={"PYTORCH_OCL_CACHE_DIR": str(src)})
    assert "exported" in proc.stdout and path.is_file(), proc.stdout
    return {"src": src, "file": path, "cold": cold}


def test_round_trip_into_empty_cache_builds_nothing(run_py, tmp_path, exported):
    cold = exported["cold"]
    code = "import sys; sys.argv = ['x', %r]\n" % str(exported["file"]) + IMPORT_THEN_RUN
    proc = run_py(code, env={"PYTORCH_OCL_CACHE_DIR": str(tmp_path / "dst")})
    assert "rc 0" in proc.stdout and "imported" in proc.stdout, proc.stdout
    warm = last_json(proc)
    assert warm["stats"]["builds"] == 0, warm
    # the tuner's losing candidates were built cold but are not needed warm
    assert 0 < warm["stats"]["disk_hits"] <= cold["stats"]["builds"], (warm, cold)
    assert warm["tune"]["timed"] == 0 and warm["tune"]["loaded"] == cold["tune"]["timed"], (warm, cold)
    assert warm["y"] == cold["y"] and warm["z"] == cold["z"] and warm["w"] == cold["w"]


def test_import_twice_keeps_and_info_counts(run_py, tmp_path, exported):
    dst = tmp_path / "dst"
    f = str(exported["file"])
    (rc1, first, _), (rc2, again, _), (rc3, info, _) = cli_many(
        run_py, [["cache", "import", f], ["cache", "import", f], ["cache", "info"]], dst)
    assert rc1 == rc2 == rc3 == 0
    assert "imported" in first and "already present" not in first, first
    assert "imported 0 programs and 0 tuning results" in again and "already present, kept" in again, again
    assert rows(dst / "kernels.sqlite") == rows(exported["src"] / "kernels.sqlite")
    n = len(rows(exported["src"] / "kernels.sqlite")["programs"])
    assert f": {n} programs" in info, info


def damaged_copies(src, tmp):
    """(label, path) of broken variants of the export `src`."""
    out = []
    data = src.read_bytes()
    p = tmp / "truncated"
    p.write_bytes(data[: len(data) // 2])
    out.append(("truncated", p))
    p = tmp / "garbage"
    p.write_bytes(b"not a cache" * 100)
    out.append(("garbage", p))
    p = tmp / "flipped"
    shutil.copy(src, p)
    con = sqlite3.connect(p)
    key, blob = con.execute("SELECT key, binary FROM programs LIMIT 1").fetchone()
    blob = bytearray(blob)
    blob[len(blob) // 2] ^= 0xFF
    con.execute("UPDATE programs SET binary = ? WHERE key = ?", (bytes(blob), key))
    con.commit()
    con.close()
    out.append(("checksum", p))
    p = tmp / "partial"
    shutil.copy(src, p)
    con = sqlite3.connect(p)
    con.execute("DELETE FROM programs WHERE rowid IN (SELECT rowid FROM programs LIMIT 1)")
    con.commit()
    con.close()
    out.append(("incomplete", p))
    p = tmp / "other_format"
    shutil.copy(src, p)
    con = sqlite3.connect(p)
    con.execute("UPDATE manifest SET value = '99' WHERE name = 'format_version'")
    con.commit()
    con.close()
    out.append(("format", p))
    return out


def test_corrupt_import_changes_nothing(run_py, tmp_path, exported):
    dst = tmp_path / "dst"
    shutil.copytree(exported["src"], dst)
    # something of this cache's own that the export does not have
    con = sqlite3.connect(dst / "kernels.sqlite")
    con.execute("INSERT INTO tuning(key, value) VALUES('t1|mine|gemm|x', 'keep me')")
    con.commit()
    con.close()
    before = rows(dst / "kernels.sqlite")
    cases = damaged_copies(exported["file"], tmp_path)
    results = cli_many(run_py, [["cache", "import", str(path)] for _, path in cases], dst)
    for (label, _), (rc, out, err) in zip(cases, results):
        assert rc == 2, (label, out, err)
        assert "the cache was not changed" in err, (label, err)
    assert len(results) == len(cases)
    assert rows(dst / "kernels.sqlite") == before
    con = sqlite3.connect(dst / "kernels.sqlite")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()


def test_other_device_entries_skipped(run_py, tmp_path, exported):
    from pytorch_ocl import cache

    f = tmp_path / "foreign"
    shutil.copy(exported["file"], f)
    con = sqlite3.connect(f)
    ident = json.loads(dict(con.execute("SELECT name, value FROM manifest"))["identities"])[0]
    other = "Other Platform|Other GPU|Vendor|driver 1.0|OpenCL 3.0"
    # one program re-labelled as another device's, with a valid checksum
    key, _, blob, _ = con.execute("SELECT * FROM programs LIMIT 1").fetchone()
    con.execute("UPDATE programs SET identity = ?, sha256 = ? WHERE key = ?", (other, cache._digest(key, other, blob), key))
    con.commit()
    con.close()
    dst = tmp_path / "dst"
    proc = cli(run_py, ["cache", "import", str(f)], dst)
    assert f"skipped 1 entries for '{other}'" in proc.stdout, proc.stdout
    assert ident in proc.stdout  # names this machine's device
    got = rows(dst / "kernels.sqlite")
    assert key not in {k for k, _ in got["programs"]}
    assert len(got["programs"]) == len(rows(exported["src"] / "kernels.sqlite")["programs"]) - 1


def test_warmup_script_fills_cache(run_py, tmp_path):
    script = tmp_path / "step.py"
    script.write_text("import torch\nx = torch.randn(40, 30, device='ocl')\nprint(float((x @ x.t()).tanh().sum()))\n")
    cache_dir = tmp_path / "c"
    first = cli(run_py, ["cache", "warmup", str(script)], cache_dir)
    assert "warmup done" in first.stdout and " 0 programs built" not in first.stdout, first.stdout
    second = cli(run_py, ["cache", "warmup", str(script)], cache_dir)
    assert " 0 programs built" in second.stdout, second.stdout


def test_warmup_unknown_builtin():
    from pytorch_ocl import cache

    with pytest.raises(ValueError, match="unknown built-in network 'nosuchnet'"):
        cache.warmup(builtin=["nosuchnet"], progress=False)
