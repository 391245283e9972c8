#!/usr/bin/python3
"""Independent float64 PyTorch reference for Trident's GPT, and the parity checker.

Usage:  /usr/bin/python3 tests/reference/gpt_reference.py PARITY_DIR [--rtol 1e-4] [--rtol-final R]

PARITY_DIR holds config.json, weights.safetensors, batch.safetensors and outputs.safetensors (format:
tests/reference/README.md). This script recomputes the loss, the logits, every weight gradient and `steps` AdamW
steps in float64 and compares them with Trident's outputs, per tensor by max|trident - ref| / max|ref|. Exit 0:
every tensor within --rtol (--rtol-final for `losses` and `final.*`); 1: a mismatch or a missing, extra or
mis-shaped tensor; 2: unreadable input. For softmax layers the key part of c_attn.bias is left out of `final.*`
(see --help).

What is independent of Trident's C++ (nothing here was derived from it):
- the model is written from the specification in core/model/README.md and docs/methods.md section 1 only;
- linear attention uses the *quadratic* form O = [(phi(Q) phi(K)^T) * Dmask] V with Dmask_ij = lambda^(i-j) (i >= j,
  else 0) on whole documents, not Trident's chunked form with its q/k/block decays, so chunking errors cannot cancel
  out; the feature map, the output norm (over the hidden dimension or per head) and the output gate are plain
  elementwise torch expressions differentiated by autograd, not Trident's fused gated-norm op;
- gradients come from torch autograd, not from hand-written backward formulas;
- AdamW and gradient clipping are written out from their textbook definitions;
- safetensors files are parsed by a small reader written from the format description, and, when the `safetensors`
  package is importable, cross-checked against `safetensors.torch.load_file`.
"""
from __future__ import annotations

import argparse
import json
import math
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

LN_EPS = 1e-5
RMS_EPS = 1e-5
CLIP_EPS = 1e-6
LOSS_IGNORE = -1

# ----------------------------------------------------------------------------------------------------------------
# safetensors: 8-byte little-endian header length, a JSON header, then raw little-endian tensor data.
# ----------------------------------------------------------------------------------------------------------------

SAFETENSORS_DTYPES: dict[str, torch.dtype] = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}


class FormatError(Exception):
    """An input file that does not follow the parity-directory format."""


def _decode_tensor(raw: bytes, dtype: torch.dtype, shape: list[int]) -> torch.Tensor:
    if len(raw) == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape).clone()


