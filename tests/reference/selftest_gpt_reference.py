#!/usr/bin/python3
"""Checks of gpt_reference.py itself against independent oracles, so that a parity failure indicts Trident.

Usage:  /usr/bin/python3 tests/reference/selftest_gpt_reference.py

- ALiBi slopes against the values listed in docs/methods.md section 1, and the per-layer factor;
- linear attention (quadratic form) against the token-by-token recurrence S = lambda S + k^T v, o = q S (fp64 oracle);
- the linear block's feature maps against torch.nn.functional, and the whole block (feature map, output norm over the
  hidden dimension or per head, output gate) against a token-by-token loop; c_gate's place in the parameter table;
- softmax attention against a row-by-row loop; LayerNorm and GELU against torch.nn.functional;
- no attention across documents, causality inside a document;
- autograd gradient against a central finite difference along a random direction;
- the explicit AdamW + clipping against torch.optim.AdamW + torch.nn.utils.clip_grad_norm_;
- the safetensors reader on well-formed and malformed files.
"""
from __future__ import annotations

import json
import math
import struct
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

import gpt_reference as ref
from make_parity_fixture import init_weights, random_batch, write_safetensors

torch.set_default_dtype(torch.float64)
CHECKS: list[Callable[[], None]] = []


def check(fn: Callable[[], None]) -> Callable[[], None]:
    CHECKS.append(fn)
    return fn


def tiny_config(attention: str, n_head: int = 4, n_embd: int = 32, n_layer: int = 2, steps: int = 3,
                scaling: bool = True, qk_activation: str = "silu", output_gate: bool = True,
                output_norm: str = "hidden") -> ref.Config:
    return ref.Config(n_layer=n_layer, n_embd=n_embd, n_head=n_head, vocab_size=64, max_seq_len=32,
                      attention=attention, decay_layer_scaling=scaling, lr=1e-2, beta1=0.9, beta2=0.95, eps=1e-8,
                      weight_decay=0.1, grad_clip=1.0, steps=steps, qk_activation=qk_activation,
                      output_gate=output_gate, output_norm=output_norm)


# (qk_activation, output_gate, output_norm): the default block, the old block, and mixed ones
LINEAR_VARIANTS = [("silu", True, "hidden"), ("none", False, "head"), ("elu1", False, "head"), ("silu", True, "head"),
                   ("elu1", True, "hidden"), ("none", False, "hidden")]


def tiny_problem(cfg: ref.Config, seed: int = 0, doc_lens: tuple[int, ...] = (9, 1, 14)) -> tuple[ref.Params, ref.Batch]:
    gen = torch.Generator().manual_seed(seed)
    weights = init_weights(cfg, gen)
    # larger than GPT-2's init so that attention patterns and decays actually matter in the checks
    params = {name: (w.double() * (5.0 if w.dim() == 2 else 1.0)) for name, w in weights.items()}
    return params, ref.Batch.from_tensors(random_batch(cfg, list(doc_lens), gen), cfg)


def assert_close(got: torch.Tensor, want: torch.Tensor, tol: float, what: str) -> None:
    err = float((got - want).abs().max() / want.abs().max().clamp(min=1e-300))
    assert err <= tol, f"{what}: normalised error {err:.3e} > {tol:.1e}"


@check
def alibi_slopes_for_head_counts_of_two_powers_and_between() -> None:
    h8 = [2.0 ** -(i + 1) for i in range(8)]
    assert ref.alibi_slopes(8) == torch.tensor(h8, dtype=torch.float32).tolist()
    assert_close(torch.tensor(ref.alibi_slopes(12)), torch.tensor(h8 + [0.7071, 0.3536, 0.1768, 0.0884]), 1e-4, "H=12")
    assert_close(torch.tensor(ref.alibi_slopes(16)[:4]), torch.tensor([0.7071, 0.5, 0.3536, 0.25]), 1e-4, "H=16")
    assert ref.alibi_slopes(3) == [2.0**-4, 2.0**-8, 2.0**-2], ref.alibi_slopes(3)
    assert ref.alibi_slopes(4) == [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8]


@check
def layer_factor() -> None:
    one = tiny_config("linear", n_layer=1)
    assert ref.layer_decay_rates(one, 0) == [s * (1 + 1e-5) for s in ref.alibi_slopes(4)]
    three = tiny_config("linear", n_layer=3)
    for layer, factor in enumerate([1 + 1e-5, 0.5 + 1e-5, 1e-5]):
        assert_close(torch.tensor(ref.layer_decay_rates(three, layer)),
                     torch.tensor(ref.alibi_slopes(4)) * factor, 1e-15, f"layer {layer}")
    assert ref.layer_decay_rates(tiny_config("linear", n_layer=3, scaling=False), 2) == ref.alibi_slopes(4)


