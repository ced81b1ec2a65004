"""Which engine a matrix-engine product runs on: Hopper's wgmma (operands packed first) or the tiled mma.sync
kernels. Products large on every side take wgmma; those between (a side or K under 1024, enough tiles to fill the
device) are timed both ways, family "gemm_engine" of the tuning cache (resnet50's TF32 convolutions ran 10-70%
faster on the tiled kernels than on wgmma, whose packing reads and writes both operands once more).

On sm_90 (PYTORCH_OCL_MMA_TEST=native) the real kernels run; elsewhere the engines' emulations
(PYTORCH_OCL_MMA=emulate, PYTORCH_OCL_WGMMA=tune asks for the tuned choice there as an sm_90 device makes it).
Each child process has its own tuning cache. The products' rows grow with the device's compute units (128 a pair
of them): the timed range needs a 128 x 128 tile per unit (132 SMs on an H100 / H200: 8448 rows). Checked: the decision is timed, stored and loaded; random tuning
draws each engine and both compute the product; a small network trains as on the CPU with its products on
whichever engine each draw gives.
"""
import json
import os

import pytest
import torch

import pytorch_ocl
from conftest import run_python

NATIVE = os.environ.get("PYTORCH_OCL_MMA_TEST") == "native"

PRODUCTS = """
    import json, torch, pytorch_ocl
    ROWS = max(256, 128 * -(-torch.ocl.get_device_properties(0).multi_processor_count // 2))
    torch.set_float32_matmul_precision("high")  # float32 as TF32: the matrix engine's kinds
    g = torch.Generator().manual_seed(0)
    out = {"engines": []}
    for dtype in (torch.bfloat16, torch.float32):
        a = torch.randn(ROWS, 128, generator=g).to(dtype)
        b = torch.randn(128, 256, generator=g).to(dtype)
        a_, b_ = a.to("ocl"), b.to("ocl")
        (a_ @ b_).cpu()  # tunes first: the timing runs launch both engines' kernels
        with pytorch_ocl.profiler.profile() as prof:
            c = (a_ @ b_).cpu()
        ref = a.double() @ b.double()
        err = ((c.double() - ref).abs() / (a.double().abs() @ b.double().abs())).max().item()
        assert err < 2.0**-7, (dtype, err)
        names = [r[0] for r in prof.records]
        out["engines"].append("wgmma" if "gemm_wgmma" in names else "tiled" if "gemm_tiled" in names else str(names))
    out["decisions"] = {k: v for k, v in pytorch_ocl.ops.autotune_decisions().items() if k.startswith("gemm_engine")}
    out["stats"] = pytorch_ocl.ops.autotune_stats()
    print("RESULT " + json.dumps(out))
"""


def env_of(tmp_path, **extra):
    env = {"PYTORCH_OCL_CACHE_DIR": str(tmp_path), "PYTORCH_OCL_AUTOTUNE": "1", "PYTORCH_OCL_WGMMA": "tune",
           "PYTORCH_OCL_TUNE_DEFERRED": "0", "PYTORCH_OCL_TUNE": None, "PYTORCH_OCL_GEMM_CONFIG": None}
    if not NATIVE:
        env["PYTORCH_OCL_MMA"] = "emulate"
    env.update(extra)
    return env


def result(code, env):
    out = run_python(code, env=env, timeout=600).stdout
    line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    assert line, out
    return json.loads(line[-1][7:])


def test_engine_timed_stored_and_loaded(tmp_path):
    first = result(PRODUCTS, env_of(tmp_path))
    engines = first["decisions"]
    # one decision per kind (bf16, TF32), each naming the engine that then ran
    assert len(engines) == 2 and set(engines.values()) <= {"wgmma", "tiled"}, first
    assert any("bfloat16" in k for k in engines) and any("float32" in k for k in engines), first
    for k, ran in zip(sorted(engines, key=lambda k: "float32" in k), first["engines"]):
        assert engines[k] == ran, first
    again = result(PRODUCTS, env_of(tmp_path))
    assert again["decisions"] == engines and again["engines"] == first["engines"], (first, again)
    assert again["stats"]["timed"] == 0 and again["stats"]["loaded"] >= 2, again


