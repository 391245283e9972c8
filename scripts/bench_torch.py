#!/usr/bin/env python3
"""PyTorch's training step on the same GPT as `trident bench step`, for scripts/bench_cpu.sh: GPT-2's architecture
(pre-LayerNorm blocks, causal softmax attention, GELU MLP, tied embedding/LM head), fp32, AdamW, forward + backward +
update per step. Prints one JSON line: {"ms_median", "ms_min", "tokens_per_s", "threads", "torch"}.

  /usr/bin/python3 scripts/bench_cpu_torch.py --layers 12 --width 768 --heads 12 --vocab 50304 --batch 4 --seq 64
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.c_attn, self.c_proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.c_fc, self.mlp_proj = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x, mask):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        attention = F.softmax(scores.masked_fill(mask[:t, :t], float("-inf")), dim=-1) @ v
        x = x + self.c_proj(attention.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers, width, heads, vocab, seq):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(seq, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.register_buffer("mask", torch.ones(seq, seq, dtype=torch.bool).triu(1))
        # GPT-2's initialisation, as Trident's (core/model/layout.cpp): PyTorch's defaults (N(0, 1) embeddings) give
        # logits in the hundreds and, from the third step on, denormal gradients whose arithmetic slowed PyTorch's
        # step 6x on an Intel processor.
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif ".ln_" in name or name.startswith("ln_"):
                nn.init.ones_(p)
            else:
                residual = name.endswith("c_proj.weight") or name.endswith("mlp_proj.weight")
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * layers) if residual else 0.02)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x, self.mask)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied LM head
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in [("layers", 12), ("width", 768), ("heads", 12), ("vocab", 50304), ("batch", 4), ("seq", 64),
                          ("steps", 6), ("warmup", 2)]:
        parser.add_argument(f"--{name}", type=int, default=default)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = GPT(args.layers, args.width, args.heads, args.vocab, args.seq)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    idx = torch.randint(args.vocab, (args.batch, args.seq))
    targets = torch.randint(args.vocab, (args.batch, args.seq))
    times = []
    for step in range(args.warmup + args.steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        model(idx, targets).backward()
        optimizer.step()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(json.dumps({"ms_median": median * 1e3, "ms_min": min(times) * 1e3,
                      "tokens_per_s": args.batch * args.seq / median, "threads": torch.get_num_threads(),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
