"""Hugging Face transformers models run natively on ocl: forward, generate() and training.

Tiny random-weight models built from configs (GPT-2, a Llama with grouped-query attention, RoPE,
RMSNorm and SwiGLU, BERT masked-LM, a T5 encoder-decoder, a ViT classifier), each with the eager
and the sdpa attention implementation, against the same model on the CPU: logits; greedy and
beam-search generate() token for token (left-padded batches, several EOS ids so isin and the
stopping criteria see real work, sequences finishing early); sampling (top-k/top-p/temperature/
repetition penalty: sort, cumsum, scatter, multinomial) checked where it is deterministic; three
AdamW steps against float64 on the CPU. The whole suite runs strict, so a CPU fallback anywhere in
generate() fails the test. Plus isin itself against the CPU.
"""
import copy

import pytest
import torch

import pytorch_ocl

transformers = pytest.importorskip("transformers")

VOCAB = 120
DECODERS = ("gpt2", "llama", "t5")  # the models with generate()
MODELS = ("gpt2", "llama", "bert", "t5", "vit")
ATTN = ("eager", "sdpa")


def rel(a, b):
    a, b = a.detach().cpu().double(), b.detach().cpu().double()
    return float((a - b).norm() / (a.norm() + 1e-30))


def make_model(name, attn):
    """A tiny model with dropout off; initializer ranges wide enough that the logits of different
    tokens are well apart (greedy/beam comparisons then do not hinge on float32 rounding)."""
    T = transformers
    torch.manual_seed(0)
    if name == "gpt2":
        cfg = T.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=VOCAB, n_positions=64, resid_pdrop=0.0,
                           embd_pdrop=0.0, attn_pdrop=0.0, initializer_range=0.2, bos_token_id=2, eos_token_id=1,
                           pad_token_id=0)
        cls = T.GPT2LMHeadModel
    elif name == "llama":
        cfg = T.LlamaConfig(num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=4,
                            num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=64,
                            initializer_range=0.2, bos_token_id=2, eos_token_id=1, pad_token_id=0)
        cls = T.LlamaForCausalLM
    elif name == "bert":
        cfg = T.BertConfig(num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=4,
                           vocab_size=VOCAB, max_position_embeddings=64, hidden_dropout_prob=0.0,
                           attention_probs_dropout_prob=0.0, initializer_range=0.2)
        cls = T.BertForMaskedLM
    elif name == "t5":
        cfg = T.T5Config(num_layers=2, num_decoder_layers=2, d_model=32, d_ff=64, d_kv=8, num_heads=4,
                         vocab_size=VOCAB, dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0,
                         eos_token_id=1, feed_forward_proj="gated-gelu", initializer_factor=3.0)
        cls = T.T5ForConditionalGeneration
    elif name == "vit":
        cfg = T.ViTConfig(num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=4,
                          image_size=16, patch_size=4, num_labels=5, hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0, initializer_range=0.2)
        cls = T.ViTForImageClassification
    else:
        raise ValueError(name)
    return cls._from_config(cfg, attn_implementation=attn).eval()


_cache = {}


def models(name, attn):
    """(cpu model, ocl model), built once per module run."""
    if (name, attn) not in _cache:
        cpu = make_model(name, attn)
        assert cpu.config._attn_implementation == attn
        _cache[(name, attn)] = cpu, copy.deepcopy(cpu).to("ocl")
    return _cache[(name, attn)]


def text_batch():
    gen = torch.Generator().manual_seed(3)
    ids = torch.randint(3, VOCAB, (2, 6), generator=gen)
    mask = torch.ones_like(ids)
    return ids, mask


def inputs(name, dev, left_pad=True):
    """Model inputs: row 0 padded (left for decoder-only models, right for encoders)."""
    if name == "vit":
        return {"pixel_values": torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(4)).to(dev)}
    ids, mask = text_batch()
    if name in ("gpt2", "llama") and left_pad:
        ids[0, :2], mask[0, :2] = 0, 0
    else:
        ids[0, -2:], mask[0, -2:] = 0, 0
    kw = {"input_ids": ids.to(dev), "attention_mask": mask.to(dev)}
    if name == "bert":
        kw["token_type_ids"] = torch.tensor([[0, 0, 0, 1, 1, 1]] * 2).to(dev)
    return kw


def generate(model, name, dev, **kw):
    kw.setdefault("max_new_tokens", 8)
    kw.setdefault("pad_token_id", 0)
    return model.generate(**inputs(name, dev), **kw)


