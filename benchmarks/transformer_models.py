"""The model rows of benchmarks/transformer.py --models: whole networks on one device, table and plot.

Every model is built from a config with random weights (seed 0), float32, sdpa attention:
  gpt2   GPT-2 small (GPT2LMHeadModel, default dropout): training step batch 8 x 1024, AdamW; greedy decode of
         64 tokens at batch 1
  bert   BERT-base masked LM (BertForMaskedLM, BertConfig()'s sizes): training step batch 16 x 512 (15% of the
         positions carry labels), AdamW; inference (eval, no_grad) of the same batch
  llama  a 2-layer slice of a Llama-1B-like model (LlamaForCausalLM: hidden 2048, MLP 8192, 32 heads, 8 KV heads,
         vocab 32000): greedy decode of 64 new tokens after a 32-token prompt at batch 1 and 16
         (tokens/s counts every sequence's tokens)
  lstm   LSTM language model (Embedding 10000 x 512, nn.LSTM 512 x 2 layers, Linear): training step batch 32 x 128,
         AdamW
--quick: tiny configs (2 layers, hidden 64, vocab 1000) and small batches, to check the script on a CPU.
Medians of 5 timed iterations after 2 warm-up ones (decode: 3 after 1); the very first iteration of each model
(program builds on ocl) is timed apart. A cuda reference runs twice: TF32 off (the like-for-like fp32
comparison) and torch's defaults (cuDNN TF32 on, matmul TF32 off).
"""
import contextlib
import gc
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

import common

NAMES = {"gpt2": "GPT-2 small", "bert": "BERT-base MLM", "llama": "Llama 2-layer", "lstm": "LSTM LM",
         "gpt2_compiled": "GPT-2 small, torch.compile", "bert_compiled": "BERT-base MLM, torch.compile"}
COMPILED = []  # enable_compile(): the GPT-2 and BERT workloads again under torch.compile (default Inductor)


AMP = []  # set_amp(): the dtype torch.autocast runs the models' forward passes in (none: float32)


def set_amp(dtype):
    AMP[:] = [dtype]


def _amp(device):
    """torch.autocast on `device` in the --amp dtype, as a CUDA user writes it; nothing without --amp."""
    return torch.autocast(torch.device(device).type, dtype=AMP[0]) if AMP else contextlib.nullcontext()


def enable_compile():
    if not COMPILED:
        COMPILED.extend(["gpt2_compiled", "bert_compiled"])


def sizes(quick):
    """Per model: the sizes its workload uses (also in its row labels)."""
    out = _sizes(quick)
    for name in COMPILED:
        out[name] = out[name.removesuffix("_compiled")]
    return out


def _sizes(quick):
    if quick:
        return {
            "gpt2": dict(layers=2, hidden=64, heads=4, vocab=1000, batch=2, seq=64, prompt=8, new=8),
            "bert": dict(layers=2, hidden=64, heads=4, ffn=256, vocab=1000, batch=2, seq=64),
            "llama": dict(layers=2, hidden=64, ffn=256, heads=4, kv_heads=2, vocab=1000, batches=(1, 4), prompt=8,
                          new=8),
            "lstm": dict(vocab=1000, hidden=64, layers=2, batch=4, seq=16),
        }
    return {
        "gpt2": dict(layers=12, hidden=768, heads=12, vocab=50257, batch=8, seq=1024, prompt=16, new=64),
        "bert": dict(layers=12, hidden=768, heads=12, ffn=3072, vocab=30522, batch=16, seq=512),
        "llama": dict(layers=2, hidden=2048, ffn=8192, heads=32, kv_heads=8, vocab=32000, batches=(1, 16), prompt=32,
                      new=64),
        "lstm": dict(vocab=10000, hidden=512, layers=2, batch=32, seq=128),
    }


