"""Parameters shared by several modules stay one tensor on ocl.

Module.to() keeps a parameter object (and so every module attribute that refers to it) only when
torch._has_compatible_shallow_copy_type(cpu_param, ocl_tensor) is true; torch's own check knows no
PrivateUse1 backend, so tied weights (an LM's input embedding and output projection) used to be
split into two independent ocl parameters, and the shared weight silently got one of its two
gradients (GPT-2's wte.weight: relative error 0.80).
"""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F


def rel(a, b):
    a, b = a.detach().cpu().double(), b.detach().cpu().double()
    return float((a - b).norm() / (a.norm() + 1e-30))


class TiedLM(nn.Module):
    def __init__(self, vocab=60, dim=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(32, dim)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        h = self.emb(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        return self.head(self.norm(h))


def test_shallow_copy_type_is_compatible_between_cpu_and_ocl():
    cpu = torch.ones(3)
    dev = torch.ones(3, device="ocl")
    assert torch._has_compatible_shallow_copy_type(cpu, dev)
    assert torch._has_compatible_shallow_copy_type(dev, cpu)
    assert torch._has_compatible_shallow_copy_type(dev, dev)


def test_data_assignment_moves_a_parameter_between_devices():
    p = nn.Parameter(torch.arange(4.0))
    pid = id(p)
    p.data = p.data.to("ocl")
    assert id(p) == pid and p.device.type == "ocl" and p.requires_grad
    (p * p).sum().backward()
    assert torch.equal(p.grad.cpu(), 2 * torch.arange(4.0))
    p.data = p.data.cpu()
    assert p.device.type == "cpu"


@pytest.mark.parametrize("move", ["to", "ocl_method", "to_and_back"])
def test_module_to_keeps_tied_parameters_one_tensor(move):
    m = TiedLM()
    params_before = [id(p) for p in m.parameters()]
    if move == "to":
        m.to("ocl")
    elif move == "ocl_method":
        m.ocl()
    else:
        m.to("ocl").to("cpu").to("ocl:0")
    assert m.emb.weight is m.head.weight
    assert m.emb.weight.device.type == "ocl"
    # The module keeps its parameter objects, as it does for cuda: optimizers built before .to() stay valid.
    assert [id(p) for p in m.parameters()] == params_before
    assert len(list(m.parameters())) == 4


def test_tied_embedding_and_projection_gradients_match_cpu():
    torch.manual_seed(0)
    m = TiedLM()
    ids = torch.randint(0, 60, (2, 12))
    grads = {}
    for dev in ("cpu", "ocl"):
        mm = copy.deepcopy(m).to(dev)
        F.cross_entropy(mm(ids.to(dev)).flatten(0, 1), ids.flatten().to(dev)).backward()
        grads[dev] = {n: p.grad for n, p in mm.named_parameters()}
    assert grads["cpu"].keys() == grads["ocl"].keys()
    for n in grads["cpu"]:
        assert rel(grads["cpu"][n], grads["ocl"][n]) < 1e-5, n


def test_optimizer_built_before_to_trains_the_moved_parameters():
    torch.manual_seed(0)
    m = TiedLM()
    ref = copy.deepcopy(m)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    m.to("ocl")
    ids = torch.randint(0, 60, (2, 12))
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for model, o, dev in ((m, opt, "ocl"), (ref, ref_opt, "cpu")):
        F.cross_entropy(model(ids.to(dev)).flatten(0, 1), ids.flatten().to(dev)).backward()
        o.step()
    for (n, a), (_, b) in zip(ref.named_parameters(), m.named_parameters()):
        assert rel(a, b) < 1e-5, n


def test_gpt2_with_tied_embeddings_trains_like_cpu():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=64, vocab_size=500, resid_pdrop=0.0,
                                  embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg)
    assert model.transformer.wte.weight is model.lm_head.weight
    gen = torch.Generator().manual_seed(1)
    batches = [torch.randint(0, 500, (2, 32), generator=gen) for _ in range(3)]
    w0 = {n: p.detach().clone().double() for n, p in model.named_parameters()}
    result = {}
    for dev, dtype in (("cpu", torch.float64), ("cpu", torch.float32), ("ocl", torch.float32)):
        m = copy.deepcopy(model).to(dev, dtype).train()
        assert m.transformer.wte.weight is m.lm_head.weight
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        first_grads = None
        for ids in batches:
            opt.zero_grad()
            m(input_ids=ids.to(dev), labels=ids.to(dev)).loss.backward()
            if first_grads is None:
                first_grads = {n: p.grad.detach().cpu().double() for n, p in m.named_parameters()}
            opt.step()
        result[(dev, dtype)] = first_grads, {n: p.detach().cpu().double() for n, p in m.named_parameters()}
    ref_g, ref_w = result[("cpu", torch.float64)]
    cpu_g, cpu_w = result[("cpu", torch.float32)]
    ocl_g, ocl_w = result[("ocl", torch.float32)]
    for n in ref_g:
        assert rel(ref_g[n], ocl_g[n]) < max(1e-4, 10 * rel(ref_g[n], cpu_g[n])), n
    # The updates of 3 AdamW steps, compared with float64 on the CPU, and the CPU's own float32 spread.
    upd = lambda w: torch.cat([(w[n] - w0[n]).flatten() for n in w0])
    ref_u, cpu_u, ocl_u = upd(ref_w), upd(cpu_w), upd(ocl_w)
    cpu_err, ocl_err = rel(ref_u, cpu_u), rel(ref_u, ocl_u)
    assert ocl_err < max(1e-4, 3 * cpu_err), (ocl_err, cpu_err)