@pytest.mark.parametrize("attn", ATTN)
@pytest.mark.parametrize("name", MODELS)
def test_logits_match_cpu(name, attn):
    cpu, dev = models(name, attn)
    extra = {}
    if name == "t5":
        extra = {"decoder_input_ids": torch.tensor([[0, 5, 9, 17], [0, 44, 3, 8]])}
    with torch.no_grad():
        want = cpu(**inputs(name, "cpu"), **extra).logits
        got = dev(**inputs(name, "ocl"), **{k: v.to("ocl") for k, v in extra.items()}).logits
    assert got.device.type == "ocl"
    torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-4 * float(want.abs().max()))


def eos_pair(cpu, name):
    """Two EOS ids: a token the CPU's greedy run produces a few steps in, in row 1 only (so that
    row stops and is padded while row 0 goes on), after one that never comes."""
    out = generate(cpu, name, "cpu", eos_token_id=None)
    new = out[:, -8:].tolist()
    unused = next(v for v in range(VOCAB - 1, 2, -1) if v not in out.flatten().tolist())
    for k in range(2, 6):
        if new[1][k] not in new[0] and new[1][k] not in new[1][:k]:
            return [unused, new[1][k]]
    pytest.fail(f"no token of {new} stops row 1 alone: pick another seed")


@pytest.mark.parametrize("attn", ATTN)
@pytest.mark.parametrize("name", DECODERS)
def test_greedy_generate_matches_cpu(name, attn):
    cpu, dev = models(name, attn)
    eos = eos_pair(cpu, name)
    want = generate(cpu, name, "cpu", eos_token_id=eos)
    got = generate(dev, name, "ocl", eos_token_id=eos)
    assert got.device.type == "ocl"
    assert torch.equal(got.cpu(), want), (got.cpu(), want)
    # The setup works as meant: row 1 hit an EOS and was padded after it while row 0 went on.
    new = want[:, 1:] if name == "t5" else want[:, inputs(name, "cpu")["input_ids"].shape[1]:]
    stop = int(torch.isin(new[1], torch.tensor(eos)).nonzero()[0])
    assert stop < new.shape[1] - 1 and (new[1, stop + 1:] == 0).all(), new


@pytest.mark.parametrize("name", DECODERS)
def test_static_cache_generate_matches_cpu(name):
    """A preallocated KV cache: generate() writes each step in place (index_copy_) instead of cat.
    transformers catches NotImplementedError from index_copy_ (which is what strict mode raises)
    and takes another path, so here fallbacks are counted instead of raised."""
    cpu, dev = models(name, "sdpa")
    want = generate(cpu, name, "cpu", eos_token_id=None, cache_implementation="static")
    pytorch_ocl.set_strict(False)
    pytorch_ocl.reset_fallback_stats()
    got = generate(dev, name, "ocl", eos_token_id=None, cache_implementation="static")
    assert pytorch_ocl.fallback_stats() == {}
    assert torch.equal(got.cpu(), want), (got.cpu(), want)


@pytest.mark.parametrize("name", DECODERS)
def test_beam_search_matches_cpu(name):
    cpu, dev = models(name, "sdpa")
    kw = dict(num_beams=3, num_return_sequences=2, length_penalty=0.8, eos_token_id=eos_pair(cpu, name),
              return_dict_in_generate=True, output_scores=True)
    want = generate(cpu, name, "cpu", **kw)
    got = generate(dev, name, "ocl", **kw)
    assert torch.equal(got.sequences.cpu(), want.sequences), (got.sequences.cpu(), want.sequences)
    torch.testing.assert_close(got.sequences_scores.cpu(), want.sequences_scores, rtol=1e-4, atol=1e-4)


SAMPLING = dict(do_sample=True, top_k=10, top_p=0.9, temperature=0.7, repetition_penalty=1.3)


