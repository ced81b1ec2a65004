"""The kernel cache as a file to carry between machines, and a warm-up that fills it.

    python -m pytorch_ocl cache info
    python -m pytorch_ocl cache export FILE [--device N]
    python -m pytorch_ocl cache import FILE [--overwrite]
    python -m pytorch_ocl cache warmup [SCRIPT ...] [--builtin resnet18,gpt] [--device ocl:0]

The cache (PYTORCH_OCL_CACHE_DIR, else ~/.cache/pytorch_ocl: kernels.sqlite) holds program binaries and
autotuning decisions, both keyed by the device + driver identity (platform, device name, vendor, driver and
OpenCL versions; `pytorch_ocl._C.cache_identity(i)`). A binary is only valid for the identity it was built for,
so an export carries each row with its identity, and an import takes only the rows whose identity is a device
of this machine; the others are skipped with a message naming them.

The export file is itself an SQLite database (manifest, programs, tuning), each row with a SHA-256 of its
content. An import reads and checks the whole file first (SQLite integrity check, format, every checksum) and
then writes every row in one transaction: a corrupt, truncated or foreign file changes nothing, and rows already
in the cache are kept unless --overwrite. Binaries that a driver refuses later are rebuilt (the program cache
falls back to building from source), so an import can cost at most the time it meant to save.
"""
import argparse
import hashlib
import json
import os
import sqlite3
import sys
import time

FORMAT = "pytorch_ocl-kernel-cache"
FORMAT_VERSION = "1"

__all__ = ["cache_path", "device_identities", "export_cache", "import_cache", "warmup", "CacheImportError"]


class CacheImportError(RuntimeError):
    """The file cannot be imported (not an export, corrupt, truncated); the cache is unchanged."""


def _C():
    from . import _C as c

    return c


def cache_path():
    """The kernel cache database of this process (created with its tables on first use)."""
    return _C().disk_cache_path()


def device_identities():
    """Identity string per ocl device of this process (what cache rows are keyed by)."""
    import torch

    return [_C().cache_identity(i) for i in range(torch.ocl.device_count())]


def _digest(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()


def _tuning_identity(key, identities):
    """The identity a tuning key ("<version>|<identity>|family|class") belongs to, or None."""
    rest = key.split("|", 1)[1] if "|" in key else ""
    for ident in identities:
        if rest.startswith(ident + "|"):
            return ident
    return None


def _open_ro(path):
    return sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True)


def _cache_rows(db_path, identities):
    """(programs [(key, identity, binary)], tuning [(key, identity, value)]) of `identities` in the cache."""
    if not os.path.exists(db_path):
        return [], []
    con = _open_ro(db_path)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        programs, tuning = [], []
        if {"programs", "program_device"} <= tables:
            marks = ",".join("?" * len(identities))
            programs = con.execute(
                f"SELECT p.key, d.identity, p.binary FROM programs p JOIN program_device d ON p.key = d.key "
                f"WHERE d.identity IN ({marks})", identities).fetchall()
        if "tuning" in tables:
            for key, value in con.execute("SELECT key, value FROM tuning"):
                ident = _tuning_identity(key, identities)
                if ident is not None:
                    tuning.append((key, ident, value))
        return programs, tuning
    finally:
        con.close()


def export_cache(path, devices=None):
    """Writes the cache rows of `devices` (indices; default every ocl device) to the file `path`, atomically.
    Returns {"programs": n, "tuning": n, "identities": [...]}."""
    import pytorch_ocl

    idents = device_identities()
    if devices is not None:
        idents = [idents[i] for i in devices]
    idents = sorted(set(idents))
    if not idents:
        raise RuntimeError("no ocl device: nothing to export")
    _C().flush_program_cache()  # binaries of this process's builds still queued for the disk
    programs, tuning = _cache_rows(cache_path(), idents)
    tmp = f"{path}.tmp-{os.getpid()}"
    if os.path.exists(tmp):
        os.remove(tmp)
    con = sqlite3.connect(tmp)
    try:
        con.executescript(
            "CREATE TABLE manifest(name TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "CREATE TABLE programs(key TEXT PRIMARY KEY, identity TEXT NOT NULL, binary BLOB NOT NULL, sha256 TEXT NOT NULL);"
            "CREATE TABLE tuning(key TEXT PRIMARY KEY, identity TEXT NOT NULL, value TEXT NOT NULL, sha256 TEXT NOT NULL);")
        manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "pytorch_ocl": pytorch_ocl.__version__,
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "identities": json.dumps(idents),
                    "programs": str(len(programs)), "tuning": str(len(tuning))}
        con.executemany("INSERT INTO manifest VALUES(?, ?)", manifest.items())
        con.executemany("INSERT INTO programs VALUES(?, ?, ?, ?)",
                        [(k, i, b, _digest(k, i, bytes(b))) for k, i, b in programs])
        con.executemany("INSERT INTO tuning VALUES(?, ?, ?, ?)", [(k, i, v, _digest(k, i, v)) for k, i, v in tuning])
        con.commit()
    finally:
        con.close()
    os.replace(tmp, path)
    return {"programs": len(programs), "tuning": len(tuning), "identities": idents}


