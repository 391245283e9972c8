#!/usr/bin/python3
"""Write a parity directory (tests/reference/README.md) from the reference model itself.

Usage:  /usr/bin/python3 tests/reference/make_parity_fixture.py OUT_DIR [--attention linear] [--n-head 3 --n-embd 24]
            [--qk-activation silu|elu1|none] [--output-gate | --no-output-gate] [--output-norm hidden|head]

Until Trident's own dumper exists this exercises gpt_reference.py end to end: random GPT-2 initial weights (the
table of core/model/README.md, stored F32), a random packed batch of several documents (by default lengths 9, 1 and
14: a one-token document, and a -1 target at the end of the last one), and the outputs computed by the reference
model. --dtype float32 computes the outputs in float32 instead, as a stand-in for an fp32 implementation;
--perturb NAME[@INDEX] multiplies one element of an output tensor (default: its largest-magnitude element) by
1 + --perturb-rel, to show that the checker fails.
"""
from __future__ import annotations

import argparse
import json
import math
import struct
import sys
from pathlib import Path

import torch

from gpt_reference import LINEAR_KEYS, Batch, Config, Params, param_specs, reference_outputs

DTYPE_NAMES: dict[torch.dtype, str] = {torch.float32: "F32", torch.float64: "F64", torch.int32: "I32", torch.int64: "I64"}


def write_safetensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """8-byte little-endian header length, JSON header padded with spaces to a multiple of 8, then the data,
    largest element size first (then by name) so that every tensor starts 8-byte aligned, as Hugging Face does."""
    if sys.byteorder != "little":
        raise RuntimeError("this writer assumes a little-endian host")
    header: dict[str, dict] = {}
    chunks: list[bytes] = []
    offset = 0
    for name in sorted(tensors, key=lambda n: (-tensors[n].element_size(), n)):
        tensor = tensors[name].detach().contiguous()
        raw = tensor.numpy().tobytes()
        header[name] = {"dtype": DTYPE_NAMES[tensor.dtype], "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def init_weights(cfg: Config, gen: torch.Generator) -> Params:
    """GPT-2 initialisation from the weight table, in float32 (as stored)."""
    weights = {}
    for spec in param_specs(cfg):
        if spec.init_std is None:
            weights[spec.name] = torch.full(spec.shape, spec.init_value, dtype=torch.float32)
        else:
            weights[spec.name] = torch.randn(spec.shape, generator=gen, dtype=torch.float32) * spec.init_std
    return weights


def random_batch(cfg: Config, doc_lens: list[int], gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Documents with random tokens, positions 0..len-1 each, targets = next token (random after the last one),
    except that the last document's final target is -1 (no loss)."""
    tokens, targets, positions, cu = [], [], [], [0]
    for length in doc_lens:
        text = torch.randint(0, cfg.vocab_size, (length + 1,), generator=gen)
        tokens.append(text[:-1])
        targets.append(text[1:])
        positions.append(torch.arange(length))
        cu.append(cu[-1] + length)
    targets[-1][-1] = -1
    return {"tokens": torch.cat(tokens).int(), "targets": torch.cat(targets).int(),
            "positions": torch.cat(positions).int(), "cu_seqlens": torch.tensor(cu, dtype=torch.int32)}


def perturb(outputs: dict[str, torch.Tensor], spec: str, rel: float) -> None:
    name, _, index = spec.partition("@")
    flat = outputs[name].view(-1)
    i = int(index) if index else int(flat.abs().argmax())
    before = float(flat[i])
    flat[i] = flat[i] * (1 + rel)
    print(f"perturbed {name}[flat {i}]: {before:.9e} -> {float(flat[i]):.9e} (relative {rel:g})")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir", type=Path)
    p.add_argument("--attention", choices=["softmax", "linear"], default="softmax")
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-embd", type=int, default=32)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--vocab-size", type=int, default=64)
    p.add_argument("--max-seq-len", type=int, default=32)
    p.add_argument("--decay-layer-scaling", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--qk-activation", choices=list(LINEAR_KEYS["qk_activation"]), default="silu",
                   help="linear attention: feature map of q and k")
    p.add_argument("--output-gate", action=argparse.BooleanOptionalAction, default=True,
                   help="linear attention: output gate (attn.c_gate)")
    p.add_argument("--output-norm", choices=list(LINEAR_KEYS["output_norm"]), default="hidden",
                   help="linear attention: RMSNorm of the attention output over the hidden dimension or per head")
    p.add_argument("--doc-lens", default="9,1,14", help="comma-separated document lengths")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--eps", type=float, default=1e-8, help="AdamW epsilon")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64", help="precision of the outputs")
    p.add_argument("--perturb", metavar="NAME[@INDEX]", help="output tensor element to perturb")
    p.add_argument("--perturb-rel", type=float, default=1e-3)
    return p.parse_args()


def main() -> int:
    args = parse_args()
    cfg = Config(n_layer=args.n_layer, n_embd=args.n_embd, n_head=args.n_head, vocab_size=args.vocab_size,
                 max_seq_len=args.max_seq_len, attention=args.attention, decay_layer_scaling=args.decay_layer_scaling,
                 lr=args.lr, beta1=0.9, beta2=0.95, eps=args.eps, weight_decay=args.weight_decay,
                 grad_clip=args.grad_clip, steps=args.steps, qk_activation=args.qk_activation,
                 output_gate=args.output_gate, output_norm=args.output_norm)
    gen = torch.Generator().manual_seed(args.seed)
    weights = init_weights(cfg, gen)
    batch_tensors = random_batch(cfg, [int(n) for n in args.doc_lens.split(",")], gen)
    batch = Batch.from_tensors(batch_tensors, cfg)
    dtype = getattr(torch, args.dtype)
    params = {name: w.to(dtype) for name, w in weights.items()}
    outputs = reference_outputs(params, batch, cfg)
    grad_norm = math.sqrt(sum(float(g.double().pow(2).sum()) for n, g in outputs.items() if n.startswith("grad.")))
    print(f"{args.dtype} outputs: loss {float(outputs['loss']):.6f}, global grad norm at init {grad_norm:.4f} "
          f"(clipping {'active' if 0 < cfg.grad_clip < grad_norm else 'inactive'} at step 1), "
          f"losses {[round(float(x), 6) for x in outputs['losses']]}")
    outputs = {name: t.to(torch.float32) for name, t in outputs.items()}
    if args.perturb:
        perturb(outputs, args.perturb, args.perturb_rel)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "config.json").write_text(json.dumps(cfg.__dict__, indent=2) + "\n")
    write_safetensors(args.out_dir / "weights.safetensors", weights)
    write_safetensors(args.out_dir / "batch.safetensors", batch_tensors)
    write_safetensors(args.out_dir / "outputs.safetensors", outputs)
    print(f"wrote {args.out_dir}: config.json, weights/batch/outputs.safetensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