@pytest.mark.parametrize("name", DECODERS)
def test_sampling_generate(name):
    cpu, dev = models(name, "sdpa")
    prompt_len = inputs(name, "cpu")["input_ids"].shape[1] if name != "t5" else 1
    runs = []
    for _ in range(2):
        torch.manual_seed(1234)
        out = generate(dev, name, "ocl", eos_token_id=None, return_dict_in_generate=True, output_scores=True,
                       **SAMPLING)
        runs.append(out)
    seq = runs[0].sequences.cpu()
    assert torch.equal(seq, runs[1].sequences.cpu()), "a seeded sampling run is not reproducible"
    assert seq.shape == (2, prompt_len + 8) and int(seq.min()) >= 0 and int(seq.max()) < VOCAB
    if name != "t5":
        assert torch.equal(seq[:, :prompt_len], inputs(name, "cpu")["input_ids"])
    # Every sampled token survived top-k/top-p (its processed score is finite), and at most 10 did.
    for step, scores in enumerate(runs[0].scores):
        scores = scores.cpu()
        tok = seq[:, prompt_len + step]
        assert torch.isfinite(scores.gather(1, tok[:, None])).all(), step
        assert (torch.isfinite(scores).sum(1) <= 10).all(), step
    # With top_k=1 the sampling path (penalty, temperature, warpers, multinomial) is deterministic.
    torch.manual_seed(0)
    want = generate(cpu, name, "cpu", eos_token_id=None, **dict(SAMPLING, top_k=1))
    got = generate(dev, name, "ocl", eos_token_id=None, **dict(SAMPLING, top_k=1))
    assert torch.equal(got.cpu(), want), (got.cpu(), want)


def test_logits_processors_match_cpu():
    """The processors sampling applies (repetition penalty: gather/scatter; temperature; top-k:
    topk; top-p: sort, softmax, cumsum, scatter; min-p; no-repeat-ngram) on the same scores."""
    from transformers import (LogitsProcessorList, MinPLogitsWarper, NoRepeatNGramLogitsProcessor,
                              RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper, TopKLogitsWarper,
                              TopPLogitsWarper)
    gen = torch.Generator().manual_seed(5)
    ids = torch.randint(0, 50, (3, 12), generator=gen)
    scores = torch.randn(3, 50, generator=gen) * 3
    for procs in ([RepetitionPenaltyLogitsProcessor(1.3), TemperatureLogitsWarper(0.7), TopKLogitsWarper(10),
                   TopPLogitsWarper(0.9)], [MinPLogitsWarper(0.05)], [NoRepeatNGramLogitsProcessor(2)]):
        lp = LogitsProcessorList(procs)
        want = lp(ids, scores.clone())
        got = lp(ids.to("ocl"), scores.to("ocl")).cpu()
        assert torch.equal(torch.isinf(got), torch.isinf(want)), procs
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def training_batch(name):
    gen = torch.Generator().manual_seed(7)
    if name == "vit":
        return [{"pixel_values": torch.randn(2, 3, 16, 16, generator=gen), "labels": torch.tensor([1, 3])}
                for _ in range(3)]
    batches = []
    for _ in range(3):
        ids = torch.randint(3, VOCAB, (2, 8), generator=gen)
        b = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}
        if name == "t5":
            b["labels"] = torch.randint(3, VOCAB, (2, 5), generator=gen)
        batches.append(b)
    return batches


@pytest.mark.parametrize("name", MODELS)
def test_adamw_training_matches_cpu(name):
    model = make_model(name, "sdpa")
    batches = training_batch(name)
    w0 = {n: p.detach().clone().double() for n, p in model.named_parameters()}
    result = {}
    for dev, dtype in (("cpu", torch.float64), ("cpu", torch.float32), ("ocl", torch.float32)):
        m = copy.deepcopy(model).to(dev, dtype).train()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        for b in batches:
            opt.zero_grad()
            b = {k: v.to(dev, dtype) if v.is_floating_point() else v.to(dev) for k, v in b.items()}
            m(**b).loss.backward()
            opt.step()
        result[dev, dtype] = {n: p.detach().cpu().double() for n, p in m.named_parameters()}
    upd = lambda w: torch.cat([(w[n] - w0[n]).flatten() for n in w0])
    ref_u, cpu_u, ocl_u = (upd(result[k]) for k in (("cpu", torch.float64), ("cpu", torch.float32),
                                                    ("ocl", torch.float32)))
    assert float(ref_u.norm()) > 0
    cpu_err, ocl_err = rel(ref_u, cpu_u), rel(ref_u, ocl_u)
    assert ocl_err < max(1e-4, 3 * cpu_err), (ocl_err, cpu_err)


# ---- isin ----

ISIN_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.float32, torch.float64,
               torch.float16, torch.bfloat16)


def check_isin(elements, test_elements, **kw):
    dev = lambda x: x.to("ocl") if isinstance(x, torch.Tensor) else x
    want = torch.isin(elements, test_elements, **kw)
    got = torch.isin(dev(elements), dev(test_elements), **kw)
    assert got.device.type == "ocl" and got.dtype == torch.bool
    assert torch.equal(got.cpu(), want), (got.cpu(), want)