def _read_export(path):
    """Every row of an export file, checked; raises CacheImportError naming the first problem."""
    if not os.path.isfile(path):
        raise CacheImportError(f"{path}: no such file")
    try:
        con = _open_ro(path)
        try:
            check = con.execute("PRAGMA integrity_check").fetchone()[0]
            if check != "ok":
                raise CacheImportError(f"{path} is damaged (SQLite integrity check: {check})")
            manifest = dict(con.execute("SELECT name, value FROM manifest"))
            programs = con.execute("SELECT key, identity, binary, sha256 FROM programs").fetchall()
            tuning = con.execute("SELECT key, identity, value, sha256 FROM tuning").fetchall()
        finally:
            con.close()
    except sqlite3.DatabaseError as e:
        raise CacheImportError(f"{path} is not a readable pytorch_ocl cache export ({e})") from None
    if manifest.get("format") != FORMAT:
        raise CacheImportError(f"{path} is not a pytorch_ocl cache export (format {manifest.get('format')!r})")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise CacheImportError(f"{path} has export format {manifest.get('format_version')!r}; this pytorch_ocl "
                               f"reads {FORMAT_VERSION!r}")
    if str(len(programs)) != manifest.get("programs") or str(len(tuning)) != manifest.get("tuning"):
        raise CacheImportError(f"{path} is incomplete: the manifest lists {manifest.get('programs')} programs and "
                               f"{manifest.get('tuning')} tuning results, the file holds {len(programs)} and {len(tuning)}")
    bad = [k for k, i, b, d in programs if not b or _digest(k, i, bytes(b)) != d]
    bad += [k for k, i, v, d in tuning if _digest(k, i, v) != d]
    if bad:
        raise CacheImportError(f"{path} is corrupt: {len(bad)} rows fail their checksum (first: {bad[0]!r})")
    return manifest, programs, tuning


