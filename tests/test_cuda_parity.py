"""torch.ocl against torch.cuda: every public torch.cuda name is either implemented by torch.ocl or
explained in pytorch_ocl.cuda_parity (which the README's table must match), and what is
implemented behaves as torch.cuda's does."""
import gc
import inspect
import os
import pathlib
import re
import warnings

import pytest
import torch

import pytorch_ocl  # noqa: F401
from pytorch_ocl.cuda_parity import ABSENT, RAISES

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
MiB = 1 << 20
TORCH_2_13 = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 13)


def cuda_public_names():
    """Public classes/functions torch.cuda defines (not typing/functools imports), plus the
    submodules and values in torch.cuda.__all__."""
    names = set()
    for name in dir(torch.cuda):
        obj = getattr(torch.cuda, name)
        if name.startswith("_") or inspect.ismodule(obj) or not callable(obj):
            continue
        if (getattr(obj, "__module__", None) or "").startswith("torch"):
            names.add(name)
    return names | {n for n in torch.cuda.__all__ if not callable(getattr(torch.cuda, n))}


def implemented_names():
    return {n for n in cuda_public_names() if hasattr(torch.ocl, n) and n not in RAISES}


# ---------------------------------------------------------------------------------------------
# the table


def test_every_cuda_name_is_implemented_or_explained():
    unexplained = sorted(n for n in cuda_public_names() if not hasattr(torch.ocl, n) and n not in ABSENT)
    assert not unexplained, (
        f"torch.cuda names that torch.ocl neither implements nor explains: {unexplained}; implement them or add "
        "them with a reason to python/pytorch_ocl/cuda_parity.py and the README's 'torch.ocl and torch.cuda' table"
    )


def test_table_has_no_stale_or_contradictory_entries():
    assert not set(RAISES) & set(ABSENT)
    for name in ABSENT:
        assert not hasattr(torch.ocl, name), f"torch.ocl.{name} exists but the table says it is absent"
    if TORCH_2_13:  # older torch lacks some of the newer names
        stale = sorted((set(RAISES) | set(ABSENT)) - cuda_public_names())
        assert not stale, f"explained names that torch.cuda does not have: {stale}"


@pytest.mark.parametrize("name", sorted(RAISES))
def test_unsupported_names_raise_with_their_reason(name):
    obj = getattr(torch.ocl, name)
    if name[0].isupper():
        assert isinstance(obj, type)
    with pytest.raises(NotImplementedError, match=re.escape(f"torch.ocl.{name}: {RAISES[name]}")):
        obj()


