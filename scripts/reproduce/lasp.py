#!/usr/bin/env python3
"""LASP (arXiv 2404.02882) and LASP-2 (arXiv 2502.07563) reproduced, in two halves; writes OUT/lasp.md and four PNGs.

Measured here: whole-model training runs under mpirun on this machine (configs/experiments/lasp/scaled_linear.yaml,
one document a step). For each method (LASP-1, LASP-2 and Ulysses on the linear model, Ring Attention on its
softmax twin) and rank count, the longest sequence the ranks' activation budget (device.memory_gb) trains: trident
names its per-rank capacity when it refuses a too-long document, the script trains at the longest length the
method's group holds and checks that one token more is refused. Tokens/s and peak memory come from that run.

Hybrids (LASP-2H): models whose layers are linear or softmax (model.layers), trained at one rank on the quickstart's
corpus (Debian's fortune cookies, scripts/data/fortunes_corpus.sh) for the same number of tokens, pure linear, 1/8,
1/4 and 1/2 softmax layers and pure softmax: the held-out loss beside the paper's hybrid-ratio table; then at the
mode's largest rank count, one long document a step: tokens/s and bytes a step of each (LASP-2 in linear layers,
Ulysses in softmax ones), and the longest sequence pure linear, the 1/4 hybrid and pure softmax train within the
same budget.

At paper scale: `trident plan` on TNL-1B and 8 to 128 A100-80G (configs/experiments/lasp/paper_tnl1b.yaml,
configs/clusters/a100-80g-16x8-tnl1b.yaml): the longest power-of-two length each method fits and its estimated
tokens/s, beside the paper's published numbers (docs/methods.md §2.4). What the report says about the configs and
models is read from them (`trident config`, the cluster file).
"""
import json
import random
import subprocess
import sys
from pathlib import Path

import yaml

import common

sys.path.insert(0, str(common.ROOT / "scripts"))
import plot  # noqa: E402

SCALED = "configs/experiments/lasp/scaled_linear.yaml"
PAPER = "configs/experiments/lasp/paper_tnl1b.yaml"
CLUSTER = "configs/clusters/a100-80g-16x8-tnl1b.yaml"
CORPUS = common.ROOT / "runs" / "data" / "reproduce_lasp.txt"

# rank counts, per-rank budget (GiB), steps per run; hybrids: the quality runs' steps and batch tokens at one rank,
# then ranks, one document of `length` tokens and steps for their speed, and the budget their longest is found in
# (4x the measured half's: 8 layers against 2)
MODES = {
    "smoke": {"ranks": [1, 2], "memory_gb": 0.01, "steps": 2,
              "hybrid": {"steps": 3, "batch": 1024, "ranks": 2, "length": 2048, "speed_steps": 2, "memory_gb": 0.04}},
    "quick": {"ranks": [1, 2, 4, 8], "memory_gb": 0.03, "steps": 3,
              "hybrid": {"steps": 300, "batch": 2048, "ranks": 4, "length": 16384, "speed_steps": 3,
                         "memory_gb": 0.12}},
    "full": {"ranks": [1, 2, 4, 8], "memory_gb": 0.1, "steps": 5,
             "hybrid": {"steps": 600, "batch": 4096, "ranks": 4, "length": 32768, "speed_steps": 5,
                        "memory_gb": 0.4}},
}
# name, model.attention, --set overrides
METHODS = [
    ("LASP-1", "linear", ["parallel.sp.method=lasp", "parallel.lasp.variant=lasp1"]),
    ("LASP-2", "linear", ["parallel.sp.method=lasp", "parallel.lasp.variant=lasp2"]),
    ("Ulysses", "linear", ["parallel.sp.method=ulysses"]),
    ("Ring", "softmax", ["parallel.sp.method=ring"]),
]
# name, model.attention, model.layers: 8 layers, so that the 1/8 hybrid has its one softmax layer
HYBRIDS = [("pure linear", "linear", ""), ("1/8 hybrid", "hybrid", "LLLLLLLS"), ("1/4 hybrid", "hybrid", "LLLS"),
           ("1/2 hybrid", "hybrid", "LS"), ("pure softmax", "softmax", "")]