@check
def linear_attention_matches_recurrence() -> None:
    H, n, D = 3, 11, 5
    q, k, v = (torch.randn(H, n, D) for _ in range(3))
    rates = [0.9, 0.25, 1e-5]
    mask = ref.decay_mask(rates, n, torch.float64)
    quadratic = ((q @ k.transpose(1, 2)) * mask) @ v
    for h in range(H):
        lam, state = math.exp(-rates[h]), torch.zeros(D, D)
        for s in range(n):
            state = lam * state + torch.outer(k[h, s], v[h, s])
            assert_close(quadratic[h, s], q[h, s] @ state, 1e-12, f"head {h} token {s}")
    o = quadratic
    normed = ref.normalised_linear_attention(q, k, v, rates)
    assert_close(normed, o / torch.sqrt((o * o).mean(-1, keepdim=True) + 1e-5), 1e-14, "RMSNorm")


@check
def feature_maps_match_torch() -> None:
    x = torch.randn(50) * 3
    x[:3] = torch.tensor([0.0, -0.0, 1e-300])
    assert_close(ref.feature_map(x, "silu"), F.silu(x), 1e-15, "silu")
    assert_close(ref.feature_map(x, "elu1"), F.elu(x) + 1, 1e-15, "elu1")
    assert torch.equal(ref.feature_map(x, "none"), x)
    leaf = torch.tensor([-2.0, 0.0, 3.0], requires_grad=True)
    (grad,) = torch.autograd.grad(ref.feature_map(leaf, "elu1").sum(), leaf)
    assert_close(grad, torch.tensor([math.exp(-2.0), 1.0, 1.0]), 1e-15, "elu1 derivative")


@check
def linear_block_matches_token_loop() -> None:
    """attention() + the gate of block() against a token-by-token loop over the recurrence of core/model/README.md."""
    for act, gate, norm in LINEAR_VARIANTS:
        cfg = tiny_config("linear", n_head=3, n_embd=24, qk_activation=act, output_gate=gate, output_norm=norm)
        params, batch = tiny_problem(cfg, seed=4)
        layer, C, H, D = 1, cfg.n_embd, cfg.n_head, cfg.head_dim
        h = torch.randn(batch.tokens.numel(), C)
        qkv = ref.conv1d(h, params, f"transformer.h.{layer}.attn.c_attn")
        got = ref.attention(qkv, batch, cfg, layer)
        if gate:
            got = got * ref.conv1d(h, params, f"transformer.h.{layer}.attn.c_gate")
        phi = {"silu": F.silu, "elu1": lambda t: F.elu(t) + 1, "none": lambda t: t}[act]
        lam = [math.exp(-s) for s in ref.layer_decay_rates(cfg, layer)]
        for begin, end in batch.documents():
            states = [torch.zeros(D, D) for _ in range(H)]
            for t in range(begin, end):
                heads = []
                for hd in range(H):
                    q, k, v = (qkv[t, i * C + hd * D : i * C + (hd + 1) * D] for i in range(3))
                    states[hd] = lam[hd] * states[hd] + torch.outer(phi(k), v)
                    heads.append(phi(q) @ states[hd])
                if norm == "head":
                    o = torch.cat([x / torch.sqrt((x * x).mean() + 1e-5) for x in heads])
                else:
                    o = torch.cat(heads)
                    o = o / torch.sqrt((o * o).mean() + 1e-5)
                if gate:
                    u = h[t] @ params[f"transformer.h.{layer}.attn.c_gate.weight"]
                    o = o * (u + params[f"transformer.h.{layer}.attn.c_gate.bias"])
                assert_close(got[t], o, 1e-12, f"{act}/{gate}/{norm} token {t}")


@check
def gate_weights_follow_c_attn() -> None:
    for attention, gate in (("linear", True), ("linear", False), ("softmax", True)):
        names = [spec.name for spec in ref.param_specs(tiny_config(attention, output_gate=gate))]
        has_gate = attention == "linear" and gate
        assert ("transformer.h.1.attn.c_gate.weight" in names) == has_gate, (attention, gate)
        if has_gate:
            i = names.index("transformer.h.1.attn.c_attn.bias")
            assert names[i + 1 : i + 3] == ["transformer.h.1.attn.c_gate.weight", "transformer.h.1.attn.c_gate.bias"]
    spec = {s.name: s for s in ref.param_specs(tiny_config("linear"))}
    w, b = spec["transformer.h.0.attn.c_gate.weight"], spec["transformer.h.0.attn.c_gate.bias"]
    assert (w.shape, w.decay, w.init_std, b.shape, b.decay, b.init_std) == ((32, 32), True, 0.02, (32,), False, None)