@pytest.mark.parametrize("margin", ["0", "1e9"])
def test_engine_before_tile_tuning(tmp_path, margin):
    """wgmma beating the fallback tile config by the margin (default 1.25; PYTORCH_OCL_WGMMA_MARGIN=0: always) is
    taken before the tile configs are tuned, so no tile decision is made, and a second process loads it untimed;
    a margin nothing beats tunes the tiles first and then times the engines."""
    first = result(PRODUCTS.replace("k.startswith(\"gemm_engine\")", "k.startswith(\"gemm\")"),
                   env_of(tmp_path, PYTORCH_OCL_WGMMA_MARGIN=margin))
    engines = {k: v for k, v in first["decisions"].items() if k.startswith("gemm_engine")}
    tiles = [k for k in first["decisions"] if k.startswith("gemm|") and "mma-" in k]
    assert len(engines) == 2, first
    if margin == "0":
        assert set(engines.values()) == {"wgmma"} and first["engines"] == ["wgmma", "wgmma"], first
        assert not tiles and first["stats"]["timed"] == 2, first
    else:
        assert len(tiles) == 2 and first["stats"]["timed"] == 4, first
    again = result(PRODUCTS, env_of(tmp_path, PYTORCH_OCL_WGMMA_MARGIN=margin))
    assert again["engines"] == first["engines"] and again["stats"]["timed"] == 0, (first, again)
    # loaded: a class stored as wgmma its engine alone (its tiles are not needed), a tiled one its tiles and engine
    assert again["stats"]["loaded"] == sum(1 if e == "wgmma" else 2 for e in engines.values()), (engines, again)


DEFERRED = """
    import json, torch, pytorch_ocl
    from pytorch_ocl import ops
    ROWS = max(256, 128 * -(-torch.ocl.get_device_properties(0).multi_processor_count // 2))
    torch.set_float32_matmul_precision("high")
    g = torch.Generator().manual_seed(0)
    probs = []
    for dtype in (torch.bfloat16, torch.float32):
        a, b = torch.randn(ROWS, 128, generator=g).to(dtype), torch.randn(128, 256, generator=g).to(dtype)
        probs.append((a, b, a.to("ocl"), b.to("ocl")))
    def run_all():
        engines = []
        for a, b, a_, b_ in probs:
            with pytorch_ocl.profiler.profile() as prof:
                c = (a_ @ b_).cpu()
            ref = a.double() @ b.double()
            err = ((c.double() - ref).abs() / (a.double().abs() @ b.double().abs())).max().item()
            assert err < 2.0**-7, (a.dtype, err)
            names = [r[0] for r in prof.records]
            engines.append("wgmma" if "gemm_wgmma" in names else "tiled" if "gemm_tiled" in names else str(names))
        return engines
    def decided():
        d = ops.autotune_decisions()
        return {"engine": {k: v for k, v in d.items() if k.startswith("gemm_engine")},
                "tiles": sorted(k for k in d if k.startswith("gemm|") and "mma-" in k)}
    out = {"first": run_all(), "first_stats": ops.autotune_stats(), "first_decided": decided()}
    pytorch_ocl._C.flush_program_cache()  # the fallback configs are built: the engines are timed next
    out.update(mid=run_all(), mid_stats=ops.autotune_stats())
    pytorch_ocl._C.flush_program_cache()  # the deferred tile candidates are built
    out.update(tuned=run_all(), stats=ops.autotune_stats(), decided=decided(), again=run_all())
    print("RESULT " + json.dumps(out))
"""


