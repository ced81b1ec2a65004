"""A small recurrent language model's SGD steps (tests/test_lstm_fused.py, tests/test_gru_fused.py): the whole-network
check of the recurrent step paths a heuristic picks (fused or GEMM + cell, K-slices per group)."""
import torch
import torch.nn as nn
from torch.testing import assert_close


def train_lm(rnn_cls, device, hidden=20, steps=3):
    """Parameters after `steps` SGD steps (momentum; Adam's first steps take a gradient's sign, which rounding can
    flip where it is near zero) of Embedding(30, 12) -> 2-layer batch_first rnn_cls(12, hidden) -> Linear, on
    `device`, from the same initial weights and data on any device."""
    torch.manual_seed(0)
    emb, rnn, head = nn.Embedding(30, 12), rnn_cls(12, hidden, num_layers=2, batch_first=True), nn.Linear(hidden, 30)
    params = [*emb.parameters(), *rnn.parameters(), *head.parameters()]
    for mod in (emb, rnn, head):
        mod.to(device)
    opt = torch.optim.SGD(params, lr=0.5, momentum=0.9)
    data = torch.randint(0, 30, (4, 9), generator=torch.Generator().manual_seed(4)).to(device)
    for _ in range(steps):
        opt.zero_grad()
        logits = head(rnn(emb(data[:, :-1]))[0])
        nn.functional.cross_entropy(logits.reshape(-1, 30), data[:, 1:].reshape(-1)).backward()
        opt.step()
    return [p.detach().cpu() for p in params]


def assert_lm_steps_match(rnn_cls, fused_var, hidden, ks, monkeypatch, device="ocl:0"):
    """train_lm on `device` ends in the CPU's weights on both step paths (`fused_var` = 1 and 0) with
    PYTORCH_OCL_RNN_KSPLIT=ks ("" the default)."""
    monkeypatch.setenv("PYTORCH_OCL_RNN_KSPLIT", ks)
    ref = train_lm(rnn_cls, "cpu", hidden)
    for fused in ("1", "0"):
        monkeypatch.setenv(fused_var, fused)
        for a, b in zip(train_lm(rnn_cls, device, hidden), ref):
            assert_close(a, b, rtol=1e-4, atol=1e-5)