@check
def softmax_attention_matches_loop() -> None:
    H, n, D = 2, 7, 4
    q, k, v = (torch.randn(H, n, D) for _ in range(3))
    got = ref.causal_softmax_attention(q, k, v)
    for h in range(H):
        for i in range(n):
            w = torch.softmax(k[h, : i + 1] @ q[h, i] / math.sqrt(D), dim=0)
            assert_close(got[h, i], w @ v[h, : i + 1], 1e-13, f"head {h} row {i}")


@check
def layer_norm_and_gelu_match_torch() -> None:
    x, w, b = torch.randn(6, 10) * 3 + 1, torch.randn(10), torch.randn(10)
    assert_close(ref.layer_norm(x, w, b), F.layer_norm(x, (10,), w, b, eps=1e-5), 1e-14, "layer_norm")
    assert_close(ref.gelu_tanh(x), F.gelu(x, approximate="tanh"), 1e-14, "gelu")


def logits_after_changing_token(cfg: ref.Config, index: int) -> tuple[torch.Tensor, torch.Tensor]:
    params, batch = tiny_problem(cfg)
    tokens = batch.tokens.clone()
    tokens[index] = (tokens[index] + 1) % cfg.vocab_size
    changed = ref.Batch(tokens, batch.targets, batch.positions, batch.cu_seqlens)
    with torch.no_grad():
        return ref.forward(params, batch, cfg)[0], ref.forward(params, changed, cfg)[0]


@check
def documents_are_isolated_and_causal() -> None:
    for attention in ("softmax", "linear"):
        cfg = tiny_config(attention)
        u = 10 + 5  # document 2 spans tokens 10..23
        before, after = logits_after_changing_token(cfg, u)
        assert torch.equal(before[:u], after[:u]), f"{attention}: token {u} changed earlier logits"
        assert not torch.allclose(before[u:], after[u:]), f"{attention}: token {u} changed nothing"
        before, after = logits_after_changing_token(cfg, 3)
        assert torch.equal(before[9:], after[9:]), f"{attention}: document 0 leaked into later documents"


@check
def autograd_matches_finite_difference() -> None:
    cases = [("softmax", 4, 32, LINEAR_VARIANTS[0]), ("linear", 3, 24, LINEAR_VARIANTS[0])]
    cases += [("linear", 4, 32, variant) for variant in LINEAR_VARIANTS]
    for attention, heads, width, (act, gate, norm) in cases:
        cfg = tiny_config(attention, n_head=heads, n_embd=width, qk_activation=act, output_gate=gate, output_norm=norm)
        params, batch = tiny_problem(cfg, seed=1)
        _, _, grads = ref.loss_and_grads(params, batch, cfg)
        direction = {name: torch.randn_like(p) for name, p in params.items()}
        norm = math.sqrt(sum(float(d.pow(2).sum()) for d in direction.values()))
        direction = {name: d / norm for name, d in direction.items()}  # unit step in parameter space
        eps = 1e-5

        def loss_at(sign: float) -> float:
            moved = {name: p + sign * eps * direction[name] for name, p in params.items()}
            return float(ref.forward(moved, batch, cfg)[1])

        numeric = (loss_at(1.0) - loss_at(-1.0)) / (2 * eps)
        analytic = sum(float((grads[n] * direction[n]).sum()) for n in params)
        what = f"{attention} H={heads} {act}/{gate}/{norm}"
        assert abs(numeric - analytic) <= 1e-6 * abs(analytic), f"{what}: {numeric} vs {analytic}"