@pytest.mark.parametrize("deferred", [None, "0"])
def test_tile_tuning_deferred_behind_the_engine(tmp_path, deferred):
    """Cold start, PYTORCH_OCL_TUNE_DEFERRED unset ("0" decides everything on the spot): a class in the timed range
    first runs on wgmma while its fallback tile config builds in the background; at the first call after that
    build the engine is timed against that config, and where wgmma does not beat it by the margin (here a margin
    nothing beats) the class runs the faster of the two while its tile candidates build; nothing is stored until
    the tile configs are timed at the first call after those builds, and then the engine is timed against the
    tuned config. Every call computes the products right (the child checks them)."""
    env = env_of(tmp_path, PYTORCH_OCL_WGMMA_MARGIN="1e9", PYTORCH_OCL_TUNE_DEFERRED=deferred,
                 PYTORCH_OCL_BUILD_THREADS="2", PYTORCH_OCL_BUILD_PROCESSES="2")
    got = result(DEFERRED, env)
    first, decided = got["first_decided"], got["decided"]
    assert len(decided["engine"]) == 2 and len(decided["tiles"]) == 2, got
    if deferred is None:
        assert got["first_stats"]["deferred"] == 2 and first == {"engine": {}, "tiles": []}, got
        assert got["first"] == ["wgmma", "wgmma"], got  # the interim engine, nothing decided
        assert got["mid_stats"]["deferred"] == 4 and got["mid_stats"]["deferred_tuned"] == 2, got
        assert got["stats"]["deferred_tuned"] == 4 and got["stats"]["timed"] == 4, got
    else:
        assert got["first_stats"]["deferred"] == 0 and first == decided, got
    # the decided engines are the ones that run next (the call that tunes also runs the timings' kernels)
    for k, ran in zip(sorted(decided["engine"], key=lambda k: "float32" in k), got["again"]):
        assert decided["engine"][k] == ran, got


@pytest.mark.parametrize("setting", [{"PYTORCH_OCL_AUTOTUNE": "0"}, {"PYTORCH_OCL_WGMMA": "rule"}])
def test_size_rule_without_timing(tmp_path, setting):
    """Without tuning, or with PYTORCH_OCL_WGMMA=rule, products in the timed range take wgmma untimed (the rule
    before this choice was tuned)."""
    off = result(PRODUCTS, env_of(tmp_path, **setting))
    assert off["engines"] == ["wgmma", "wgmma"] and off["decisions"] == {}, off


def test_random_tuning_draws_both_engines(tmp_path):
    """Random tuning (how the suite reaches every path a tuner can take): across seeds each engine is drawn, and
    every draw computes the products right (the child checks them)."""
    seen = set()
    for seed in range(6):
        got = result(PRODUCTS, env_of(tmp_path / str(seed), PYTORCH_OCL_TUNE=f"random:{seed}"))
        seen.update(got["engines"])
        if seen == {"wgmma", "tiled"}:
            break
    assert seen == {"wgmma", "tiled"}, seen


TRAIN = """
    import json, torch, pytorch_ocl
    ROWS = max(384, 128 * -(-torch.ocl.get_device_properties(0).multi_processor_count // 2))
    def steps(device):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(160, 256), torch.nn.GELU(), torch.nn.Linear(256, 192)).to(device)
        start = [p.detach().cpu().clone() for p in model.parameters()]
        opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        g = torch.Generator().manual_seed(5)
        x, y = torch.randn(ROWS, 160, generator=g).to(device), torch.randn(ROWS, 192, generator=g).to(device)
        for _ in range(3):
            opt.zero_grad()
            with torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=AMP):
                loss = torch.nn.functional.mse_loss(model(x).float(), y)
            loss.backward()
            opt.step()
        return [p.detach().cpu() - s for p, s in zip(model.parameters(), start)]
    ref = steps("cpu")
    with pytorch_ocl.profiler.profile() as prof:
        got = steps("ocl")
    names = [r[0] for r in prof.records]
    for a, b in zip(got, ref):  # bf16 products: the format's rounding; float32 (3xTF32): fp32 accuracy
        torch.testing.assert_close(a, b, rtol=0, atol=(0.02 if AMP else 1e-4) * b.abs().max().item())
    engines = {k: v for k, v in pytorch_ocl.ops.autotune_decisions().items() if k.startswith("gemm_engine")}
    print("RESULT " + json.dumps({"wgmma": names.count("gemm_wgmma"), "tiled": names.count("gemm_tiled"),
                                  "decisions": engines}))
"""


