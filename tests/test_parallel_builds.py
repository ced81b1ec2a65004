"""Concurrent program builds (dlprim::parallel_builds, the program cache's per-program locks): many distinct
programs built at once give the same kernels as built one by one, a program asked for by several threads
is built once, a failed build is reported (again, without rebuilding) and does not stop the others, and the
GEMM tuner, which builds all its candidates at once, still picks working configs."""
import json
import uuid

import pytest
import torch
from torch.testing import assert_close

import pytorch_ocl

SRC = """
__kernel void fill_{tag}(__global float* y, ulong y_off, float a) {{
    size_t i = get_global_id(0);
    y[y_off + i] = a * (float)i + {const}.0f;
}}
"""


def kernels(n, tag):
    # a fresh tag per test run: nothing of these is in any disk cache yet
    return [pytorch_ocl.Kernel(SRC.format(tag=f"{tag}_{i}", const=i), f"fill_{tag}_{i}") for i in range(n)]


def outputs(ks):
    out = []
    for k in ks:
        y = torch.empty(64, device="ocl")
        k(y, 2.0, global_size=64)
        out.append(y.cpu())
    return out


def expected(i):
    return 2.0 * torch.arange(64, dtype=torch.float32) + i


def test_concurrent_builds_match_sequential(monkeypatch):
    tag = uuid.uuid4().hex[:8]
    par = kernels(8, "p" + tag)
    seq = kernels(8, "s" + tag)
    # background builds of earlier tests in this process (speculative tuning candidates) count too: let them finish
    pytorch_ocl._C.flush_program_cache()
    before = pytorch_ocl.program_cache_stats()
    # each kernel twice in one batch: the second request waits for the first build
    pytorch_ocl.build_kernels(par + par)
    mid = pytorch_ocl.program_cache_stats()
    assert mid["builds"] - before["builds"] == 8, (before, mid)
    monkeypatch.setenv("PYTORCH_OCL_BUILD_THREADS", "1")
    assert pytorch_ocl._C.build_threads() == 1
    pytorch_ocl.build_kernels(seq)
    after = pytorch_ocl.program_cache_stats()
    assert after["builds"] - mid["builds"] == 8
    monkeypatch.delenv("PYTORCH_OCL_BUILD_THREADS")
    for i, (a, b) in enumerate(zip(outputs(par), outputs(seq))):
        assert_close(a, expected(i), rtol=0, atol=0)
        assert_close(a, b, rtol=0, atol=0)
    # already built: nothing more to build
    pytorch_ocl.build_kernels(par)
    assert pytorch_ocl.program_cache_stats()["builds"] == after["builds"]


def test_failed_build_reported_once_others_built():
    tag = uuid.uuid4().hex[:8]
    good = kernels(3, "g" + tag)
    bad = pytorch_ocl.Kernel("__kernel void broken_%s(__global float* y) { y[0] = undefined_name; }" % tag,
                             f"broken_{tag}")
    with pytest.raises(RuntimeError, match=f"1 of 4 kernels failed to build:\nKernel 'broken_{tag}'"):
        pytorch_ocl.build_kernels([good[0], bad, good[1], good[2]])
    builds = pytorch_ocl.program_cache_stats()["builds"]
    # the failure is remembered: asking again raises without another compile
    with pytest.raises(RuntimeError, match="undefined_name"):
        bad.build()
    assert pytorch_ocl.program_cache_stats()["builds"] == builds
    for i, y in enumerate(outputs(good)):
        assert_close(y, expected(i), rtol=0, atol=0)


def test_build_threads_default():
    assert 1 <= pytorch_ocl._C.build_threads() <= 64


TUNE = """
import json, torch, pytorch_ocl
torch.manual_seed(0)
out = {"err": []}
for m, n, k in [(96, 80, 72), (200, 130, 300)]:
    a, b = torch.randn(m, k), torch.randn(k, n)
    got = (a.to("ocl") @ b.to("ocl")).cpu()
    out["err"].append(float((got - a @ b).abs().max()))
out["err"].append(float((torch.ones(8).to("ocl") * 3).sum()) - 24)  # an elementwise and a reduction program
out["stats"] = pytorch_ocl.program_cache_stats()
out["tune"] = pytorch_ocl.ops.autotune_stats()
(torch.randn(96, 72).to("ocl") @ torch.randn(72, 80).to("ocl")).cpu()  # the same ops again: built and tuned
float((torch.ones(8).to("ocl") * 3).sum())
out["again"] = pytorch_ocl.program_cache_stats()
print(json.dumps(out))
"""


def test_gemm_tuning_builds_candidates_in_parallel(run_py, tmp_path):
    # (one build thread: every other test of the suite on a 1-core machine; the kernels built are the same)
    proc = run_py(TUNE, env={"PYTORCH_OCL_CACHE_DIR": str(tmp_path), "PYTORCH_OCL_AUTOTUNE": "force",
                             "PYTORCH_OCL_BUILD_THREADS": "4", "PYTORCH_OCL_WGMMA": "0"})  # tiled kernels' tuning
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert max(r["err"]) < 1e-3, r
    assert r["tune"]["timed"] >= 2, r
    assert r["stats"]["builds"] >= 4, r  # every CPU candidate of a class built
    # the op's thread waited for the candidates' builds side by side and for its own programs (elementwise,
    # reduction), and nothing more once all are built
    assert r["stats"]["wait_parallel_seconds"] > 0 and r["stats"]["wait_program_seconds"] > 0, r
    for k in ("wait_parallel_seconds", "wait_program_seconds"):
        assert r["again"][k] == r["stats"][k], r


ATTN = """
import json, torch, pytorch_ocl, torch.nn.functional as F
torch.manual_seed(0)
q, k, v = (torch.randn(2, 3, 40, 16) for _ in range(3))
qo, ko, vo = (t.to("ocl").requires_grad_() for t in (q, k, v))
o = F.scaled_dot_product_attention(qo, ko, vo, is_causal=True)  # starts the backward's builds
g = torch.randn_like(o)
o.backward(g)
qc, kc, vc = (t.clone().requires_grad_() for t in (q, k, v))
oc = F.scaled_dot_product_attention(qc, kc, vc, is_causal=True)
oc.backward(g.cpu())
err = [float((a.cpu() - b).abs().max()) for a, b in ((o, oc), (qo.grad, qc.grad), (ko.grad, kc.grad), (vo.grad, vc.grad))]
print(json.dumps({"err": err}))
"""


@pytest.mark.parametrize("processes", ["0", "1"])
def test_attention_backward_built_in_background(run_py, tmp_path, processes):
    # the backward's programs start building at the forward; the backward waits for or reuses them (built in
    # this process, or with PYTORCH_OCL_BUILD_PROCESSES in a helper process, as on NVIDIA)
    r = json.loads(run_py(ATTN, env={"PYTORCH_OCL_CACHE_DIR": str(tmp_path), "POCL_CACHE_DIR": str(tmp_path / "pocl"),
                                     "PYTORCH_OCL_BUILD_THREADS": "2", "PYTORCH_OCL_BUILD_PROCESSES": processes})
                   .stdout.strip().splitlines()[-1])
    assert max(r["err"]) < 1e-4, r