def read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    """Parse a safetensors file with plain Python; reject anything the format does not allow."""
    if sys.byteorder != "little":
        raise FormatError("this reader assumes a little-endian host")
    blob = path.read_bytes()
    if len(blob) < 8:
        raise FormatError(f"{path}: shorter than the 8-byte header length")
    (header_len,) = struct.unpack("<Q", blob[:8])
    if 8 + header_len > len(blob):
        raise FormatError(f"{path}: header length {header_len} runs past the end of the file")
    try:
        header = json.loads(blob[8 : 8 + header_len].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise FormatError(f"{path}: header is not UTF-8 JSON: {err}") from err
    if not isinstance(header, dict):
        raise FormatError(f"{path}: header is not a JSON object")
    header.pop("__metadata__", None)
    data = blob[8 + header_len :]
    tensors: dict[str, torch.Tensor] = {}
    spans: list[tuple[int, int, str]] = []
    for name, info in header.items():
        try:
            dtype_name, shape, (begin, end) = info["dtype"], list(info["shape"]), info["data_offsets"]
        except (KeyError, TypeError, ValueError) as err:
            raise FormatError(f"{path}: {name}: malformed header entry {info!r}") from err
        if dtype_name not in SAFETENSORS_DTYPES:
            raise FormatError(f"{path}: {name}: unsupported dtype {dtype_name}")
        dtype = SAFETENSORS_DTYPES[dtype_name]
        nbytes = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
        if not (0 <= begin <= end <= len(data)) or end - begin != nbytes:
            raise FormatError(f"{path}: {name}: data_offsets [{begin}, {end}) do not fit {dtype_name} {shape}")
        tensors[name] = _decode_tensor(data[begin:end], dtype, shape)
        spans.append((begin, end, name))
    _check_contiguous(path, sorted(spans), len(data))
    return tensors


def _check_contiguous(path: Path, spans: list[tuple[int, int, str]], data_len: int) -> None:
    """The format requires the tensors to tile the data buffer exactly: no holes, no overlaps, no trailing bytes."""
    cursor = 0
    for begin, end, name in spans:
        if begin != cursor:
            raise FormatError(f"{path}: {name} starts at byte {begin}, expected {cursor} (hole or overlap)")
        cursor = end
    if cursor != data_len:
        raise FormatError(f"{path}: {data_len - cursor} trailing bytes after the last tensor")


REQUIRE_PACKAGE = False  # --require-safetensors-package: the package must be importable (as in CI)


def load_safetensors(path: Path) -> dict[str, torch.Tensor]:
    """Read with the plain reader; if the `safetensors` package is importable, require identical results from it."""
    tensors = read_safetensors(path)
    try:
        from safetensors.torch import load_file  # type: ignore[import-not-found]
    except ImportError:
        if REQUIRE_PACKAGE:
            raise FormatError("the safetensors package is required (--require-safetensors-package) but not importable")
        print(f"  {path.name}: plain-Python reader (safetensors package not importable)")
        return tensors
    standard = load_file(str(path))
    if standard.keys() != tensors.keys():
        raise FormatError(f"{path}: safetensors.torch.load_file sees tensors {sorted(standard)}, plain reader {sorted(tensors)}")
    for name, tensor in tensors.items():
        other = standard[name]
        if other.dtype != tensor.dtype or other.shape != tensor.shape or not torch.equal(other, tensor):
            raise FormatError(f"{path}: {name}: safetensors.torch.load_file and the plain reader disagree")
    print(f"  {path.name}: plain-Python reader, identical to safetensors.torch.load_file ({len(tensors)} tensors)")
    return tensors


# ----------------------------------------------------------------------------------------------------------------
# Configuration, parameter table, batch
# ----------------------------------------------------------------------------------------------------------------

# model.linear.* keys of config.json and their allowed values (the first is the default)
LINEAR_KEYS: dict[str, tuple] = {
    "qk_activation": ("silu", "elu1", "none"),
    "output_gate": (True, False),
    "output_norm": ("hidden", "head"),
}


@dataclass(frozen=True)
class Config:
    n_layer: int
    n_embd: int
    n_head: int
    vocab_size: int
    max_seq_len: int
    attention: str
    decay_layer_scaling: bool
    lr: float
    beta1: float
    beta2: float
    eps: float
    weight_decay: float
    grad_clip: float
    steps: int
    # The linear-attention block (core/model/README.md, model.linear.*); required in config.json for linear and hybrid
    # attention, optional (and unused) for softmax attention.
    qk_activation: str = "silu"
    output_gate: bool = True
    output_norm: str = "hidden"
    # hybrid: each layer's attention, L (linear) or S (softmax), the pattern repeated to n_layer
    layers: str = ""

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    def linear_layer(self, layer: int) -> bool:
        if self.attention == "hybrid":
            return self.layers[layer % len(self.layers)] == "L"
        return self.attention == "linear"

    @property
    def any_softmax(self) -> bool:
        return any(not self.linear_layer(layer) for layer in range(self.n_layer))

    @staticmethod
    def from_dict(raw: dict) -> Config:
        fields = Config.__dataclass_fields__
        required = [key for key in fields if key not in LINEAR_KEYS and key != "layers"]
        if raw.get("attention") in ("linear", "hybrid"):
            required += list(LINEAR_KEYS)
        if raw.get("attention") == "hybrid":
            required.append("layers")
        missing = [key for key in required if key not in raw]
        if missing:
            raise FormatError(f"config.json: missing keys {missing}")
        extra = sorted(set(raw) - set(fields))
        if extra:
            print(f"  note: config.json keys not used by the reference: {extra}")
        cfg = Config(**{key: raw[key] for key in fields if key in raw})
        if cfg.attention not in ("softmax", "linear", "hybrid"):
            raise FormatError(f"config.json: attention must be softmax, linear or hybrid, got {cfg.attention!r}")
        if cfg.attention == "hybrid" and (not cfg.layers or set(cfg.layers) - set("LS") or
                                          cfg.n_layer % len(cfg.layers) != 0):
            raise FormatError(f"config.json: layers must be a pattern of L and S dividing n_layer, got {cfg.layers!r}")
        if cfg.attention != "softmax":
            for key, allowed in LINEAR_KEYS.items():
                if getattr(cfg, key) not in allowed or type(getattr(cfg, key)) is not type(allowed[0]):
                    raise FormatError(f"config.json: {key} must be one of {list(allowed)}, got {getattr(cfg, key)!r}")
        if cfg.n_head < 1 or cfg.n_embd % cfg.n_head != 0:
            raise FormatError(f"config.json: n_head {cfg.n_head} does not divide n_embd {cfg.n_embd}")
        if cfg.n_layer < 1 or cfg.steps < 0:
            raise FormatError("config.json: n_layer must be >= 1 and steps >= 0")
        return cfg


@dataclass(frozen=True)
class ParamSpec:
    """One row of the weight table in core/model/README.md."""
    name: str
    shape: tuple[int, ...]
    decay: bool
    init_std: float | None  # N(0, init_std); None means the constant init_value
    init_value: float = 0.0


def param_specs(cfg: Config) -> list[ParamSpec]:
    C, V, P, L = cfg.n_embd, cfg.vocab_size, cfg.max_seq_len, cfg.n_layer
    proj_std = 0.02 / math.sqrt(2 * L)
    specs = [ParamSpec("transformer.wte.weight", (V, C), True, 0.02)]
    if cfg.any_softmax:
        specs.append(ParamSpec("transformer.wpe.weight", (P, C), True, 0.02))
    for layer in range(L):
        h = f"transformer.h.{layer}"
        specs += [
            ParamSpec(f"{h}.ln_1.weight", (C,), False, None, 1.0),
            ParamSpec(f"{h}.ln_1.bias", (C,), False, None, 0.0),
            ParamSpec(f"{h}.attn.c_attn.weight", (C, 3 * C), True, 0.02),
            ParamSpec(f"{h}.attn.c_attn.bias", (3 * C,), False, None, 0.0),
        ]
        if cfg.linear_layer(layer) and cfg.output_gate:
            specs += [
                ParamSpec(f"{h}.attn.c_gate.weight", (C, C), True, 0.02),
                ParamSpec(f"{h}.attn.c_gate.bias", (C,), False, None, 0.0),
            ]
        specs += [
            ParamSpec(f"{h}.attn.c_proj.weight", (C, C), True, proj_std),
            ParamSpec(f"{h}.attn.c_proj.bias", (C,), False, None, 0.0),
            ParamSpec(f"{h}.ln_2.weight", (C,), False, None, 1.0),
            ParamSpec(f"{h}.ln_2.bias", (C,), False, None, 0.0),
            ParamSpec(f"{h}.mlp.c_fc.weight", (C, 4 * C), True, 0.02),
            ParamSpec(f"{h}.mlp.c_fc.bias", (4 * C,), False, None, 0.0),
            ParamSpec(f"{h}.mlp.c_proj.weight", (4 * C, C), True, proj_std),
            ParamSpec(f"{h}.mlp.c_proj.bias", (C,), False, None, 0.0),
        ]
    specs += [
        ParamSpec("transformer.ln_f.weight", (C,), False, None, 1.0),
        ParamSpec("transformer.ln_f.bias", (C,), False, None, 0.0),
    ]
    return specs


@dataclass(frozen=True)
class Batch:
    tokens: torch.Tensor      # (N,) int64
    targets: torch.Tensor     # (N,) int64, -1 = no loss
    positions: torch.Tensor   # (N,) int64
    cu_seqlens: list[int]     # n_seq + 1 document boundaries

    @staticmethod
    def from_tensors(raw: dict[str, torch.Tensor], cfg: Config) -> Batch:
        expected = {"tokens", "targets", "positions", "cu_seqlens"}
        if set(raw) != expected:
            raise FormatError(f"batch.safetensors: tensors {sorted(raw)}, expected {sorted(expected)}")
        batch = Batch(raw["tokens"].long(), raw["targets"].long(), raw["positions"].long(), raw["cu_seqlens"].tolist())
        batch.validate(cfg)
        return batch

    def validate(self, cfg: Config) -> None:
        n = self.tokens.numel()
        if self.tokens.dim() != 1 or self.targets.shape != (n,) or self.positions.shape != (n,):
            raise FormatError("batch: tokens, targets and positions must all have shape (N,)")
        cu = self.cu_seqlens
        if len(cu) < 2 or cu[0] != 0 or cu[-1] != n or any(b < a for a, b in zip(cu, cu[1:])):
            raise FormatError(f"batch: cu_seqlens {cu} is not a non-decreasing 0..N={n} partition")
        if n == 0 or int(self.tokens.min()) < 0 or int(self.tokens.max()) >= cfg.vocab_size:
            raise FormatError("batch: empty, or a token outside [0, vocab_size)")
        scored = self.targets[self.targets != LOSS_IGNORE]
        if scored.numel() == 0 or int(scored.min()) < 0 or int(scored.max()) >= cfg.vocab_size:
            raise FormatError("batch: no target, or a target outside [0, vocab_size) other than -1")
        if cfg.any_softmax and (int(self.positions.min()) < 0 or int(self.positions.max()) >= cfg.max_seq_len):
            raise FormatError("batch: a position outside [0, max_seq_len)")

    def documents(self) -> list[tuple[int, int]]:
        return [(a, b) for a, b in zip(self.cu_seqlens, self.cu_seqlens[1:]) if b > a]


# ----------------------------------------------------------------------------------------------------------------
# The model (core/model/README.md), any floating dtype; the checker runs it in float64
# ----------------------------------------------------------------------------------------------------------------

Params = dict[str, torch.Tensor]


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)  # biased variance, as in torch.nn.LayerNorm
    return (x - mean) / torch.sqrt(var + LN_EPS) * weight + bias


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def conv1d(x: torch.Tensor, params: Params, prefix: str) -> torch.Tensor:
    """Hugging Face GPT-2 Conv1D: weight stored (in, out), y = x @ W + b."""
    return x @ params[f"{prefix}.weight"] + params[f"{prefix}.bias"]