def import_cache(path, overwrite=False, log=print):
    """Adds the rows of export file `path` whose device identity is one of this process's devices to the cache.
    All or nothing: raises CacheImportError (cache unchanged) for a file that fails any check. Returns
    {"programs": added, "tuning": added, "present": rows already there, "skipped": {identity: rows}}."""
    import pytorch_ocl

    manifest, programs, tuning = _read_export(path)
    local = set(device_identities())
    skipped = {}
    for rows in (programs, tuning):
        for row in rows:
            if row[1] not in local:
                skipped[row[1]] = skipped.get(row[1], 0) + 1
    for ident, n in sorted(skipped.items()):
        log(f"skipped {n} entries for '{ident}': no device with this identity (device + driver) here")
    if skipped and local:
        log("this machine's devices: " + "; ".join(f"'{i}'" for i in sorted(local)))
    if manifest.get("pytorch_ocl") != pytorch_ocl.__version__:
        log(f"note: exported by pytorch_ocl {manifest.get('pytorch_ocl')}, this is {pytorch_ocl.__version__}: "
            "kernels that changed since will be rebuilt")
    db_path = cache_path()
    if not _C().disk_cache_usable():
        raise RuntimeError(f"the kernel cache {db_path} is not usable ({_C().disk_cache_warning()}); nothing imported")
    verb = "INSERT OR REPLACE" if overwrite else "INSERT OR IGNORE"
    added = {"programs": 0, "tuning": 0}
    con = sqlite3.connect(db_path, timeout=30, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            for key, ident, binary, _ in programs:
                if ident not in local:
                    continue
                cur = con.execute(f"{verb} INTO programs(key, binary) VALUES(?, ?)", (key, binary))
                if cur.rowcount > 0:
                    added["programs"] += 1
                con.execute("INSERT OR REPLACE INTO program_device(key, identity) VALUES(?, ?)", (key, ident))
            for key, ident, value, _ in tuning:
                if ident not in local:
                    continue
                cur = con.execute(f"{verb} INTO tuning(key, value) VALUES(?, ?)", (key, value))
                if cur.rowcount > 0:
                    added["tuning"] += 1
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        con.close()
    wanted = sum(1 for r in programs if r[1] in local) + sum(1 for r in tuning if r[1] in local)
    return {**added, "present": wanted - added["programs"] - added["tuning"], "skipped": skipped}


def warmup(scripts=(), builtin=("resnet18", "gpt"), device="ocl:0", progress=True):
    """Runs each built-in network's training step once (pytorch_ocl._warmup_models.BUILTIN) and each script
    (as __main__) on `device`, so that their programs are built and their shapes tuned into the cache.
    Returns the program cache counters after the runs."""
    import runpy

    import torch
    from tqdm import tqdm

    import pytorch_ocl
    from . import _warmup_models

    for name in builtin:
        if name not in _warmup_models.BUILTIN:
            raise ValueError(f"unknown built-in network {name!r}; choose from {sorted(_warmup_models.BUILTIN)}")
    jobs = [("builtin", n) for n in builtin] + [("script", s) for s in scripts]
    bar = tqdm(jobs, desc="warmup", unit="job", disable=not progress)
    dev = torch.device(device)
    for kind, what in bar:
        bar.set_postfix_str(os.path.basename(what))
        if kind == "builtin":
            _warmup_models.BUILTIN[what][1](dev)()
        else:
            argv = sys.argv
            sys.argv = [what]
            try:
                runpy.run_path(what, run_name="__main__")
            finally:
                sys.argv = argv
        torch.ocl.synchronize()
        s = pytorch_ocl.program_cache_stats()
        bar.set_postfix_str(f"{os.path.basename(what)}: {s['builds']} built, {s['disk_hits']} from cache")
    _C().flush_program_cache()
    return pytorch_ocl.program_cache_stats()


def _info(args):
    path = cache_path()
    print(f"kernel cache: {path}")
    if not os.path.exists(path):
        print("  (empty)")
        return 0
    print(f"  size {os.path.getsize(path) / 2**20:.1f} MiB")
    for i, ident in enumerate(device_identities()):
        programs, tuning = _cache_rows(path, [ident])
        print(f"  ocl:{i} '{ident}': {len(programs)} programs, {len(tuning)} tuning results")
    return 0


def _export(args):
    devices = None if args.device is None else [args.device]
    r = export_cache(args.file, devices)
    print(f"exported {r['programs']} programs and {r['tuning']} tuning results to {args.file}")
    for ident in r["identities"]:
        print(f"  device: '{ident}'")
    return 0


def _import(args):
    try:
        r = import_cache(args.file, overwrite=args.overwrite)
    except CacheImportError as e:
        print(f"error: {e}; the cache was not changed", file=sys.stderr)
        return 2
    print(f"imported {r['programs']} programs and {r['tuning']} tuning results into {cache_path()}"
          + (f" ({r['present']} already present{', replaced' if args.overwrite else ', kept'})" if r["present"] else ""))
    return 0


def _builtin_names():
    from ._warmup_models import BUILTIN

    return BUILTIN.keys()


def _warmup(args):
    # Scripts alone run without the built-in set unless --builtin asks for it too.
    if args.builtin is None:
        builtin = [] if args.scripts else list(_builtin_names())
    else:
        builtin = [b for b in args.builtin.split(",") if b]
    t0 = time.perf_counter()
    s = warmup(args.scripts, builtin, args.device)
    print(f"warmup done in {time.perf_counter() - t0:.1f} s: {s['builds']} programs built, {s['disk_hits']} "
          f"loaded from {cache_path()}")
    return 0


def main(argv):
    from ._warmup_models import BUILTIN

    ap = argparse.ArgumentParser(prog="python -m pytorch_ocl cache", description="The kernel cache: "
                                 "program binaries and autotuning results of this machine's devices.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="where the cache is and what it holds per device")
    p = sub.add_parser("export", help="write this machine's devices' binaries and tuning results to a file")
    p.add_argument("file")
    p.add_argument("--device", type=int, default=None, help="only ocl:N (default: every device)")
    p = sub.add_parser("import", help="add an export's entries for this machine's devices to the cache")
    p.add_argument("file")
    p.add_argument("--overwrite", action="store_true", help="replace entries already in the cache")
    p = sub.add_parser("warmup", help="run networks once to fill the cache (builds, tuning)")
    p.add_argument("scripts", nargs="*", help="Python scripts to run as __main__ (e.g. one training step)")
    p.add_argument("--builtin", default=None,
                   help=f"built-in networks, comma-separated, of {', '.join(BUILTIN)} (default: all of them when "
                   "no script is given, none otherwise)")
    p.add_argument("--device", default="ocl:0")
    args = ap.parse_args(argv)
    return {"info": _info, "export": _export, "import": _import, "warmup": _warmup}[args.cmd](args)