@check
def adamw_matches_torch_optim() -> None:
    for attention in ("softmax", "linear"):
        cfg = tiny_config(attention, steps=4)
        params, batch = tiny_problem(cfg, seed=2)
        decay = {spec.name: spec.decay for spec in ref.param_specs(cfg)}
        losses, final = ref.train(params, batch, cfg, decay)
        leaves = {name: p.clone().requires_grad_(True) for name, p in params.items()}
        groups = [{"params": [p for n, p in leaves.items() if decay[n]], "weight_decay": cfg.weight_decay},
                  {"params": [p for n, p in leaves.items() if not decay[n]], "weight_decay": 0.0}]
        opt = torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)
        clipped = 0
        for step in range(cfg.steps):
            opt.zero_grad()
            loss = ref.forward(leaves, batch, cfg)[1]
            loss.backward()
            clipped += float(torch.nn.utils.clip_grad_norm_(list(leaves.values()), cfg.grad_clip)) > cfg.grad_clip
            assert_close(losses[step], loss.detach(), 1e-13, f"{attention} loss at step {step}")
            opt.step()
        assert clipped > 0, "clipping never engaged: the check would not cover it"
        gauge = ref.softmax_key_bias_gauge(cfg)
        for name, p in leaves.items():
            keep = torch.ones(p.shape, dtype=torch.bool)
            keep[gauge.get(f"final.{name}", slice(0, 0))] = False
            assert_close(final[name][keep], p.detach()[keep], 1e-12, f"{attention} final {name}")


@check
def softmax_key_bias_gradient_vanishes() -> None:
    """The premise of the checker's gauge exclusion: d loss / d (key bias) is zero up to rounding."""
    cfg = tiny_config("softmax")
    params, batch = tiny_problem(cfg, seed=3)
    params = {n: p + 0.1 * torch.randn_like(p) if n.endswith("c_attn.bias") else p for n, p in params.items()}
    _, _, grads = ref.loss_and_grads(params, batch, cfg)
    C = cfg.n_embd
    for layer in range(cfg.n_layer):
        g = grads[f"transformer.h.{layer}.attn.c_attn.bias"]
        assert float(g[C : 2 * C].abs().max()) <= 1e-14 * float(g.abs().max()), g[C : 2 * C]
        assert float(g[:C].abs().max()) > 1e-3 * float(g.abs().max()), "query bias gradient unexpectedly zero"


def malformed(blob: bytes, edit: Callable[[dict], None] | None = None, tail: bytes = b"") -> bytes:
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    if edit:
        edit(header)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + blob[8 + n :] + tail


def cross_check_with_safetensors_package(written: Path, tensors: dict[str, torch.Tensor]) -> None:
    """If the standard package is importable: it reads our file, and our reader reads its file, identically."""
    try:
        from safetensors.torch import load_file, save_file  # type: ignore[import-not-found]
    except ImportError:
        print("  (safetensors package not importable: cross-check skipped)")
        return
    theirs = load_file(str(written))
    assert theirs.keys() == tensors.keys() and all(torch.equal(theirs[k], v) for k, v in tensors.items())
    standard = written.with_name("standard.safetensors")
    save_file(tensors, str(standard))
    ours = ref.read_safetensors(standard)
    assert ours.keys() == tensors.keys() and all(torch.equal(ours[k], v) for k, v in tensors.items())
    print("  (cross-checked against the safetensors package in both directions)")


@check
def safetensors_reader() -> None:
    tensors = {"a": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.tensor([-1, 7], dtype=torch.int32),
               "c": torch.tensor(2.5, dtype=torch.float32), "d": torch.tensor([1 << 40], dtype=torch.int64)}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.safetensors"
        write_safetensors(path, tensors)
        blob = path.read_bytes()
        assert struct.unpack("<Q", blob[:8])[0] % 8 == 0, "header not padded to 8 bytes"
        back = ref.read_safetensors(path)
        assert back.keys() == tensors.keys() and all(torch.equal(back[k], v) for k, v in tensors.items())
        assert back["c"].shape == () and back["d"].dtype == torch.int64
        cross_check_with_safetensors_package(path, tensors)
        bad_cases = {
            "trailing bytes": malformed(blob, tail=b"\0\0\0\0"),
            "hole": malformed(blob, lambda h: h["b"].update(data_offsets=[h["b"]["data_offsets"][0] + 4, h["b"]["data_offsets"][1] + 4])),
            "size mismatch": malformed(blob, lambda h: h["a"].update(shape=[3, 3])),
            "unknown dtype": malformed(blob, lambda h: h["a"].update(dtype="Q7")),
            "short file": blob[:5],
            "header past end": struct.pack("<Q", 1 << 30) + blob[8:],
        }
        for what, data in bad_cases.items():
            path.write_bytes(data)
            try:
                ref.read_safetensors(path)
            except ref.FormatError:
                continue
            raise AssertionError(f"reader accepted a file with {what}")


def main() -> int:
    passed = failed = 0
    for fn in CHECKS:
        try:
            torch.manual_seed(1234)
            fn()
        except Exception:  # report every failing check, not just the first
            failed += 1
            print(f"FAIL {fn.__name__}\n{traceback.format_exc()}")
        else:
            passed += 1
            print(f"PASS {fn.__name__}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