def alibi_slopes(n_head: int) -> list[float]:
    """ALiBi slopes (docs/methods.md section 1), rounded to fp32 as the specification keeps them."""
    def power_of_two_rule(n: int) -> list[float]:
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]

    p = 2 ** int(math.floor(math.log2(n_head)))
    slopes = power_of_two_rule(p) + [2.0 ** (-(8.0 * j + 4.0) / p) for j in range(n_head - p)]
    return torch.tensor(slopes, dtype=torch.float32).tolist()


def layer_decay_rates(cfg: Config, layer: int) -> list[float]:
    """s_{h,l}: the ALiBi slopes, times (1 - l/(L-1) + 1e-5) with decay_layer_scaling (factor 1 + 1e-5 for L = 1)."""
    slopes = alibi_slopes(cfg.n_head)
    if not cfg.decay_layer_scaling:
        return slopes
    ratio = layer / (cfg.n_layer - 1) if cfg.n_layer > 1 else 0.0
    return [s * (1.0 - ratio + 1e-5) for s in slopes]


def split_heads(x: torch.Tensor, n_head: int) -> torch.Tensor:
    """(n, C) -> (H, n, D); head h owns columns h*D .. h*D+D-1."""
    n, c = x.shape
    return x.reshape(n, n_head, c // n_head).transpose(0, 1)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(H, n, D) -> (n, H*D)."""
    h, n, d = x.shape
    return x.transpose(0, 1).reshape(n, h * d)


def causal_softmax_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    n, d = q.shape[1], q.shape[2]
    scores = (q @ k.transpose(1, 2)) / math.sqrt(d)
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ v


def decay_mask(rates: list[float], n: int, dtype: torch.dtype) -> torch.Tensor:
    """Dmask[h, i, j] = lambda_h^(i-j) for i >= j, else 0, with lambda_h = exp(-s_h).  Shape (H, n, n)."""
    lam = torch.exp(-torch.tensor(rates, dtype=torch.float64)).to(dtype)[:, None, None]
    idx = torch.arange(n)
    distance = (idx[:, None] - idx[None, :]).to(dtype)
    past_or_self = distance >= 0
    return torch.where(past_or_self, lam ** distance.clamp(min=0), torch.zeros((), dtype=dtype))


def feature_map(x: torch.Tensor, kind: str) -> torch.Tensor:
    """phi of model.linear.qk_activation: silu(x) = x sigmoid(x); elu1(x) = 1 + elu(x) (x + 1 for x > 0, exp(x)
    otherwise); none = identity."""
    if kind == "silu":
        return x * torch.sigmoid(x)
    if kind == "elu1":
        return torch.where(x > 0, x + 1.0, torch.exp(torch.clamp(x, max=0.0)))
    if kind == "none":
        return x
    raise ValueError(f"unknown qk_activation {kind!r}")


def rms_normalise(x: torch.Tensor) -> torch.Tensor:
    """RMSNorm without weight over the last dimension: x / sqrt(mean(x^2) + eps)."""
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + RMS_EPS)


def linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rates: list[float]) -> torch.Tensor:
    """Quadratic form O = [(Q K^T) * Dmask] V per head, (H, n, D); no normaliser (q and k already mapped by phi)."""
    return ((q @ k.transpose(1, 2)) * decay_mask(rates, q.shape[1], q.dtype)) @ v


def normalised_linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rates: list[float]) -> torch.Tensor:
    """Quadratic form, then per-head RMSNorm without weight (the output_norm: head case, without feature map)."""
    return rms_normalise(linear_attention(q, k, v, rates))


def attention(qkv: torch.Tensor, batch: Batch, cfg: Config, layer: int) -> torch.Tensor:
    """Attention over each document of the packed batch separately; nothing crosses a document boundary. For linear
    attention: phi on q and k, the quadratic form, and the output norm (per token over C, or per head over D); the
    gate is applied by the caller."""
    C = cfg.n_embd
    rates = layer_decay_rates(cfg, layer)
    outputs = []
    # torch.split, not qkv[begin:end]: the backward of a slice is a zero tensor the size of qkv, per document
    lengths = [end - begin for begin, end in batch.documents()]
    assert sum(lengths) == qkv.shape[0], "documents must cover the batch"
    for doc in qkv.split(lengths, dim=0):
        q, k, v = (split_heads(doc[:, i * C : (i + 1) * C], cfg.n_head) for i in range(3))
        if not cfg.linear_layer(layer):
            outputs.append(merge_heads(causal_softmax_attention(q, k, v)))
            continue
        q, k = feature_map(q, cfg.qk_activation), feature_map(k, cfg.qk_activation)
        o = linear_attention(q, k, v, rates)
        if cfg.output_norm == "head":
            outputs.append(merge_heads(rms_normalise(o)))
        elif cfg.output_norm == "hidden":
            outputs.append(rms_normalise(merge_heads(o)))
        else:
            raise ValueError(f"unknown output_norm {cfg.output_norm!r}")
    return torch.cat(outputs, dim=0)


