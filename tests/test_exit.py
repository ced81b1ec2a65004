"""Processes that end right after ocl work exit cleanly: status 0, no "terminate called" at interpreter exit.

A backward pass over ocl tensors runs on the autograd engine's ocl device thread, which may drop the pass's
GraphTask (it holds Python objects) just after the caller has returned. A script ending right after a backward pass
then sometimes aborted during interpreter finalization ("terminate called without an active exception", SIGABRT:
the device thread took the GIL then and CPython ended it inside a noexcept destructor). pytorch_ocl's atexit hook now
waits for the device threads first (csrc/python/AutogradExit.cpp). The race needs a busy CPU: the children run four
at a time. Without that wait (the hook unregistered in the child) 4 of 48 children aborted, in 2 of 3 batches of
this test's 16; with it 0 of 48. A loop of a similar script with one core kept busy: 36 of 300 before, 0 of 300 after.

That wait gives up after TORCH_AUTOGRAD_SHUTDOWN_WAIT_LIMIT (torch's limit for its own wait on these threads): a
backward pass stuck in a daemon thread at exit must not make the exit hang (without the limit it hung).

The program cache's background threads (speculative builds, binary writer) and build processes must not stop a
clean exit either: a child exits with speculative builds queued on a cold kernel cache (atexit waits for them; a
smoke test: it passed too, 4 of 4, with that wait removed, as Python's finalization outlasts these small builds).
"""
import subprocess
import sys

from conftest import REPO, _base_env

BACKWARD_THEN_EXIT = """
import torch, pytorch_ocl
x = torch.randn(40, 40, device="ocl", requires_grad=True)
w = torch.randn(40, 40, device="ocl", requires_grad=True)
for _ in range(3):
    (x @ w).relu().sum().backward()
"""

# The forward queues its backward's programs (speculative builds, on for the CPU device here); the process exits
# while they build.
BACKGROUND_BUILDS_THEN_EXIT = """
import torch, pytorch_ocl
x = torch.randn(40, 40, device="ocl", requires_grad=True)
y = torch.softmax(x @ x.t(), dim=1).sum()
"""


# A backward pass that never ends, run by a daemon thread: the ocl device thread stays inside a hook.
STUCK_BACKWARD_THEN_EXIT = """
import threading, torch, pytorch_ocl
started, never = threading.Event(), threading.Event()
def hook(grad):
    started.set()
    never.wait()
    return grad
def backward_forever():
    x = torch.randn(4, device="ocl", requires_grad=True)
    y = x * 2
    y.register_hook(hook)
    y.sum().backward()
threading.Thread(target=backward_forever, daemon=True).start()
started.wait()
"""


def run_children(code, rounds, parallel, env):
    """Runs `code` rounds x parallel times, `parallel` processes at a time; returns their stderr texts."""
    errs = []
    for r in range(rounds):
        children = [subprocess.Popen([sys.executable, "-c", code], env=env(r), cwd=REPO, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True) for _ in range(parallel)]
        for child in children:
            _, err = child.communicate(timeout=240)
            errs.append(err)
            assert child.returncode == 0 and "terminate called" not in err, (
                f"child {len(errs)} of {rounds * parallel} exited with status {child.returncode}:\n{err[-3000:]}")
    return errs


def test_exit_right_after_backward():
    env = _base_env()
    run_children(BACKWARD_THEN_EXIT, rounds=4, parallel=4, env=lambda r: env)


def test_exit_with_a_backward_pass_stuck_in_another_thread():
    # The wait for the device threads at exit gives up after torch's own limit for them (here 0.5 s): no hang.
    env = _base_env({"TORCH_AUTOGRAD_SHUTDOWN_WAIT_LIMIT": "0.5"})
    child = subprocess.run([sys.executable, "-c", STUCK_BACKWARD_THEN_EXIT], env=env, cwd=REPO, capture_output=True,
                           text=True, timeout=60)
    assert child.returncode == 0, child.stderr[-3000:]
    assert "still busy at exit" in child.stderr, child.stderr[-3000:]


def test_exit_with_background_builds_queued(tmp_path):
    def env(r):  # a cold kernel cache per round, so that every child has builds to queue
        return _base_env({"PYTORCH_OCL_CACHE_DIR": str(tmp_path / f"cache{r}"), "PYTORCH_OCL_SPECULATIVE_BUILDS": "1",
                          "PYTORCH_OCL_BUILD_THREADS": "2", "PYTORCH_OCL_BUILD_PROCESSES": "2",
                          "PYTORCH_OCL_TRACE_BUILDS": "1"})

    for err in run_children(BACKGROUND_BUILDS_THEN_EXIT, rounds=2, parallel=2, env=env):
        # background builds did run (most of them after the script's last line): the exit was not an idle one
        assert "in the background)" in err, f"no background build traced:\n{err[-3000:]}"