@pytest.mark.parametrize("n_test", [1, 5, 200])  # 200: past the linear scan, the sort + binary search path
@pytest.mark.parametrize("dtype", ISIN_DTYPES)
def test_isin_dtypes(dtype, n_test):
    gen = torch.Generator().manual_seed(n_test)
    elements = torch.randint(0, 100, (7, 9), generator=gen).to(dtype)
    test_elements = torch.randint(0, 100, (n_test,), generator=gen).to(dtype)
    for invert in (False, True):
        check_isin(elements, test_elements, invert=invert)
    if n_test == 200:  # unique values: assume_unique must not change the answer
        check_isin(elements, torch.unique(test_elements), assume_unique=True)


@pytest.mark.parametrize("n_test", [4, 300])
def test_isin_floats_nan_and_signed_zero(n_test):
    elements = torch.tensor([1.5, float("nan"), -0.0, 0.0, float("inf"), -2.0, 7.0])
    base = torch.tensor([float("nan"), 0.0, 1.5, float("inf")])
    test_elements = base.repeat(n_test // 4)
    check_isin(elements, test_elements)
    check_isin(elements, test_elements, invert=True)


def test_isin_mixed_dtypes_promote():
    check_isin(torch.tensor([1, 2, 3]), torch.tensor([1.5, 2.0]))
    check_isin(torch.tensor([300, 44], dtype=torch.int16), torch.tensor([44], dtype=torch.uint8))
    check_isin(torch.arange(10, dtype=torch.uint8), torch.tensor([3, 4, 300], dtype=torch.int64))


def test_isin_scalars():
    check_isin(torch.tensor([1.5, 3.0, 2.0]), 3)
    check_isin(torch.tensor([1.5, 3.0, 2.0]), 3, invert=True)
    check_isin(torch.tensor([1, 2, 3]), 2.5)
    check_isin(3, torch.tensor([1, 3]))
    check_isin(2.5, torch.tensor([1, 2, 3]))
    check_isin(2, torch.tensor([1.0, 2.0]), invert=True)
    check_isin(torch.tensor(4), torch.tensor([4, 5]))  # 0-dim elements
    check_isin(torch.tensor([4, 6]), torch.tensor(6))  # 0-dim test elements


def test_isin_empty():
    check_isin(torch.zeros(0, 3), torch.tensor([1.0]))
    check_isin(torch.ones(2, 3), torch.zeros(0))
    check_isin(torch.ones(2, 3), torch.zeros(0), invert=True)


def test_isin_non_contiguous():
    x = torch.arange(48).view(6, 8)
    t = torch.arange(0, 100, 3)
    check_isin(x.t(), t)
    check_isin(x[:, ::3], t)
    check_isin(x[::2].expand(2, 3, 8), t)
    # Non-contiguous test elements (the CPU's kernel cannot view() them: compare with a copy).
    got = torch.isin(x.to("ocl"), x.to("ocl")[1::2, ::2])
    assert torch.equal(got.cpu(), torch.isin(x, x[1::2, ::2].contiguous()))
    tt = torch.arange(200).view(20, 10).t()[::2]
    got = torch.isin(x.to("ocl"), tt.to("ocl"))
    assert torch.equal(got.cpu(), torch.isin(x, tt.contiguous()))


def test_isin_out_argument():
    x, t = torch.arange(12).view(3, 4), torch.tensor([2, 5, 11])
    out = torch.empty(4, 3, dtype=torch.bool, device="ocl").t()  # non-contiguous out
    torch.isin(x.to("ocl"), t.to("ocl"), out=out)
    assert torch.equal(out.cpu(), torch.isin(x, t))
    out = torch.empty(0, dtype=torch.bool, device="ocl")  # resized
    torch.isin(x.to("ocl"), t.to("ocl"), invert=True, out=out)
    assert torch.equal(out.cpu(), torch.isin(x, t, invert=True))


def test_isin_rejects_what_the_cpu_rejects():
    for a, b in ((torch.tensor([True]), torch.tensor([True])), (torch.tensor([1 + 1j]), torch.tensor([1j]))):
        with pytest.raises(RuntimeError, match="Unsupported input type"):
            torch.isin(a, b)
        with pytest.raises(RuntimeError, match="Unsupported input type"):
            torch.isin(a.to("ocl"), b.to("ocl"))