def block(x: torch.Tensor, params: Params, batch: Batch, cfg: Config, layer: int) -> torch.Tensor:
    h = f"transformer.h.{layer}"
    normed = layer_norm(x, params[f"{h}.ln_1.weight"], params[f"{h}.ln_1.bias"])
    a = attention(conv1d(normed, params, f"{h}.attn.c_attn"), batch, cfg, layer)
    if cfg.linear_layer(layer) and cfg.output_gate:
        a = a * conv1d(normed, params, f"{h}.attn.c_gate")
    x = x + conv1d(a, params, f"{h}.attn.c_proj")
    hidden = gelu_tanh(conv1d(layer_norm(x, params[f"{h}.ln_2.weight"], params[f"{h}.ln_2.bias"]), params, f"{h}.mlp.c_fc"))
    return x + conv1d(hidden, params, f"{h}.mlp.c_proj")


def forward(params: Params, batch: Batch, cfg: Config) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns (logits (N, V), loss = mean cross-entropy over the tokens whose target is not -1)."""
    wte = params["transformer.wte.weight"]
    x = wte[batch.tokens]
    if cfg.any_softmax:
        x = x + params["transformer.wpe.weight"][batch.positions]
    for layer in range(cfg.n_layer):
        x = block(x, params, batch, cfg, layer)
    logits = layer_norm(x, params["transformer.ln_f.weight"], params["transformer.ln_f.bias"]) @ wte.T
    return logits, cross_entropy(logits, batch.targets)


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    scored = targets != LOSS_IGNORE
    rows, cols = scored.nonzero().squeeze(1), targets[scored]
    nll = torch.logsumexp(logits[rows], dim=-1) - logits[rows, cols]
    return nll.sum() / scored.sum()


def loss_and_grads(params: Params, batch: Batch, cfg: Config) -> tuple[torch.Tensor, torch.Tensor, Params]:
    leaves = {name: p.detach().clone().requires_grad_(True) for name, p in params.items()}
    logits, loss = forward(leaves, batch, cfg)
    grads = torch.autograd.grad(loss, list(leaves.values()))
    return loss.detach(), logits.detach(), dict(zip(leaves, grads))


# ----------------------------------------------------------------------------------------------------------------
# AdamW with global-norm gradient clipping, written out
# ----------------------------------------------------------------------------------------------------------------

def clip_by_global_norm(grads: Params, grad_clip: float) -> Params:
    if grad_clip <= 0:
        return grads
    norm = torch.sqrt(sum(g.pow(2).sum() for g in grads.values()))
    if norm <= grad_clip:
        return grads
    coef = grad_clip / (norm + CLIP_EPS)
    return {name: g * coef for name, g in grads.items()}


def train(params: Params, batch: Batch, cfg: Config, decay: dict[str, bool]) -> tuple[torch.Tensor, Params]:
    """`cfg.steps` AdamW steps on the same batch; returns (loss before each step, final parameters)."""
    params = {name: p.detach().clone() for name, p in params.items()}
    m = {name: torch.zeros_like(p) for name, p in params.items()}
    v = {name: torch.zeros_like(p) for name, p in params.items()}
    losses = []
    for t in range(1, cfg.steps + 1):
        loss, _, grads = loss_and_grads(params, batch, cfg)
        losses.append(loss)
        grads = clip_by_global_norm(grads, cfg.grad_clip)
        for name, g in grads.items():
            p = params[name]
            if decay[name]:
                p = p - cfg.lr * cfg.weight_decay * p
            m[name] = cfg.beta1 * m[name] + (1 - cfg.beta1) * g
            v[name] = cfg.beta2 * v[name] + (1 - cfg.beta2) * g * g
            m_hat = m[name] / (1 - cfg.beta1**t)
            v_hat = v[name] / (1 - cfg.beta2**t)
            params[name] = p - cfg.lr * m_hat / (torch.sqrt(v_hat) + cfg.eps)
    dtype = next(iter(params.values())).dtype
    return torch.stack(losses) if losses else torch.zeros(0, dtype=dtype), params


def reference_outputs(params: Params, batch: Batch, cfg: Config) -> dict[str, torch.Tensor]:
    """Every tensor of outputs.safetensors, computed in the dtype of `params`."""
    loss, logits, grads = loss_and_grads(params, batch, cfg)
    decay = {spec.name: spec.decay for spec in param_specs(cfg)}
    losses, final = train(params, batch, cfg, decay)
    out = {"loss": loss, "logits": logits, "losses": losses}
    out.update({f"grad.{name}": g for name, g in grads.items()})
    out.update({f"final.{name}": p for name, p in final.items()})
    return out


# ----------------------------------------------------------------------------------------------------------------
# The parity check
# ----------------------------------------------------------------------------------------------------------------

def check_weights(weights: dict[str, torch.Tensor], cfg: Config) -> list[str]:
    """Problems with weights.safetensors: missing, extra or mis-shaped names (empty list = fine)."""
    specs = {spec.name: spec for spec in param_specs(cfg)}
    problems = [f"weights: missing {name}" for name in specs if name not in weights]
    problems += [f"weights: unexpected {name}" for name in weights if name not in specs]
    for name, tensor in weights.items():
        if name in specs and tuple(tensor.shape) != specs[name].shape:
            problems.append(f"weights: {name} has shape {tuple(tensor.shape)}, expected {specs[name].shape}")
        if tensor.dtype != torch.float32:
            print(f"  note: weights: {name} is {tensor.dtype}, the format says F32")
    return problems


def softmax_key_bias_gauge(cfg: Config) -> dict[str, slice]:
    """Elements whose gradient is identically zero in softmax layers, so AdamW amplifies rounding noise.

    Adding a constant vector b to every key of a document adds q_i.b to every score of row i, which softmax
    ignores: the k-part of c_attn.bias (columns C..2C) has zero gradient in exact arithmetic. Its computed gradient
    is rounding noise (~1e-9 in fp32, ~1e-18 in fp64) that AdamW's m/sqrt(v) turns into steps of up to ~lr, so
    final.* values there are noise and are compared only for being finite.
    """
    C = cfg.n_embd
    return {f"final.transformer.h.{l}.attn.c_attn.bias": slice(C, 2 * C) for l in range(cfg.n_layer)
            if not cfg.linear_layer(l)}


def compare_tensor(name: str, got: torch.Tensor, ref: torch.Tensor, rtol: float, skip: slice | None) -> bool:
    got = got.to(torch.float64)
    keep = torch.ones(ref.shape, dtype=torch.bool)
    note = ""
    if skip is not None:
        keep[skip] = False
        if not torch.isfinite(got[~keep]).all():
            print(f"  {name:58s} non-finite values in the excluded elements  FAIL")
            return False
        excluded_err = float((got[~keep] - ref[~keep]).abs().max())
        note = f"  ({skip.start}..{skip.stop - 1} excluded: softmax key-bias gauge, max_abs there {excluded_err:.1e})"
    got, ref = got[keep], ref[keep]
    if not torch.isfinite(got).all():
        print(f"  {name:58s} non-finite values in Trident's tensor  FAIL")
        return False
    abs_err = float((got - ref).abs().max()) if ref.numel() else 0.0
    scale = float(ref.abs().max()) if ref.numel() else 0.0
    norm_err = abs_err / scale if scale > 0 else abs_err
    ok = norm_err <= rtol
    print(f"  {name:58s} max_abs {abs_err:10.3e}  normalised {norm_err:10.3e}  {'PASS' if ok else 'FAIL'}{note}")
    return ok


def report_order(name: str) -> tuple[int, str]:
    """loss, logits, grad.*, losses, final.*; anything unexpected last."""
    groups = ["loss", "logits", "grad.", "losses", "final."]
    for rank, group in enumerate(groups):
        if name == group or (group.endswith(".") and name.startswith(group)):
            return rank, name
    return len(groups), name


def is_trajectory(name: str) -> bool:
    """Tensors that depend on the whole AdamW trajectory rather than on one evaluation at the initial weights."""
    return name == "losses" or name.startswith("final.")


def compare_outputs(outputs: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], rtol: float,
                    rtol_final: float, gauge: dict[str, slice]) -> tuple[int, int]:
    passed = failed = 0
    for name in sorted(set(expected) | set(outputs), key=report_order):
        tol = rtol_final if is_trajectory(name) else rtol
        if name not in outputs:
            print(f"  {name:58s} missing from outputs.safetensors  FAIL")
        elif name not in expected:
            print(f"  {name:58s} not expected in outputs.safetensors  FAIL")
        elif outputs[name].shape != expected[name].shape:
            print(f"  {name:58s} shape {tuple(outputs[name].shape)}, expected {tuple(expected[name].shape)}  FAIL")
        elif compare_tensor(name, outputs[name], expected[name], tol, gauge.get(name)):
            passed += 1
            continue
        failed += 1
    return passed, failed


def run(parity_dir: Path, rtol: float, rtol_final: float, mask_gauge: bool) -> int:
    print(f"parity directory: {parity_dir}")
    cfg = Config.from_dict(json.loads((parity_dir / "config.json").read_text()))
    print(f"  config: {cfg}")
    weights = load_safetensors(parity_dir / "weights.safetensors")
    batch = Batch.from_tensors(load_safetensors(parity_dir / "batch.safetensors"), cfg)
    outputs = load_safetensors(parity_dir / "outputs.safetensors")
    doc_lens = [end - begin for begin, end in zip(batch.cu_seqlens, batch.cu_seqlens[1:])]
    scored = int((batch.targets != LOSS_IGNORE).sum())
    shown = f"{doc_lens}" if len(doc_lens) <= 16 else f"{doc_lens[:12]} ... ({len(doc_lens)} documents)"
    print(f"  batch: N = {batch.tokens.numel()} tokens, document lengths {shown}, {scored} scored")
    problems = check_weights(weights, cfg)
    if problems:
        print("\n".join(f"  {p}  FAIL" for p in problems))
        print(f"summary: weights.safetensors does not match the configuration ({len(problems)} problems)  FAIL")
        return 1
    params = {name: w.to(torch.float64) for name, w in weights.items()}
    print(f"reference: float64, torch {torch.__version__}, {cfg.steps} AdamW steps")
    expected = reference_outputs(params, batch, cfg)
    init_loss, ln_v = float(expected["loss"]), math.log(cfg.vocab_size)
    near = "near" if abs(init_loss - ln_v) <= 0.1 * ln_v else "NOT near (check the initialisation)"
    print(f"  note: reference loss at initialisation {init_loss:.6f}, ln(V) = {ln_v:.6f}: {near}")
    gauge = softmax_key_bias_gauge(cfg) if mask_gauge else {}
    print(f"comparison (normalised error = max|trident - ref| / max|ref|; rtol {rtol:g}, "
          f"{rtol_final:g} for losses and final.*):")
    passed, failed = compare_outputs(outputs, expected, rtol, rtol_final, gauge)
    verdict = "PASS" if failed == 0 else "FAIL"
    print(f"summary: {passed} passed, {failed} failed  {verdict}")
    return 0 if failed == 0 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog=softmax_key_bias_gauge.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("parity_dir", type=Path, help="directory written by trident_parity_dump")
    parser.add_argument("--rtol", type=float, default=1e-4, help="largest allowed normalised max error (default 1e-4)")
    parser.add_argument("--rtol-final", type=float, default=None,
                        help="tolerance for losses and final.* (default: --rtol). AdamW divides by sqrt(v), so "
                             "fp32 rounding of small gradients grows into O(lr * rounding / eps) differences there")
    parser.add_argument("--no-gauge-mask", action="store_true",
                        help="also compare the softmax key-bias elements of final.*.c_attn.bias (expect noise)")
    parser.add_argument("--require-safetensors-package", action="store_true",
                        help="fail unless the safetensors package can load the files too")
    args = parser.parse_args(argv)
    global REQUIRE_PACKAGE
    REQUIRE_PACKAGE = args.require_safetensors_package
    try:
        rtol_final = args.rtol if args.rtol_final is None else args.rtol_final
        return run(args.parity_dir, args.rtol, rtol_final, not args.no_gauge_mask)
    except (FormatError, OSError, json.JSONDecodeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
