"""Inductor's FX graph cache must not serve graphs that another version of our code generator wrote."""
import pytest
import torch

pytest.importorskip("torch._inductor")


def _compile_and_count(fn, x):
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    before = counters["inductor"]["fxgraph_cache_miss"], counters["inductor"]["fxgraph_cache_hit"]
    torch.compile(fn)(x)
    return (counters["inductor"]["fxgraph_cache_miss"] - before[0],
            counters["inductor"]["fxgraph_cache_hit"] - before[1])


def test_codegen_version_is_part_of_the_graph_cache_key(tmp_path, monkeypatch):
    from torch._inductor import config
    from torch._inductor.codegen.common import custom_backend_passes

    from pytorch_ocl.inductor import scheduling

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(config, "fx_graph_cache", True)
    monkeypatch.setattr(config, "fx_graph_remote_cache", False)
    x = torch.randn(64, device="ocl")
    fn = lambda t: (t * 3 + 1).sin().sum()  # noqa: E731
    assert _compile_and_count(fn, x) == (1, 0)  # first compile: a miss, written to the cache
    assert _compile_and_count(fn, x) == (0, 1)  # same generator: served from the cache
    assert custom_backend_passes["ocl"].uuid().startswith("pytorch_ocl.inductor:")
    monkeypatch.setattr(scheduling.CodegenVersion, "uuid", lambda self: "pytorch_ocl.inductor:another version")
    assert _compile_and_count(fn, x) == (1, 0)  # a changed generator never gets the old graph
    torch._dynamo.reset()