def readme_table():
    text = README.read_text()
    section = text.split("### `torch.ocl` and `torch.cuda`", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[1] not in ("raises", "absent"):
            continue
        for name in re.findall(r"`(\w+)`", cells[0]):
            rows[name] = (cells[1], cells[2])
    return rows


def test_readme_table_matches_cuda_parity():
    expected = {n: ("raises", r) for n, r in RAISES.items()} | {n: ("absent", r) for n, r in ABSENT.items()}
    assert readme_table() == expected


def test_parity_counts():
    names = cuda_public_names()
    implemented = implemented_names()
    explained = {n for n in names if n in RAISES or n in ABSENT}
    assert implemented | explained == names
    print(f"torch.cuda names: {len(names)}, implemented: {len(implemented)}, explained: {len(explained)}")


# ---------------------------------------------------------------------------------------------
# memory


def test_mem_get_info():
    x = torch.empty(4 * MiB, dtype=torch.uint8, device="ocl")
    free, total = torch.ocl.mem_get_info()
    assert total == torch.ocl.get_device_properties(0).total_memory
    assert 0 <= free <= total
    assert free == total - torch.ocl.memory_reserved()
    if hasattr(torch.accelerator, "get_memory_info"):
        torch.accelerator.set_device_index(0)
        assert torch.accelerator.get_memory_info(0) == (free, total)
    del x


def test_memory_summary_reports_allocated_memory():
    x = torch.empty(3 * MiB, dtype=torch.uint8, device="ocl")
    summary = torch.ocl.memory_summary()
    assert isinstance(summary, str)
    assert "device ID 0" in summary and "Allocated memory" in summary and "from large pool" in summary
    allocated = torch.ocl.memory_allocated() // 1024
    assert f"{allocated} KiB" in summary or f"{allocated // 1024} MiB" in summary
    assert "from large pool" not in torch.ocl.memory_summary(abbreviated=True)
    del x


def test_memory_stats_as_nested_dict():
    # Nothing freed between the two reads: a cycle of an earlier test's ocl tensors collected there (or a block
    # freed while a queue still used it, released when its work ends) changed the counters in between once in CI
    # (519168 against 518144).
    gc.collect()
    torch.ocl.synchronize()
    gc.disable()
    try:
        nested = torch.ocl.memory_stats_as_nested_dict()
        assert nested["allocated_bytes"]["all"]["current"] == torch.ocl.memory_allocated()
        assert nested["num_ooms"] == torch.ocl.memory_stats()["num_ooms"]
    finally:
        gc.enable()


CUDA_SEGMENT_KEYS = {"device", "address", "total_size", "allocated_size", "active_size", "requested_size",
                     "stream", "segment_type", "segment_pool_id", "is_expandable", "frames", "blocks"}
CUDA_BLOCK_KEYS = {"address", "size", "requested_size", "state", "frames"}


def test_memory_snapshot_shows_segments_and_blocks():
    x = torch.empty(3 * MiB + 5, dtype=torch.uint8, device="ocl")
    small = torch.empty(100, device="ocl")
    segments = torch.ocl.memory_snapshot()
    for seg in segments:
        assert set(seg) == CUDA_SEGMENT_KEYS
        assert seg["segment_type"] in ("small", "large")
        assert sum(b["size"] for b in seg["blocks"]) == seg["total_size"]
        addresses = [b["address"] for b in seg["blocks"]]
        assert addresses == sorted(addresses) and addresses[0] == seg["address"]
        for b in seg["blocks"]:
            assert set(b) == CUDA_BLOCK_KEYS
            assert b["state"] in ("active_allocated", "active_pending_free", "inactive")
    ours = [s for s in segments if s["device"] == 0]
    assert sum(s["total_size"] for s in ours) == torch.ocl.memory_reserved()
    assert sum(s["allocated_size"] for s in ours) == torch.ocl.memory_allocated()
    blocks = {b["address"]: (s, b) for s in ours for b in s["blocks"]}
    seg, block = blocks[x.data_ptr()]
    assert block["state"] == "active_allocated" and block["requested_size"] == x.numel()
    assert seg["segment_type"] == "large"
    assert blocks[small.data_ptr()][0]["segment_type"] == "small"
    address = x.data_ptr()
    del x
    after = {b["address"]: b for s in torch.ocl.memory_snapshot() for b in s["blocks"]}
    assert address not in after or after[address]["state"] == "inactive"
    assert torch.ocl.memory._snapshot()["segments"] == torch.ocl.memory_snapshot()


def test_memory_snapshot_shows_frees_waiting_for_another_stream():
    x = torch.ones(3 * MiB, dtype=torch.uint8, device="ocl")
    s = torch.ocl.Stream()
    with torch.ocl.stream(s):
        y = x * 2
    x.record_stream(s)
    address = x.data_ptr()
    del x
    blocks = {b["address"]: b for seg in torch.ocl.memory_snapshot() for b in seg["blocks"]}
    # Reuse waits for `s`; the allocator looks at that only when it next needs memory.
    assert blocks[address]["state"] == "active_pending_free"
    s.synchronize()
    assert y[0].item() == 2


def test_record_memory_history_is_explained():
    torch.ocl.memory._record_memory_history(None)  # switching it off is fine
    with pytest.raises(NotImplementedError, match="records no allocation history"):
        torch.ocl.memory._record_memory_history()


def test_per_process_memory_fraction_limits_allocations_and_can_be_undone():
    torch.ocl.empty_cache()
    total = torch.ocl.get_device_properties(0).total_memory
    assert torch.ocl.get_per_process_memory_fraction() == 1.0
    fraction = (torch.ocl.memory_reserved() + 64 * MiB) / total
    try:
        torch.ocl.set_per_process_memory_fraction(fraction)
        assert torch.ocl.get_per_process_memory_fraction() == pytest.approx(fraction)
        ok = torch.empty(16 * MiB, dtype=torch.uint8, device="ocl")
        with pytest.raises(torch.ocl.OutOfMemoryError, match="set_per_process_memory_fraction"):
            torch.empty(128 * MiB, dtype=torch.uint8, device="ocl")
        assert torch.ocl.OutOfMemoryError is torch.OutOfMemoryError
        del ok
    finally:
        torch.ocl.set_per_process_memory_fraction(1.0)
    big = torch.empty(128 * MiB, dtype=torch.uint8, device="ocl")
    del big
    torch.ocl.empty_cache()
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="fraction"):
            torch.ocl.set_per_process_memory_fraction(bad)


def test_deprecated_memory_names():
    x = torch.empty(2 * MiB, dtype=torch.uint8, device="ocl")
    del x
    with pytest.warns(FutureWarning):
        assert torch.ocl.memory_cached() == torch.ocl.memory_reserved()
    with pytest.warns(FutureWarning):
        assert torch.ocl.max_memory_cached() == torch.ocl.max_memory_reserved()
    assert torch.ocl.max_memory_allocated() > torch.ocl.memory_allocated()
    with pytest.warns(FutureWarning):
        torch.ocl.reset_max_memory_allocated()
    assert torch.ocl.max_memory_allocated() == torch.ocl.memory_allocated()
    with pytest.warns(FutureWarning):
        torch.ocl.reset_max_memory_cached()
    assert torch.ocl.max_memory_reserved() == torch.ocl.memory_reserved()


