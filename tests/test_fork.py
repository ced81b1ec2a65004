"""Using ocl in a forked child after the parent used it must raise RuntimeError (never hang).

Everything runs in a subprocess: the subprocess uses the device, then forks one child per
operation; a child that does not finish within CHILD_TIMEOUT seconds is killed and
reported as HANG.
"""
import json

import pytest

CHILD_TIMEOUT = 20  # a child's first OpenCL use (driver init, a build) takes seconds on a loaded GPU host

HARNESS = r"""
import json, os, signal, sys, time
import torch, pytorch_ocl

CHILD_TIMEOUT = %(timeout)d
SETUP = %(setup)r
OPS = %(ops)r

exec(SETUP)

def in_child(code):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            value = eval(code)
            res = {"status": "OK", "value": repr(value)}
        except BaseException as e:
            res = {"status": type(e).__name__, "value": str(e)[:300]}
        os.write(w, json.dumps(res).encode())
        os.close(w)
        os._exit(0)
    os.close(w)
    deadline = time.time() + CHILD_TIMEOUT
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.time() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return {"status": "HANG", "value": f"no result after {CHILD_TIMEOUT}s"}
        time.sleep(0.02)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    if not data:
        return {"status": "CRASH", "value": f"child exit status {status}"}
    return json.loads(data)

results = {code: in_child(code) for code in OPS}
# the parent is unaffected
check = (torch.ones(4).to("ocl") * 3).cpu().tolist() == [3.0] * 4
results["__parent__"] = {"status": "OK" if check and not torch.ocl._is_in_bad_fork() else "BROKEN", "value": ""}
print(json.dumps(results))
"""

USED_SETUP = """
x = torch.randn(4).to("ocl")
x_host = (x * 2).cpu()
"""

# operation in the child -> expected outcome ("raise" = RuntimeError naming the fork)
AFTER_USE = {
    "torch.ocl._is_in_bad_fork()": "True",
    "torch.ocl.device_count()": "count",
    "(torch.ones(3) * 2).sum().item()": "6.0",
    "torch.randn(2, device='ocl').cpu()": "raise",
    "torch.ones(2).to('ocl').cpu()": "raise",
    "torch.ones(2, device='ocl').cpu()": "raise",
    "torch.empty(2, device='ocl').fill_(1).cpu()": "raise",
    "torch.empty(1 << 20, device='ocl')": "raise",
    "x.cpu()": "raise",
    "x[0].item()": "raise",
    "(x + 1).cpu()": "raise",
    "x.sum().item()": "raise",
    "torch.ones(2).pin_memory()": "raise",
}


@pytest.fixture(scope="module")
def after_use_results():
    from conftest import run_python

    code = HARNESS % {"timeout": CHILD_TIMEOUT, "setup": USED_SETUP, "ops": list(AFTER_USE)}
    proc = run_python(code, timeout=60 + CHILD_TIMEOUT * len(AFTER_USE))
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("op", list(AFTER_USE))
def test_child_after_parent_used_device(after_use_results, op):
    import torch

    res = after_use_results[op]
    expected = AFTER_USE[op]
    if expected == "raise":
        assert res["status"] == "RuntimeError", f"{op} in a forked child: {res}"
        assert "fork" in res["value"]
    elif expected == "count":
        assert res["status"] == "OK" and res["value"] == str(torch.ocl.device_count())
    else:
        assert res == {"status": "OK", "value": expected}, res


def test_parent_unaffected_by_fork(after_use_results):
    assert after_use_results["__parent__"]["status"] == "OK"


def test_fork_before_any_use_works(run_py):
    # Only importing the package must not poison forked children.
    code = HARNESS % {
        "timeout": CHILD_TIMEOUT,
        "setup": "",
        "ops": ["torch.ocl._is_in_bad_fork()", "(torch.ones(3).to('ocl') * 2).cpu().tolist()"],
    }
    results = json.loads(run_py(code).stdout.strip().splitlines()[-1])
    assert results["torch.ocl._is_in_bad_fork()"] == {"status": "OK", "value": "False"}
    assert results["(torch.ones(3).to('ocl') * 2).cpu().tolist()"] == {"status": "OK", "value": "[2.0, 2.0, 2.0]"}
    assert results["__parent__"]["status"] == "OK"


def test_fork_after_device_count_only_does_not_hang(run_py):
    # The parent only queried the device count (no tensor, no context). A child that uses
    # the device must either work or raise RuntimeError; it must not hang.
    code = HARNESS % {
        "timeout": CHILD_TIMEOUT,
        "setup": "assert torch.ocl.device_count() >= 1\nassert torch.ocl.is_available()",
        "ops": ["(torch.ones(3).to('ocl') * 2).cpu().tolist()"],
    }
    results = json.loads(run_py(code).stdout.strip().splitlines()[-1])
    res = results["(torch.ones(3).to('ocl') * 2).cpu().tolist()"]
    assert res == {"status": "OK", "value": "[2.0, 2.0, 2.0]"} or (
        res["status"] == "RuntimeError" and "fork" in res["value"]), res
    assert results["__parent__"]["status"] == "OK"


def test_multiprocessing_fork_child_raises(run_py):
    proc = run_py(
        """
        import multiprocessing as mp
        import torch, pytorch_ocl

        def work(q):
            try:
                y = (torch.ones(3).to("ocl") * 2).cpu().tolist()
                q.put(("OK", str(y)))
            except Exception as e:
                q.put((type(e).__name__, str(e)))

        if __name__ == "__main__":
            x = torch.randn(3).to("ocl") + 1
            ctx = mp.get_context("fork")
            q = ctx.Queue()
            p = ctx.Process(target=work, args=(q,))
            p.start()
            p.join(%d)
            if p.is_alive():
                p.kill()
                p.join()
                print("HANG")
            else:
                status, msg = q.get(timeout=5)
                print(status, "fork" in msg)
            print("PARENT", (x - 1).cpu().shape == (3,))
        """ % CHILD_TIMEOUT,
        as_file=True,
    )
    lines = proc.stdout.splitlines()
    assert lines[0] == "RuntimeError True", proc.stdout
    assert lines[1] == "PARENT True"


def test_multiprocessing_spawn_child_works(run_py):
    proc = run_py(
        """
        import multiprocessing as mp
        import torch, pytorch_ocl

        def work(q):
            q.put((torch.tensor([1.0, 2.0]).to("ocl") * 2).cpu().tolist())

        if __name__ == "__main__":
            x = torch.randn(3).to("ocl") + 1
            ctx = mp.get_context("spawn")
            q = ctx.Queue()
            p = ctx.Process(target=work, args=(q,))
            p.start()
            print(q.get(timeout=60))
            p.join(60)
            print(p.exitcode)
        """,
        as_file=True,
    )
    assert proc.stdout.splitlines() == ["[2.0, 4.0]", "0"]
