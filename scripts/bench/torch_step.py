#!/usr/bin/env python3
"""PyTorch's training step on the same GPT as `trident bench step`: GPT-2's architecture (pre-LayerNorm blocks, causal
softmax attention, GELU MLP, tied embedding/LM head), AdamW, forward + backward + update per step. Prints one JSON
line: {"ms_median", "ms_min", "tokens_per_s", "threads", "torch", "device", "precision", "compiled"}.

On the CPU (scripts/bench/cpu.sh) it runs fp32 with attention written out (a masked softmax). On a GPU
(scripts/gpu/check.sh, the anchor of Trident's CUDA step) it runs as a PyTorch user would: attention through
scaled_dot_product_attention (flash attention), bf16 autocast over fp32 master weights, fused AdamW, and optionally
torch.compile.

  /usr/bin/python3 scripts/bench/torch_step.py --layers 12 --width 768 --heads 12 --vocab 50304 --batch 4 --seq 64
  python3 scripts/bench/torch_step.py --device cuda --precision bf16 --batch 16 --seq 1024 [--compile]
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
        if mask is None:  # the fused kernel PyTorch picks for the device (flash attention on a GPU)
            attention = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
            attention = F.softmax(scores.masked_fill(mask[:t, :t], float("-inf")), dim=-1) @ v
        x = x + self.c_proj(attention.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers, width, heads, vocab, seq, fused_attention=False):
        super().__init__()
        self.fused_attention = fused_attention
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
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x, None if self.fused_attention else self.mask)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied LM head
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in [("layers", 12), ("width", 768), ("heads", 12), ("vocab", 50304), ("batch", 4), ("seq", 64),
                          ("steps", 6), ("warmup", 2)]:
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                        help="bf16: autocast (bf16 matmuls over fp32 master weights)")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: PyTorch sees no CUDA device")
    torch.manual_seed(0)
    gpu = args.device == "cuda"
    model = GPT(args.layers, args.width, args.heads, args.vocab, args.seq, fused_attention=gpu).to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, **({"fused": True} if gpu else {}))
    step_model = torch.compile(model) if args.compile else model
    idx = torch.randint(args.vocab, (args.batch, args.seq), device=args.device)
    targets = torch.randint(args.vocab, (args.batch, args.seq), device=args.device)
    autocast = torch.autocast(args.device, dtype=torch.bfloat16, enabled=args.precision == "bf16")
    times = []
    for step in range(args.warmup + args.steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = step_model(idx, targets)
        loss.backward()
        optimizer.step()
        if gpu:
            torch.cuda.synchronize()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(json.dumps({"ms_median": median * 1e3, "ms_min": min(times) * 1e3,
                      "tokens_per_s": args.batch * args.seq / median, "threads": torch.get_num_threads(),
                      "torch": torch.__version__, "device": args.device, "precision": args.precision,
                      "compiled": args.compile}))


if __name__ == "__main__":
    main()