def test_caching_allocator_alloc_delete_round_trip():
    before = torch.ocl.memory_allocated()
    ptr = torch.ocl.caching_allocator_alloc(MiB)
    assert ptr and torch.ocl.memory_allocated() >= before + MiB
    blocks = {b["address"]: b for s in torch.ocl.memory_snapshot() for b in s["blocks"]}
    assert blocks[ptr]["state"] == "active_allocated"
    torch.ocl.caching_allocator_delete(ptr)
    assert torch.ocl.memory_allocated() == before
    with pytest.raises(RuntimeError, match="caching_allocator_alloc"):
        torch.ocl.caching_allocator_delete(ptr)
    s = torch.ocl.Stream()
    ptr = torch.ocl.caching_allocator_alloc(3 * MiB, 0, s)
    seg = next(seg for seg in torch.ocl.memory_snapshot() for b in seg["blocks"] if b["address"] == ptr)
    assert seg["stream"] == s.stream_id
    torch.ocl.caching_allocator_delete(ptr)
    assert torch.ocl.caching_allocator_alloc(0) == 0
    torch.ocl.caching_allocator_delete(0)
    assert torch.ocl.get_allocator_backend() == "native"


def test_caching_allocator_disabled_returns_memory_at_once():
    torch.ocl.empty_cache()
    base = torch.ocl.memory_reserved()
    with torch.ocl.caching_allocator_disabled():
        x = torch.ones(4 * MiB, dtype=torch.uint8, device="ocl")
        assert torch.ocl.memory_reserved() >= base + 4 * MiB
        del x
        assert torch.ocl.memory_reserved() == base
        y = torch.arange(10, device="ocl") * 2  # still computes right with fresh buffers
        assert y.sum().item() == 90
        del y
    x = torch.ones(4 * MiB, dtype=torch.uint8, device="ocl")
    del x
    assert torch.ocl.memory_reserved() >= base + 4 * MiB  # caching again
    torch.ocl.caching_allocator_enable(False)
    torch.ocl.caching_allocator_enable()
    torch.ocl.empty_cache()


def test_host_memory_stats_count_pinned_blocks():
    torch.ocl.reset_accumulated_host_memory_stats()
    before = torch.ocl.host_memory_stats()
    size = 3 * MiB + 1  # a size class of its own: 4 MiB
    x = torch.empty(size, dtype=torch.uint8).pin_memory()
    during = torch.ocl.host_memory_stats()
    assert during["active_requests.current"] == before["active_requests.current"] + 1
    assert during["active_bytes.current"] == before["active_bytes.current"] + 4 * MiB
    assert during["allocated_bytes.current"] >= 4 * MiB
    assert during["num_host_alloc"] == during["host_alloc_time.count"] >= 1
    assert during["host_alloc_time.max"] >= during["host_alloc_time.min"] >= 0
    del x
    after = torch.ocl.host_memory_stats()
    assert after["active_requests.current"] == before["active_requests.current"]
    assert after["allocated_bytes.current"] == during["allocated_bytes.current"]  # kept for reuse
    y = torch.empty(size, dtype=torch.uint8).pin_memory()  # reuses the block: no new allocation
    assert torch.ocl.host_memory_stats()["num_host_alloc"] == during["num_host_alloc"]
    del y
    torch.ocl.reset_peak_host_memory_stats()
    stats = torch.ocl.host_memory_stats()
    assert stats["active_bytes.peak"] == stats["active_bytes.current"]
    nested = torch.ocl.host_memory_stats_as_nested_dict()
    assert nested["active_requests"]["current"] == stats["active_requests.current"]
    assert nested["host_free_time"]["count"] == 0


# ---------------------------------------------------------------------------------------------
# devices, streams, the rest


def test_device_of_and_init():
    torch.ocl.init()
    assert torch.ocl.is_initialized()
    x = torch.ones(2, device="ocl:0")
    with torch.ocl.device_of(x):
        assert torch.ocl.current_device() == 0
    with torch.ocl.device_of(torch.ones(2)):  # not an ocl tensor: nothing changes
        assert torch.ocl.current_device() == 0
    if torch.ocl.device_count() > 1:
        y = torch.ones(2, device="ocl:1")
        with torch.ocl.device_of(y):
            assert torch.ocl.current_device() == 1
        assert torch.ocl.current_device() == 0