HYBRID_LAYERS = 8
LONGEST_OF = ("pure linear", "1/4 hybrid", "pure softmax")  # the hybrids whose longest document is searched for
CORPUS_TEXT = common.ROOT / "runs" / "data" / "fortunes.txt"  # the quickstart's
# LASP-2's hybrid-ratio table (basic linear attention and Lightning, loss at 16K after 50B tokens; docs/methods.md)
PUBLISHED_HYBRID_LOSS = {"pure linear": (2.892, 2.848), "1/8 hybrid": (2.826, 2.756), "1/4 hybrid": (2.824, 2.750),
                         "1/2 hybrid": (2.775, 2.742)}
PUBLISHED_HYBRID_TOKENS_PER_S = (17834.3, 17394.7)  # pure linear, 1/4 hybrid (basic linear attention, 8 A100, 16K)
GPUS = [8, 16, 32, 64, 128]
PUBLISHED_GPUS = 64  # where the paper compares the methods
PAPER_LENGTHS = [2 ** k * 1024 for k in range(4, 15)]  # 16K .. 16384K

# Published (docs/methods.md §2.4): LASP-1's maximum length on 64 A100-80G (TNL-1B, batch 1) with tokens/s at it;
# its scalability table (longest length per GPU count, FSDP and DDP) with tokens/s; LASP-2's speed over LASP-1.
PUBLISHED_64 = {"LASP": (2048 * 1024, 5.85e5), "Ulysses": (512 * 1024, 1.97e5), "Megatron-SP": (256 * 1024, 0.72e5)}
PUBLISHED_FSDP = {8: (128, None), 16: (512, 2.0e5), 32: (1024, 3.6e5), 64: (2048, 5.85e5), 128: (4096, 7.9e5)}
PUBLISHED_DDP = {8: (128, None), 16: (256, 2.0e5), 32: (512, 3.2e5), 64: (1024, 5.2e5), 128: (2048, 6.6e5)}
PUBLISHED_LASP2_GAIN = {512 * 1024: 0.073, 2048 * 1024: 0.152}  # on 64 GPUs


def group_size(method: str, ranks: int) -> int:
    """Ulysses' group must divide the scaled model's heads; every other method spans all ranks."""
    if method != "Ulysses":
        return ranks
    heads = common.resolved_config(SCALED)["model"]["n_head"]
    return max(g for g in range(1, min(ranks, heads) + 1) if heads % g == 0 and ranks % g == 0)