def rows(quick):
    """(model, key, label, kind) per table row; kind: time (ratio ref/ocl), rate (ocl/ref), mem (ocl/ref), first."""
    s = sizes(quick)
    g, b, ll, r = s["gpt2"], s["bert"], s["llama"], s["lstm"]
    b1, bn = ll["batches"]
    return [
        ("gpt2", "train_ms", f"training step ms (b{g['batch']} x {g['seq']}, AdamW)", "time"),
        ("gpt2", "first_s", "first training step s (program builds)", "first"),
        ("gpt2", "train_peak_gib", "training peak GiB", "mem"),
        ("gpt2", f"decode_b{1}", f"greedy decode tok/s (b1, {g['new']} tokens)", "rate"),
        ("bert", "train_ms", f"training step ms (b{b['batch']} x {b['seq']}, AdamW)", "time"),
        ("bert", "first_s", "first training step s (program builds)", "first"),
        ("bert", "train_peak_gib", "training peak GiB", "mem"),
        ("bert", "infer_ms", f"inference ms (b{b['batch']} x {b['seq']})", "time"),
        ("bert", "infer_peak_gib", "inference peak GiB", "mem"),
        ("llama", f"decode_b{b1}", f"greedy decode tok/s (b{b1}, {ll['prompt']} + {ll['new']} tokens)", "rate"),
        ("llama", f"decode_b{bn}", f"greedy decode tok/s (b{bn}, {ll['prompt']} + {ll['new']} tokens)", "rate"),
        ("llama", "first_s", f"first decode s (b{b1}, program builds)", "first"),
        ("llama", "decode_peak_gib", f"decode peak GiB (b{bn})", "mem"),
        ("lstm", "train_ms", f"training step ms (b{r['batch']} x {r['seq']}, AdamW)", "time"),
        ("lstm", "first_s", "first training step s (program builds)", "first"),
        ("lstm", "train_peak_gib", "training peak GiB", "mem"),
    ] + [row for name in COMPILED for row in (
        (name, "train_ms", f"training step ms (b{s[name]['batch']} x {s[name]['seq']}, AdamW)", "time"),
        (name, "first_s", "first training step s (compile + program builds)", "first"),
        (name, "train_peak_gib", "training peak GiB", "mem"),
    )]


def mem_module(device):
    """torch.cuda / torch.ocl for their memory statistics; None on the cpu (no statistics there)."""
    kind = torch.device(device).type
    return getattr(torch, kind) if kind in ("cuda", "ocl") else None


def _reset_peak(device):
    mem = mem_module(device)
    if mem is not None:
        common.synchronize(device)
        mem.reset_peak_memory_stats()


def _peak_gib(device):
    mem = mem_module(device)
    return mem.max_memory_allocated() / 2**30 if mem is not None else float("nan")


def _once(fn, device):
    """Seconds of one synchronized call."""
    common.synchronize(device)
    start = time.perf_counter()
    fn()
    common.synchronize(device)
    return time.perf_counter() - start


def _iters(quick, decode=False):
    if quick:
        return 2, 1
    return (3, 1) if decode else (5, 2)


def _train(step, device, quick, out):
    """First step, then the median step and the peak memory over the timed steps."""
    out["first_s"] = _once(step, device)
    _reset_peak(device)
    iters, warmup = _iters(quick)
    out["train_ms"] = common.median_time(step, device, iters, warmup) * 1e3
    out["train_peak_gib"] = _peak_gib(device)


def _tokens(vocab, shape, seed):
    return torch.randint(3, vocab, shape, generator=torch.Generator().manual_seed(seed))


def gpt2_train(device, s, compiled=False):
    """(model, optimizer, step): one GPT-2 LM training step (AdamW) on random tokens."""
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(n_layer=s["layers"], n_embd=s["hidden"], n_head=s["heads"], vocab_size=s["vocab"],
                     n_positions=max(1024, s["seq"]), bos_token_id=s["vocab"] - 1, eos_token_id=s["vocab"] - 1,
                     attn_implementation="sdpa")
    model = GPT2LMHeadModel(cfg).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = _tokens(s["vocab"], (s["batch"], s["seq"]), 1).to(device)
    fwd = torch.compile(model) if compiled else model

    def step():
        opt.zero_grad(set_to_none=True)
        with _amp(device):
            loss = fwd(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()

    return model, opt, step


def gpt2(device, s, quick, compiled=False):
    model, opt, step = gpt2_train(device, s, compiled)
    out = {}
    _train(step, device, quick, out)
    del opt
    if compiled:  # the training step only (decoding would recompile per length)
        torch._dynamo.reset()
        return out
    model.zero_grad(set_to_none=True)
    model.eval()
    prompt = _tokens(s["vocab"], (1, s["prompt"]), 2).to(device)
    new = s["new"]
    gen = lambda: model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=new,  # noqa: E731
                                 min_new_tokens=new, do_sample=False, pad_token_id=0)
    with torch.no_grad(), _amp(device):
        out["decode_b1"] = new / common.median_time(gen, device, *_iters(quick, decode=True))
    return out