def test_stream_context_switches_the_current_stream():
    s = torch.ocl.Stream()
    before = torch.ocl.current_stream()
    assert before != s
    ctx = torch.ocl.stream(s)
    assert isinstance(ctx, torch.ocl.StreamContext)
    with ctx:
        assert torch.ocl.current_stream() == s
        y = torch.ones(3, device="ocl") * 2
    assert torch.ocl.current_stream() == before
    s.synchronize()
    assert y.sum().item() == 6
    with torch.ocl.StreamContext(None):
        assert torch.ocl.current_stream() == before
    assert torch.ocl.is_current_stream_capturing() is False


def test_capabilities_and_build_queries():
    assert torch.ocl.is_bf16_supported() is True
    assert torch.ones(3, dtype=torch.bfloat16, device="ocl").sum().item() == 3
    # TF32 exactly where the probed matrix engine runs it (NVIDIA cc >= 8.0; PoCL: none).
    assert torch.ocl.is_tf32_supported() is bool(torch.ocl.matrix_engine()["tf32"])
    major, minor = torch.ocl.get_device_capability()
    assert isinstance(major, int) and isinstance(minor, int) and (major, minor) >= (1, 2)
    assert f"{major}.{minor}" in torch.ocl.get_device_properties().opencl_c_version
    assert torch.ocl.get_arch_list() == ["OpenCL C 1.2"]
    assert torch.ocl.get_gencode_flags() == os.environ.get("PYTORCH_OCL_EXTRA_BUILD_OPTIONS", "")
    assert torch.ocl.can_device_access_peer(0, 0) is False
    with pytest.raises(ValueError):
        torch.ocl.can_device_access_peer(0, torch.ocl.device_count())
    assert torch.ocl.has_half is True and torch.ocl.has_magma is False
    assert torch.ocl.ipc_collect() is None
    assert torch.ocl.AcceleratorError is torch.AcceleratorError


def test_sync_debug_mode_reports_blocking_copies():
    x = torch.ones(4, device="ocl")
    assert torch.ocl.get_sync_debug_mode() == 0
    try:
        torch.ocl.set_sync_debug_mode("warn")
        assert torch.ocl.get_sync_debug_mode() == 1
        with pytest.warns(UserWarning, match="synchronizing operation"):
            x.sum().item()
        with pytest.warns(UserWarning, match="from the host to ocl"):
            torch.tensor([1.0, 2.0], device="ocl")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = x * 2  # stays on the device: no report
            torch.ocl.synchronize()  # an explicit wait: no report
            pinned = torch.empty(4).pin_memory()
            pinned.copy_(y, non_blocking=True)  # does not wait
            torch.ocl.synchronize()
        torch.ocl.set_sync_debug_mode(2)
        with pytest.raises(RuntimeError, match="synchronizing operation"):
            x.cpu()
    finally:
        torch.ocl.set_sync_debug_mode("default")
    assert torch.ocl.get_sync_debug_mode() == 0
    assert x.cpu().sum() == 4
    with pytest.raises(RuntimeError, match="invalid value"):
        torch.ocl.set_sync_debug_mode("sometimes")


def test_nvtx_is_a_counting_no_op():
    nvtx = torch.ocl.nvtx
    assert nvtx.range_push("a") == 0
    assert nvtx.range_push("b") == 1
    assert nvtx.range_pop() == 1
    assert nvtx.range_pop() == 0
    assert nvtx.range_pop() == -1
    nvtx.mark("m")
    nvtx.range_end(nvtx.range_start("r"))
    with nvtx.range("step {}", 3):
        pass

    @nvtx.range("f")
    def f(v):
        return v + 1

    assert f(1) == 2


def test_amp_module():
    a = torch.randn(4, 4, device="ocl")
    with torch.ocl.amp.autocast(dtype=torch.bfloat16):
        assert torch.mm(a, a).dtype == torch.bfloat16
    with torch.ocl.amp.autocast(enabled=False):
        assert torch.mm(a, a).dtype == torch.float32
    scaler = torch.ocl.amp.GradScaler()
    assert scaler._device == "ocl"
    assert torch.ocl.amp.amp_definitely_not_available() is False

    class Double(torch.autograd.Function):
        @staticmethod
        @torch.ocl.amp.custom_fwd(cast_inputs=torch.float32)
        def forward(ctx, v):
            return v * 2

        @staticmethod
        @torch.ocl.amp.custom_bwd
        def backward(ctx, g):
            return g * 2

    v = torch.ones(2, device="ocl", requires_grad=True)
    with torch.ocl.amp.autocast(dtype=torch.bfloat16):
        out = Double.apply(v.to(torch.bfloat16))
    assert out.dtype == torch.float32


def test_torch_internals_find_the_generator():
    torch.ocl._get_generator(torch.device("ocl:0")).manual_seed(5)
    assert torch.ocl.initial_seed(0) == 5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.ocl.manual_seed_all(3)
    assert torch.ocl.initial_seed(0) == 3
