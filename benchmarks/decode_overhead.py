"""Host overhead of batch-1 greedy decoding on `ocl`: what each generated token costs the host.

    python3 benchmarks/decode_overhead.py [--gpt2-small] [--tokens 16] [--top 15] [--out results/decode_overhead.md]

For transformers GPT-2 (a tiny config by default, GPT-2 small with --gpt2-small; random weights,
nothing downloaded) and a small Llama-style config (RoPE, RMSNorm, SwiGLU, GQA), greedy
`generate()` at batch 1 runs twice, with `tokens` and 2 * `tokens` new tokens; per generated token
is the difference divided by `tokens`, so prefill and setup cancel out. Per token:
- ops: dispatcher calls (a TorchDispatchMode counts every aten op, nested ones included);
- launches: OpenCL kernel launches through dlprim's launch helpers (`_C.host_counters()`);
- reads: blocking device->host copies (item(), .cpu(), bound checks, ...); waits: clFinish and
  event waits (synchronize);
- host us: CPU time of the Python thread (time.thread_time: what the host spends issuing work,
  not waiting), and wall us (on PoCL the device shares the CPU, so wall time is not a GPU's).
Tokens are checked against the CPU's greedy tokens. --top prints the most frequent ops per token.
"""
import argparse
import collections
import statistics
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import common


class OpCounter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.counts = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[str(func.overloadpacket.__name__)] += 1
        return func(*args, **(kwargs or {}))


def make_models(small_gpt2: bool):
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    if small_gpt2:
        gcfg = GPT2Config()
        name = "GPT-2 small"
    else:
        gcfg = GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000, n_positions=256)
        name = "GPT-2 tiny (2x128)"
    lcfg = LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, vocab_size=1000, max_position_embeddings=256)
    torch.manual_seed(0)
    return [(name, GPT2LMHeadModel(gcfg)), ("Llama-style tiny (2x128, GQA)", LlamaForCausalLM(lcfg))]


def generate(model, ids, n):
    with torch.no_grad():
        return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                              do_sample=False, pad_token_id=0)


def counters():
    import pytorch_ocl

    return dict(pytorch_ocl._C.host_counters())


def measure(model, ids, tokens, reps, top):
    n1, n2 = tokens, 2 * tokens
    generate(model, ids, n2)  # warm-up: programs built, allocator pools filled
    per = {}
    # Counts: one run each (deterministic).
    for key, n in (("a", n1), ("b", n2)):
        c0 = counters()
        with OpCounter() as oc:
            out = generate(model, ids, n)
        c1 = counters()
        per[key] = (oc.counts, {k: c1[k] - c0[k] for k in c0}, out)
    ops_a, cnt_a, _ = per["a"]
    ops_b, cnt_b, out = per["b"]
    d_ops = {k: (ops_b[k] - ops_a.get(k, 0)) / tokens for k in ops_b}
    row = {
        "ops": sum(ops_b.values()) / tokens - sum(ops_a.values()) / tokens,
        "launches": (cnt_b["launches"] - cnt_a["launches"]) / tokens,
        "reads": (cnt_b["blocking_reads"] - cnt_a["blocking_reads"]) / tokens,
        "waits": (cnt_b["finishes"] + cnt_b["event_waits"] - cnt_a["finishes"] - cnt_a["event_waits"]) / tokens,
    }
    # Times: without the counting mode, median of `reps` pairs.
    host, wall = [], []
    for _ in range(reps):
        t = {}
        for n in (n1, n2):
            w0, h0 = time.perf_counter(), time.thread_time()
            generate(model, ids, n)
            t[n] = (time.perf_counter() - w0, time.thread_time() - h0)
        wall.append((t[n2][0] - t[n1][0]) / tokens * 1e6)
        host.append((t[n2][1] - t[n1][1]) / tokens * 1e6)
    row["host_us"] = statistics.median(host)
    row["wall_us"] = statistics.median(wall)
    row["tokens"] = out
    row["top"] = sorted(d_ops.items(), key=lambda kv: -kv[1])[:top]
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="ocl:0")
    p.add_argument("--gpt2-small", action="store_true", help="GPT-2 small (124M) instead of the tiny config")
    p.add_argument("--tokens", type=int, default=16)
    p.add_argument("--prompt", type=int, default=8)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--top", type=int, default=0, help="print the N most frequent ops per token")
    p.add_argument("--out", default=None, help="write the table as markdown here")
    args = p.parse_args()
    common.import_backend()
    dev = torch.device(args.device)
    header = ["model", "ops/token", "launches/token", "blocking reads/token", "waits/token", "host us/token",
              "wall us/token", "tokens = CPU"]
    rows = []
    for name, model in make_models(args.gpt2_small):
        model.eval()
        ids = torch.randint(0, model.config.vocab_size, (1, args.prompt), generator=torch.Generator().manual_seed(1))
        ref = generate(model, ids, 2 * args.tokens)
        model.to(dev)
        r = measure(model, ids.to(dev), args.tokens, args.reps, args.top)
        same = torch.equal(r["tokens"].cpu(), ref)
        rows.append([name, f"{r['ops']:.1f}", f"{r['launches']:.1f}", f"{r['reads']:.2f}", f"{r['waits']:.2f}",
                     f"{r['host_us']:.0f}", f"{r['wall_us']:.0f}", "yes" if same else "NO"])
        if args.top:
            print(f"\n{name}: ops per token")
            for op, n in r["top"]:
                print(f"  {op:<40} {n:7.2f}")
        model.to("cpu")
    table = common.markdown_table(header, rows)
    print()
    print(table)
    if args.out:
        pre = [f"Device: {common.device_description(dev)}; torch {torch.__version__}; {args.tokens} tokens."]
        common.write_markdown(args.out, "Host overhead per generated token (batch-1 greedy generate)", pre, header,
                              rows)


if __name__ == "__main__":
    main()