def bert_train(device, s, compiled=False):
    """(model, optimizer, step, (ids, mask)): one BERT masked-LM training step (AdamW), 15% of tokens masked."""
    from transformers import BertConfig, BertForMaskedLM

    cfg = BertConfig(num_hidden_layers=s["layers"], hidden_size=s["hidden"], num_attention_heads=s["heads"],
                     intermediate_size=s["ffn"], vocab_size=s["vocab"], attn_implementation="sdpa")
    model = BertForMaskedLM(cfg).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    shape = (s["batch"], s["seq"])
    ids = _tokens(s["vocab"], shape, 1)
    picked = torch.rand(shape, generator=torch.Generator().manual_seed(2)) < 0.15
    labels = torch.where(picked, ids, -100).to(device)
    ids = torch.where(picked, 103, ids).to(device)  # [MASK]
    mask = torch.ones(shape, dtype=torch.long, device=device)
    fwd = torch.compile(model) if compiled else model

    def step():
        opt.zero_grad(set_to_none=True)
        with _amp(device):
            loss = fwd(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        opt.step()

    return model, opt, step, (ids, mask)


def bert(device, s, quick, compiled=False):
    model, opt, step, (ids, mask) = bert_train(device, s, compiled)

    def infer():
        with torch.no_grad(), _amp(device):
            model(input_ids=ids, attention_mask=mask)

    out = {}
    _train(step, device, quick, out)
    del opt
    if compiled:  # the training step only
        torch._dynamo.reset()
        return out
    model.zero_grad(set_to_none=True)
    model.eval()
    _reset_peak(device)
    out["infer_ms"] = common.median_time(infer, device, *_iters(quick)) * 1e3
    out["infer_peak_gib"] = _peak_gib(device)
    return out


def llama(device, s, quick):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(num_hidden_layers=s["layers"], hidden_size=s["hidden"], intermediate_size=s["ffn"],
                      num_attention_heads=s["heads"], num_key_value_heads=s["kv_heads"], vocab_size=s["vocab"],
                      max_position_embeddings=2048, attn_implementation="sdpa")
    model = LlamaForCausalLM(cfg).to(device).eval()
    new = s["new"]
    out = {}
    for i, batch in enumerate(s["batches"]):
        prompt = _tokens(s["vocab"], (batch, s["prompt"]), 2 + i).to(device)
        gen = lambda: model.generate(prompt, attention_mask=torch.ones_like(prompt),  # noqa: E731
                                     max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0)
        iters, warmup = _iters(quick, decode=True)
        with torch.no_grad(), _amp(device):
            if i == 0:
                out["first_s"] = _once(gen, device)
                warmup = 0
            _reset_peak(device)
            out[f"decode_b{batch}"] = batch * new / common.median_time(gen, device, iters, warmup)
    out["decode_peak_gib"] = _peak_gib(device)
    return out


class LSTMLM(nn.Module):
    """rnn: nn.LSTM, or nn.GRU for the same model with GRU layers (benchmarks/lstm_steps.py --cell gru)."""
    def __init__(self, vocab, hidden, layers, rnn=nn.LSTM):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = rnn(hidden, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x):
        return self.head(self.rnn(self.embed(x))[0])


def lstm(device, s, quick):
    model = LSTMLM(s["vocab"], s["hidden"], s["layers"]).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    seq = _tokens(s["vocab"], (s["batch"], s["seq"] + 1), 1).to(device)
    x, y = seq[:, :-1], seq[:, 1:]

    def step():
        opt.zero_grad(set_to_none=True)
        with _amp(device):
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        opt.step()

    out = {}
    _train(step, device, quick, out)
    return out


WORKLOADS = {"gpt2": gpt2, "bert": bert, "llama": llama, "lstm": lstm,
             "gpt2_compiled": lambda d, s, q: gpt2(d, s, q, compiled=True),
             "bert_compiled": lambda d, s, q: bert(d, s, q, compiled=True)}


def ref_variants(ref):
    """(column label, setup) pairs: cuda with TF32 off and with torch's defaults; one column otherwise."""
    if torch.device(ref).type != "cuda":
        return [(ref, lambda: None)]
    defaults = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32

    def tf32(matmul, cudnn):
        def setup():
            torch.backends.cuda.matmul.allow_tf32 = matmul
            torch.backends.cudnn.allow_tf32 = cudnn
        return setup

    return [("cuda TF32 off", tf32(False, False)), ("cuda default", tf32(*defaults))]


def measure_all(device, quick, desc="models"):
    """Yields (model, measures or {"error": message}) on `device`; on ocl with its CPU fallbacks under "fallbacks"."""
    ocl = torch.device(device).type == "ocl"
    if ocl:
        import pytorch_ocl
    for name, sz in tqdm(sizes(quick).items(), desc=desc):
        if ocl:
            pytorch_ocl.reset_fallback_stats()
        torch.manual_seed(0)
        try:
            got = WORKLOADS[name](device, sz, quick)
        except Exception as e:  # noqa: BLE001 - one failing model must not hide the others
            text = str(e).strip()
            got = {"error": f"{type(e).__name__}: {text.splitlines()[0][:300] if text else ''}"}
            tqdm.write(f"{NAMES[name]} on {device} failed: {got['error']}", file=sys.stderr)
        if ocl:
            stats = {k: v for k, v in pytorch_ocl.fallback_stats().items() if v}
            if stats:
                got["fallbacks"] = stats
        gc.collect()
        mem = mem_module(device)
        if mem is not None:
            common.synchronize(device)
            mem.empty_cache()
        yield name, got


def _num(v, kind):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if kind in ("mem", "first") or v < 10:
        return f"{v:.2f}"
    return f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def ratio(o, r, kind):
    """ref/ocl for times, ocl/ref for rates and memory (> 1: ocl faster / uses more); None when not comparable."""
    if kind == "first" or o is None or r is None or not o or not r or math.isnan(o) or math.isnan(r):
        return None
    return r / o if kind == "time" else o / r


def table_rows(name, ocl, refs, quick):
    """Markdown rows of one model: ocl's measures against each reference column (refs: [(label, measures)])."""
    lines = []
    for model, key, label, kind in rows(quick):
        if model != name:
            continue
        o = ocl.get(key)
        line = f"| {NAMES[name]} | {label} | {'failed' if 'error' in ocl else _num(o, kind)} |"
        for i, (_, r) in enumerate(refs):
            rv = (r or {}).get(key)
            if kind == "first" and i > 0:
                rv = None  # a later variant runs warm
            q = ratio(o, rv, kind)
            line += f" {_num(rv, kind)} | {'' if q is None else (f'{q:.2f}x' if kind == 'mem' else f'{q:.2f}')} |"
        lines.append(line)
    return lines


def table_header(refs):
    head = "| model | measure | ocl |" + "".join(f" {label} | ratio |" for label, _ in refs)
    return [head, "|---|---|---:|" + "---:|---:|" * len(refs)]


def notes(ocl_results, refs):
    out = ["ratio: ref time / ocl time, ocl tok/s / ref tok/s (> 1: ocl faster); memory: ocl peak / ref peak",
           "first step: the first iteration of each model, program builds included on ocl (the reference column "
           "shows the cold first iteration of its first run)"]
    for name, m in ocl_results.items():
        if "error" in m:
            out.append(f"{NAMES[name]} failed on ocl: {m['error']}")
        if m.get("fallbacks"):
            out.append(f"{NAMES[name]}: CPU fallbacks on ocl {m['fallbacks']}")
    for label, ref in refs:
        for name, m in ref.items():
            if "error" in m:
                out.append(f"{NAMES[name]} failed on {label}: {m['error']}")
    return out


def plot(path, ocl_results, refs, quick):
    """Bar chart of the ratios of the time and rate rows, one bar per reference column; skipped without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no model plot", file=sys.stderr)
        return None
    picked = [(m, k, lab) for m, k, lab, kind in rows(quick) if kind in ("time", "rate")]
    kinds = {(m, k): kind for m, k, _, kind in rows(quick)}
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(picked) + 2), 4))
    width = 0.8 / max(1, len(refs))
    for j, (label, ref) in enumerate(refs):
        ys = [ratio(ocl_results.get(m, {}).get(k), (ref.get(m) or {}).get(k), kinds[(m, k)]) or 0
              for m, k, _ in picked]
        ax.bar([i + j * width for i in range(len(picked))], ys, width, label=f"vs {label}")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(picked))])
    short = {"train_ms": "training step", "infer_ms": "inference"}
    ax.set_xticklabels([f"{NAMES[m]}\n{short.get(k) or 'decode ' + k[len('decode_'):]}" for m, k, _ in picked],
                       rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("ratio (> 1: ocl faster)")
    ax.set_title("models: ref time / ocl time, ocl tok/s / ref tok/s", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
