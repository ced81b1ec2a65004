"""A small recurrent language model's SGD steps (tests/test_lstm_fused.py, tests/test_gru_fused.py): the whole-network
check of the recurrent step paths a heuristic picks (fused or GEMM + cell, K-slices per group)."""
import torch
import torch.nn as nn


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