@pytest.mark.parametrize("amp", [True, False])
def test_network_trains_on_either_engine(tmp_path, amp):
    """Three SGD steps of an MLP under bfloat16 autocast, and in float32 at the default precision (3xTF32) (forward,
    input and weight gradients: products of 160-384 a side, more rows on large devices) match the CPU's updates
    whichever engines the draws give; across seeds both engines run inside training."""
    seen = set()
    for seed in range(6):
        got = result(TRAIN.replace("AMP", str(amp)), env_of(tmp_path, PYTORCH_OCL_TUNE=f"random:{seed}"))
        assert got["decisions"], got
        seen.update(e for e in ("wgmma", "tiled") if got[e])
        if seen == {"wgmma", "tiled"} and seed >= 1:
            break
    assert seen == {"wgmma", "tiled"}, seen


def test_network_trains_with_the_engine_decided_first(tmp_path):
    """Tuning proper with wgmma taken before tile tuning wherever it runs (margin 0): the MLP's products in the
    timed range run on wgmma from decisions made that way (test_engine_before_tile_tuning: no tile tuning), and
    three SGD steps under bfloat16 autocast match the CPU's updates."""
    got = result(TRAIN.replace("AMP", "True"), env_of(tmp_path, PYTORCH_OCL_WGMMA_MARGIN="0"))
    assert got["decisions"] and set(got["decisions"].values()) == {"wgmma"}, got
    assert got["wgmma"] > 0, got


def test_network_trains_while_tile_tuning_is_deferred(tmp_path):
    """The MLP's three SGD steps under bfloat16 autocast with its classes' tile tunings deferred behind the engine
    (a margin nothing beats, PYTORCH_OCL_TUNE_DEFERRED unset): the first step runs each product on wgmma while the
    fallback configs build, the second on the faster of wgmma and the fallback config while the tile candidates
    build, the third on the tuned choice (the builds waited for before each step), and the updates match the
    CPU's."""
    code = TRAIN.replace("AMP", "True").replace(
        "        for _ in range(3):\n",
        "        for i in range(3):\n            if i and device != 'cpu': pytorch_ocl._C.flush_program_cache()\n"
    ).replace('"decisions": engines}', '"decisions": engines, "stats": pytorch_ocl.ops.autotune_stats()}')
    assert "flush_program_cache" in code and '"stats"' in code
    got = result(code, env_of(tmp_path, PYTORCH_OCL_WGMMA_MARGIN="1e9", PYTORCH_OCL_TUNE_DEFERRED=None,
                              PYTORCH_OCL_BUILD_THREADS="2", PYTORCH_OCL_BUILD_PROCESSES="2"))
    assert got["stats"]["deferred"] >= 1 and got["stats"]["deferred_tuned"] == got["stats"]["deferred"], got
    assert got["decisions"], got


@pytest.mark.parametrize("name,value", [("PYTORCH_OCL_WGMMA_MARGIN", "fast"), ("PYTORCH_OCL_WGMMA_MARGIN", "-1"),
                                        ("PYTORCH_OCL_SPLIT_WAVES", "0"), ("PYTORCH_OCL_SPLIT_WAVES", "4x")])
def test_bad_settings_are_errors(tmp_path, name, value):
    """A malformed margin or split-waves setting is an error naming it at the first product that reads it, not a
    silent default."""
    code = """
        import torch, pytorch_ocl
        torch.set_float32_matmul_precision("high")
        rows = max(256, 128 * -(-torch.ocl.get_device_properties(0).multi_processor_count // 2))
        try:
            a = torch.randn(20 if SPLIT else rows, 512 if SPLIT else 128).to("ocl")
            b = torch.randn(a.shape[1], 20 if SPLIT else 256).to("ocl")
            print((a @ b).sum().item())
            print("no error")
        except RuntimeError as e:
            print("ERROR", e)
    """.replace("SPLIT", str(name.endswith("WAVES")))
    out = run_python(code, env=env_of(tmp_path, **{name: value})).stdout
    assert "ERROR" in out and name in out and repr(value) in out.replace('"', "'"), out