def write_corpus(tokens: int) -> None:
    """One long byte-level document (words drawn from a fixed seed), long enough for every run's steps."""
    if CORPUS.exists() and CORPUS.stat().st_size > tokens:
        return
    words = "linear attention state ring gather token sequence rank layer decay chunk kernel".split()
    rng = random.Random(1)
    text = " ".join(rng.choice(words) for _ in range(tokens // 5 + 1000))
    CORPUS.parent.mkdir(parents=True, exist_ok=True)
    tmp = CORPUS.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.rename(CORPUS)


def train_args(method: str, ranks: int, length: int, steps: int, memory_gb: float, run_dir: Path) -> list:
    attention, sets = next((a, s) for m, a, s in METHODS if m == method)
    sets = sets + [f"model.attention={attention}", f"model.max_seq_len={length}", f"train.batch_tokens={length}",
                   f"device.memory_gb={memory_gb}", f"train.steps={steps}", f"run.dir={run_dir}"]
    sets += ["parallel.strategy=sp", f"parallel.sp.size={group_size(method, ranks)}"] if ranks > 1 else \
        ["parallel.strategy=dp"]
    return ["train", SCALED] + [x for s in sets for x in ("--set", s)]


def longest_trainable(method: str, ranks: int, mode: dict, out: Path) -> dict:
    g = group_size(method, ranks)
    tag = f"{method.lower().replace('-', '')}_r{ranks}"
    found = longest_length(lambda n, steps, run_dir: train_args(method, ranks, n, steps, mode["memory_gb"], run_dir),
                           f"{method} on {ranks} rank(s)", tag, ranks, g, mode, out)
    found.update(method=method, ranks=ranks)
    return found


def longest_length(args_for, what: str, tag: str, ranks: int, g: int, mode: dict, out: Path) -> dict:
    """The longest one-document batch the method's group trains within the budget, by probing (one step each):
    trident refuses a too-long document at start-up and names the per-rank capacity C, so C x group trains. A softmax
    model's capacity falls as max_seq_len grows (its learned positions are parameters, a row per position), nearly
    linearly: two refusals give the line, and where it crosses length / group is the next probe. Otherwise the search
    halves the gap between the longest length known to train and the shortest refused until they are one token apart
    (a probe whose parameters alone overflow the budget counts as refused). Then one run of the mode's steps at the
    longest. args_for(length, steps, run_dir): the run's trident arguments; g: the group size."""
    lo, hi, length = 0, None, g * int(1024 * mode["memory_gb"] / 0.01)  # 0.01 GiB holds ~650 tokens
    probed, refusals = set(), []  # refusals: (length, the capacity named there)
    for _ in range(40):
        probed.add(length)
        log = out / "runs" / f"{tag}_probe_n{length}.log"
        code, output = common.run(args_for(length, 1, out / "runs" / f"{tag}_probe_n{length}"), log, ranks=ranks)
        capacity = common.capacity_in(output)
        named = 0  # the length the refusal's capacity says trains
        if code == 0:
            lo = length
        elif code == 2 and (capacity is not None or "no room for activations" in output):
            hi, named = length, (capacity or 0) * g
            lo = max(lo, named)
            if capacity:
                refusals.append((length, capacity))
        else:
            raise common.Failure(f"{what} at {length} tokens: exit {code}, see {log}")
        if hi is None:
            length *= 4
            continue
        if hi - lo <= 1:
            break
        crossing = None
        if len(refusals) >= 2 and refusals[-1][0] != refusals[-2][0]:  # capacity = a - b length, length = g capacity
            (n1, c1), (n2, c2) = refusals[-2:]
            b = (c1 - c2) / (n2 - n1)
            crossing = int(g * (c1 + b * n1) / (1 + g * b))
        # the crossing and one past it, then one past the named length (refused unless the capacity grew), else
        # the middle of the gap
        candidates = ([crossing, crossing + 1] if crossing else []) + ([lo + 1] if named == lo > 0 else [])
        length = next((n for n in candidates if lo < n < hi and n not in probed), (lo + hi) // 2)
    else:
        raise common.Failure(f"{what}: no longest length after 40 probes, see {out}/runs")
    if lo == 0:
        raise common.Failure(f"{what}: not even one token fits device.memory_gb, see {out}/runs")
    run_dir = out / "runs" / f"{tag}_n{lo}"
    code, _ = common.run(args_for(lo, mode["steps"], run_dir), out / "runs" / f"{tag}_n{lo}.log", ranks=ranks)
    if code != 0:
        raise common.Failure(f"{what} at {lo} tokens: exit {code}, see {run_dir}.log")
    rows = common.metrics(run_dir)
    return {"group": g, "longest": lo, "tokens_per_s": common.tokens_per_s(rows),
            "peak_mib": max(r["peak_mem_bytes"] for r in rows) / 2 ** 20,
            "comm_mib": common.median(rows, "comm_bytes") / 2 ** 20}


def measured(mode: dict, out: Path) -> list[dict]:
    write_corpus(2_000_000)
    results, single = [], {}  # on one rank every method of an attention type is the same run
    for method, attention, _ in METHODS:
        for ranks in mode["ranks"]:
            print(f"reproduce/lasp.sh: measured: {method} on {ranks} rank(s)", file=sys.stderr)
            if ranks == 1 and attention in single:
                results.append(dict(single[attention], method=method))
                continue
            results.append(longest_trainable(method, ranks, mode, out))
            if ranks == 1:
                single[attention] = results[-1]
    return results


def write_text_corpus() -> None:
    code = subprocess.run(["bash", str(common.ROOT / "scripts" / "data" / "fortunes_corpus.sh"), str(CORPUS_TEXT)],
                          cwd=common.ROOT).returncode
    if code != 0:
        raise common.Failure("cannot assemble the quickstart's corpus (scripts/data/fortunes_corpus.sh)")


def hybrid_sets(attention: str, layers: str) -> list[str]:
    sets = [f"model.attention={attention}", f"model.n_layer={HYBRID_LAYERS}"]
    return sets + [f"model.layers={layers}"] if layers else sets


def hybrid_args(attention: str, layers: str, ranks: int, length: int, steps: int, memory_gb: float,
                run_dir: Path) -> list:
    """One document of `length` tokens a step on `ranks` ranks: LASP-2 in the linear layers, Ulysses in the softmax
    ones (the heads divide the group), or Ulysses everywhere for pure softmax."""
    method = ["parallel.sp.method=ulysses"] if attention == "softmax" else \
        ["parallel.sp.method=lasp", "parallel.lasp.variant=lasp2", "parallel.sp.softmax_method=ulysses"]
    sets = hybrid_sets(attention, layers) + method + [
        f"model.max_seq_len={length}", f"train.batch_tokens={length}", f"device.memory_gb={memory_gb}",
        f"train.steps={steps}", f"run.dir={run_dir}", "parallel.strategy=sp", f"parallel.sp.size={ranks}"]
    return ["train", SCALED] + [x for kv in sets for x in ("--set", kv)]


def hybrids(mode: dict, out: Path) -> dict:
    """The held-out loss per hybrid ratio at one rank on the quickstart's corpus; tokens/s, bytes a step and the
    longest sequence of each at the mode's largest group."""
    h = mode["hybrid"]
    write_text_corpus()
    quality = {}
    for name, attention, layers in HYBRIDS:
        print(f"reproduce/lasp.sh: hybrids: {name}, quality", file=sys.stderr)
        run_dir = out / "runs" / f"quality_{name.replace(' ', '_').replace('/', '')}"
        sets = hybrid_sets(attention, layers) + [
            f"data.path={CORPUS_TEXT}", 'data.separator="\\n%\\n"', "data.split=0.98", "model.max_seq_len=256",
            f"train.batch_tokens={h['batch']}", f"train.steps={h['steps']}", f"train.eval_every={h['steps']}",
            "train.eval_batches=8", f"train.warmup_steps={max(1, h['steps'] // 10)}", "train.lr=3e-3",
            "train.min_lr=3e-4", "device.memory_gb=1", f"run.dir={run_dir}"]
        code, _ = common.run(["train", SCALED] + [x for kv in sets for x in ("--set", kv)], Path(f"{run_dir}.log"))
        rows = common.metrics(run_dir)
        if code != 0 or "eval_loss" not in rows[-1]:
            raise common.Failure(f"{name} on the quickstart's corpus: exit {code}, see {run_dir}.log")
        quality[name] = {"eval_loss": rows[-1]["eval_loss"], "train_loss": rows[-1]["loss"],
                         "tokens_per_s": common.tokens_per_s(rows)}
    speed = {}
    for name, attention, layers in HYBRIDS:
        print(f"reproduce/lasp.sh: hybrids: {name} on {h['ranks']} ranks", file=sys.stderr)
        tag = f"hybrid_{name.replace(' ', '_').replace('/', '')}_r{h['ranks']}"
        run_dir = out / "runs" / tag
        code, _ = common.run(hybrid_args(attention, layers, h["ranks"], h["length"], h["speed_steps"], 1, run_dir),
                             Path(f"{run_dir}.log"), ranks=h["ranks"])
        rows = common.metrics(run_dir)
        if code != 0 or not rows:
            raise common.Failure(f"{name} on {h['ranks']} ranks: exit {code}, see {run_dir}.log")
        speed[name] = {"tokens_per_s": common.tokens_per_s(rows), "comm_mib": common.median(rows, "comm_bytes") / 2**20,
                       "strategy": rows[-1]["strategy"], "longest": None}
        if name in LONGEST_OF:  # the search takes a dozen runs: the two pure models and the 1/4 hybrid
            speed[name]["longest"] = longest_length(
                lambda n, steps, d, a=attention, lay=layers: hybrid_args(a, lay, h["ranks"], n, steps, h["memory_gb"],
                                                                         d),
                f"{name} on {h['ranks']} ranks", f"{tag}_longest", h["ranks"], h["ranks"], mode, out)["longest"]
    return {"quality": quality, "speed": speed}


def paper_scale(mode: dict, out: Path) -> dict:
    """Per GPU count: for each method, the longest power-of-two length one of its layouts fits, the exact longest
    (capacity times its largest group), and the estimate of its fastest layout there; LASP-1 vs LASP-2 at 64 GPUs."""
    lengths = out / "runs" / "paper_lengths.txt"
    lengths.write_text("\n".join(map(str, PAPER_LENGTHS)) + "\n")
    found = {}
    for gpus in GPUS:
        profile = common.read_yaml(CLUSTER)
        profile["cluster"]["nodes"] = gpus // profile["cluster"]["devices_per_node"]
        cluster = out / "runs" / f"cluster_{gpus}.yaml"
        cluster.write_text(yaml.safe_dump(profile, sort_keys=False))
        code, output = common.run(["plan", PAPER, "--cluster", cluster, "--lengths", lengths, "--batch-sequences", 1,
                                   "--batches", len(PAPER_LENGTHS), "--json"], out / "runs" / f"plan_{gpus}.log")
        if code != 0:
            raise common.Failure(f"trident plan for {gpus} GPUs: exit {code}, see {out}/runs/plan_{gpus}.log")
        batches = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
        capacity = next(common.capacity_in(c["infeasible"]) for b in batches for c in b["candidates"]
                        if "infeasible" in c and common.capacity_in(c["infeasible"]))
        per_method = {}
        for name, strategies in (("LASP-1", {"lasp1"}), ("LASP-2", {"lasp2"}), ("Ulysses", {"ulysses"})):
            fits = [(b["longest"], min(c["time_s"] for c in b["candidates"]
                                       if c["strategy"] in strategies and "time_s" in c))
                    for b in batches if any(c["strategy"] in strategies and "time_s" in c for c in b["candidates"])]
            largest_group = max((c["degree"] for b in batches for c in b["candidates"] if c["strategy"] in strategies),
                                default=0)
            length, seconds = max(fits) if fits else (0, None)
            per_method[name] = {"longest_pow2": length, "longest": capacity * largest_group,
                                "tokens_per_s": length / seconds if seconds else None,
                                "times": {n: t for n, t in fits}}
        found[gpus] = per_method
    return found


def hybrid_report(hybrid: dict, mode: dict, scaled: dict) -> list[str]:
    h, speed = mode["hybrid"], hybrid["speed"]
    m = scaled["model"]
    md = ["## Hybrids (LASP-2H): linear and softmax layers in one model", "",
          f"`{SCALED}` with {HYBRID_LAYERS} layers (width {m['n_embd']}, {m['n_head']} heads), each linear or softmax "
          "as the layers column says (`model.layers`, repeated to the 8 layers), one rank, "
          f"{h['steps']} steps of {h['batch']:,} tokens of the quickstart's corpus (Debian's fortune cookies, "
          "byte-level, 2% held out); the held-out loss is the last step's evaluation. The paper's losses are LASP-2's "
          "hybrid-ratio table (Linear-Llama3-1B, 16K tokens, after 50B tokens), on another task and scale: the column "
          "to compare is the order, not the values.", ""]
    rows = []
    for name, _, layers in HYBRIDS:
        q = hybrid["quality"][name]
        paper = PUBLISHED_HYBRID_LOSS.get(name)
        rows.append([name, layers or ("L" if name == "pure linear" else "S"), f"{q['eval_loss']:.3f}",
                     f"{q['train_loss']:.3f}", f"{q['tokens_per_s']:,.0f}",
                     f"{paper[0]:.3f}" if paper else "—", f"{paper[1]:.3f}" if paper else "—"])
    md += common.table(["model", "layers", "held-out loss", "train loss", "tokens/s (1 rank)", "paper: basic LA",
                        "paper: Lightning"], rows)
    base = speed["pure linear"]["tokens_per_s"]
    md += ["", f"At {h['ranks']} ranks, one document of {h['length']:,} tokens a step ({h['speed_steps']} steps, "
           "LASP-2 in the linear layers and Ulysses in the softmax ones on the same group and slices; pure softmax: "
           "Ulysses), and the longest document the pure models and the 1/4 hybrid train in "
           f"device.memory_gb = {h['memory_gb']} a rank (found as the measured half's are). Bytes: rank 0's "
           "communicator bytes a step, the gradient all-reduce included. What bounds the length is activation "
           "memory a token: a linear layer saves more a token than a softmax one (the feature map's input, the gate "
           "and the output before its norm, against one log-sum-exp a head), and neither saves anything quadratic, "
           "so the softmax layers cost time here, not length. The paper's 1/4 hybrid runs at "
           f"{PUBLISHED_HYBRID_TOKENS_PER_S[1] / PUBLISHED_HYBRID_TOKENS_PER_S[0]:.3f}x the pure linear model's "
           "tokens/s (basic linear attention, 8 A100, 16K).", ""]
    md += common.table(["model", "strategy", "tokens/s", "vs pure linear", "MiB a step", "longest document"],
                       [[name, s["strategy"], f"{s['tokens_per_s']:,.0f}", f"{s['tokens_per_s'] / base:.2f}x",
                         f"{s['comm_mib']:.2f}", f"{s['longest']:,}" if s["longest"] else "not searched"]
                        for name, s in speed.items()])
    return md + [""]


def report(args, mode: dict, runs: list[dict], hybrid: dict, paper: dict, wall_s: float) -> None:
    out = args.out
    scaled, big = common.resolved_config(SCALED), common.resolved_config(PAPER)
    profile = common.read_yaml(CLUSTER)
    model = profile["model"]["name"]  # the paper's model, whose costs the cluster file holds
    md = common.header("LASP reproduced: measured here, and at paper scale from the cost model", args, wall_s)
    md += ["## Measured here: the longest sequence whole-model training fits, and tokens/s at it", "",
           f"`{SCALED}` ({common.describe_model(scaled['model'])}; Ring Attention on the softmax twin), "
           f"device.memory_gb = {mode['memory_gb']} per rank, one document a step, {mode['steps']} steps. "
           "Longest = the length trained (one token more is refused at start-up, naming the per-rank capacity). "
           "On one rank the three linear methods are one run (shown in each row). Tokens/s = steps after the first; "
           "with more ranks than cores the times measure oversubscription, the lengths do not depend on the machine.",
           ""]
    by = {(r["method"], r["ranks"]): r for r in runs}
    ranks = mode["ranks"]
    rows = []
    for method, _, _ in METHODS:
        for key in ("longest", "tokens_per_s"):
            cells = []
            for n in ranks:
                r = by[(method, n)]
                note = f" (group {r['group']})" if key == "longest" and r["group"] != n else ""
                cells.append(f"{r[key]:,.0f}{note}")
            growth = by[(method, ranks[-1])]["longest"] / by[(method, ranks[0])]["longest"]
            rows.append([method, "longest" if key == "longest" else "tokens/s"] + cells +
                        [f"{growth:.1f}x" if key == "longest" else ""])
    md += common.table(["method", "", *[f"{n} rank(s)" for n in ranks], f"longest, {ranks[-1]} vs {ranks[0]}"], rows)
    md += ["", "Peak device memory a rank (MiB, the allocator's peak) / communication a step (MiB, rank 0):", ""]
    md += common.table(["method", *[f"{n} rank(s)" for n in ranks]],
                       [[m] + [f"{by[(m, n)]['peak_mib']:.1f} / {by[(m, n)]['comm_mib']:.2f}" for n in ranks]
                        for m, _, _ in METHODS])
    shorter = PUBLISHED_64["LASP"][0] / PUBLISHED_64["Ulysses"][0]
    md += ["", "LASP's longest sequence grows with the ranks (each holds N/T tokens and passes a d x d state); "
           f"Ulysses' stops at its largest group, the {scaled['model']['n_head']} heads (the paper's {model} caps it "
           f"at {big['model']['n_head']} of {PUBLISHED_GPUS} GPUs, hence its {shorter:.0f}x shorter maximum). Ring "
           "Attention's grows more slowly: its softmax twin's learned positions are parameters with a row per token "
           "of max_seq_len, so a longer sequence leaves less of the budget to activations; and its bytes grow with N.",
           ""]

    md += hybrid_report(hybrid, mode, scaled)
    md += [f"## At paper scale: {model} on {big['device']['memory_gb']:g} GiB GPUs, estimated by `trident plan`", "",
           f"`{PAPER}` ({common.describe_model(big['model'])}, {big['train']['precision']}) on `{CLUSTER}` (nodes "
           f"varied: {profile['cluster']['devices_per_node']} GPUs a node). Trident replicates weights, gradients and "
           "AdamW state on every rank (the paper's DDP column; FSDP shards them) and sizes activations with its own "
           f"memory model at {big['device']['memory_gb']:g} GiB; lengths are powers of two, as the paper's, with the "
           f"exact longest beside. Compute comes from the cluster file (\"{profile['compute']['fitted_from']}\"), so "
           "the throughputs are predictions beyond what it was fitted on.", ""]
    p64 = paper[PUBLISHED_GPUS]
    rows = []
    for name, ours in (("LASP", p64["LASP-2"]), ("Ulysses", p64["Ulysses"]), ("Megatron-SP", None)):
        length, tps = PUBLISHED_64[name]
        if ours is None:
            rows.append([name, "not implemented", "", common.tokens_k(length), f"{tps:.2e}", ""])
            continue
        rows.append([name, common.tokens_k(ours["longest_pow2"]), f"{ours['longest']:,}",
                     common.tokens_k(length), f"{tps:.2e}",
                     f"length {common.difference(ours['longest_pow2'], length)}, tokens/s "
                     f"{ours['tokens_per_s']:.2e} ({common.difference(ours['tokens_per_s'], tps)})"])
    md += [f"### Longest sequence on {PUBLISHED_GPUS} GPUs (batch 1)", ""]
    md += common.table(["method", "Trident (power of two)", "Trident (exact)", "paper", "paper tokens/s",
                        "Trident / paper"], rows)
    md += ["", "### Scalability of LASP: longest sequence and tokens/s at it against GPUs", ""]
    rows = []
    for gpus in GPUS:
        ours = paper[gpus]["LASP-2"]
        ddp, fsdp = PUBLISHED_DDP[gpus], PUBLISHED_FSDP[gpus]
        rows.append([gpus, common.tokens_k(ours["longest_pow2"]), f"{ours['longest']:,}",
                     f"{ours['tokens_per_s']:.2e}", f"{ddp[0]}K", f"{ddp[1]:.2e}" if ddp[1] else "—",
                     f"{fsdp[0]}K", f"{fsdp[1]:.2e}" if fsdp[1] else "—",
                     common.difference(ours["longest_pow2"], ddp[0] * 1024),
                     common.difference(ours["longest_pow2"], fsdp[0] * 1024)])
    md += common.table(["GPUs", "Trident longest", "exact", "Trident tokens/s", "paper DDP", "tokens/s",
                        "paper FSDP", "tokens/s", "length vs DDP", "vs FSDP"], rows)
    md += ["", f"### LASP-2 over LASP-1 on {PUBLISHED_GPUS} GPUs (estimated step time)", ""]
    rows = []
    for length, gain in PUBLISHED_LASP2_GAIN.items():
        t1, t2 = p64["LASP-1"]["times"].get(length), p64["LASP-2"]["times"].get(length)
        ours = f"+{100 * (t1 / t2 - 1):.1f}%" if t1 and t2 else "does not fit"
        rows.append([common.tokens_k(length), ours, f"+{100 * gain:.1f}%"])
    md += common.table(["length", "Trident", "paper"], rows)
    md += ["", "Where they differ: the paper's lengths are what its implementation's activations allow (FSDP also "
           "shards the weights, so its longest doubles over DDP's from 16 GPUs on); Trident's follow its own memory "
           "model, whose activations per token are smaller. Throughput: the estimate scales almost linearly with the "
           "GPUs (LASP's state exchange is a few MiB a layer), while the published FSDP numbers flatten as its "
           "parameter gathers grow. LASP-2's gain comes from its one allgather against LASP-1's chain of T - 1 "
           "hops; in the estimate both are small beside the gradient all-reduce, so the gain is smaller than "
           "published.", ""]
    md += ["Figures: `measured_max_length.png`, `measured_throughput.png`, `paper_max_length.png`, "
           "`paper_throughput.png`.", ""]
    (out / "lasp.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))

    plot.lines(out / "measured_max_length.png", "Longest trainable sequence (measured here, whole model)",
               "ranks", "tokens", [{"label": m, "x": ranks, "y": [by[(m, n)]["longest"] for n in ranks],
                                    "style": "s--" if m == "LASP-2" else "o-"}  # LASP-1's line lies under it
                                   for m, _, _ in METHODS], logx=2, logy=2, xticks=ranks)
    plot.lines(out / "measured_throughput.png", "Tokens/s at the longest sequence (measured here)", "ranks",
               "tokens/s", [{"label": m, "x": ranks, "y": [by[(m, n)]["tokens_per_s"] for n in ranks]}
                            for m, _, _ in METHODS], logx=2, xticks=ranks)
    series = [{"label": f"Trident {m} (estimated)", "x": GPUS, "y": [paper[g][m]["longest_pow2"] for g in GPUS]}
              for m in ("LASP-2", "Ulysses")]
    series += [{"label": f"paper LASP, {name}", "x": GPUS, "y": [published[g][0] * 1024 for g in GPUS], "style": "s--"}
               for name, published in (("DDP", PUBLISHED_DDP), ("FSDP", PUBLISHED_FSDP))]
    series += [{"label": f"paper Ulysses / Megatron-SP ({PUBLISHED_GPUS} GPUs)", "x": [PUBLISHED_GPUS] * 2,
                "y": [PUBLISHED_64["Ulysses"][0], PUBLISHED_64["Megatron-SP"][0]], "style": "x"}]
    plot.lines(out / "paper_max_length.png", f"Longest sequence, {model}, batch 1", "GPUs", "tokens",
               series, logx=2, logy=2, xticks=GPUS)
    series = [{"label": "Trident LASP-2 (estimated)", "x": GPUS,
               "y": [paper[g]["LASP-2"]["tokens_per_s"] for g in GPUS]}]
    series += [{"label": f"paper LASP, {name}", "x": [g for g in GPUS if published[g][1]],
                "y": [published[g][1] for g in GPUS if published[g][1]], "style": "s--"}
               for name, published in (("DDP", PUBLISHED_DDP), ("FSDP", PUBLISHED_FSDP))]
    plot.lines(out / "paper_throughput.png", f"Tokens/s at the longest sequence, {model}", "GPUs", "tokens/s", series,
               logx=2, xticks=GPUS)


def main() -> None:
    common.drive("lasp", __doc__, MODES, [measured, hybrids, paper_scale], report)


if __name__ == "__main__":
    main()
