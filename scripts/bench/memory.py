#!/usr/bin/env python3
"""Memory per rank under parallel.zero.stage and train.recompute (docs/memory.md), measured by training here.

1. Model states per rank: GPT-2 124M (configs/gpt2_124m.yaml with 128 positions, so one step fits a rank) on
   1/2/4 ranks (--states-ranks; 8 ranks at stage 0 would hold 16 GB on this machine) at stages 0 to 3: the
   bytes of parameters, gradients and AdamW moments by the formula of
   docs/memory.md, beside the start-up log's and the peak_mem_bytes of one training step (states plus the step's
   activations).
2. LASP's scalability table at this machine's scale: the longest one-document sequence LASP-2 (sequence parallelism
   over all the ranks) trains in a fixed device.memory_gb, on 1/2/4/8 ranks, at stages 0 to 3, each with recompute
   none, selective and full (configs/experiments/lasp/scaled_linear.yaml with 4 layers; the search of scripts/reproduce/lasp.py:
   trident names its per-rank capacity when it refuses a document, and the longest length is then trained).
3. Recomputation's price: tokens/s with and without it at the same length (the longest stage 0 trains without it, on
   each rank count), in interleaved rounds, median and range.
4. The stages' price: data parallelism's step time at stages 0 to 3 (configs/quickstart.yaml's model on
   synthetic documents) on 2 and 4 ranks sharing this machine's memory, in interleaved rounds, with the bytes a rank
   sends.

Writes OUT/memory.md (default runs/bench_memory; an existing folder is moved aside). Run through scripts/bench/memory.sh,
which checks the options (as every bench script does) and passes its command line for the report.
"""
import argparse
import re
import shlex
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reproduce"))
import common  # noqa: E402
import lasp  # noqa: E402

GPT2 = "configs/gpt2_124m.yaml"
GPT1B = "configs/experiments/atom/atom_gpt1.3b.yaml"  # a ~1B model, by the formula alone
FORMULA_RANKS = [1, 8, 64]
GPT2_SETS = ["model.max_seq_len=128", "train.batch_tokens=1024", "train.micro_batches=1", "train.steps=1",
             "train.warmup_steps=0", "train.eval_every=0", "device.memory_gb=8", "parallel.strategy=dp",
             "checkpoint.keep=1", "sample.tokens=0", "device.backend=cpu", "train.precision=fp32"]
LASP_LAYERS = 4
STAGES = (0, 1, 2, 3)
RECOMPUTE = ("none", "selective", "full")


def states_bytes(model: dict, ranks: int, stage: int, precision: str) -> int:
    """docs/memory.md's formula: parameters (and bf16's weight copy) whole below stage 3; the moments of the rank's
    range (the first, longest one: 16-float units dealt over the ranks); the gradients whole, or at stages 2 and 3 the
    range's with the windows they are reduced through (parallel/zero/model_shards.cpp: the final norm's and the
    embeddings', two layers', and the parts of them a reduction brings the rank, each at most the range); at stage 3
    the weights the range's with the windows they are gathered into (the final norm's, the embeddings', two layers',
    and with bf16 their bf16 copies)."""
    params = common.gpt_parameters(model)
    sharded = ranks > 1 and stage > 0
    owned = min(params, -(-(-(-params // 16)) // ranks) * 16) if sharded else params
    C = model["n_embd"]
    final_norm = 2 * C
    embeddings = model["vocab_size"] * C + (model["max_seq_len"] * C if model["attention"] != "linear" else 0)
    gated = model["attention"] != "softmax" and model["linear"]["output_gate"]  # a linear layer's output gate
    layer = 12 * C * C + 13 * C + (C * C + C if gated else 0)  # the widest layer
    grads, weights, copies = params, params, params if precision == "bf16" else 0
    if stage >= 2 and sharded:
        grads = (owned + final_norm + embeddings + 2 * layer + min(final_norm, owned) + min(embeddings, owned) +
                 2 * min(layer, owned))
    if stage == 3 and sharded:
        weights = owned + final_norm + embeddings + 2 * layer
        copies = weights - owned if precision == "bf16" else 0
    return 4 * weights + 4 * grads + 2 * copies + 8 * owned


def sets_args(config: str, sets: list) -> list:
    return ["train", config] + [x for s in sets for x in ("--set", s)]


def gpt2_states(ranks_list: list, out: Path) -> list[dict]:
    rows = []
    for ranks in ranks_list:
        for stage in STAGES if ranks > 1 else (0,):
            run_dir = out / "runs" / f"gpt2_r{ranks}_z{stage}"
            sets = GPT2_SETS + [f"train.batch_tokens={128 * ranks}", f"parallel.zero.stage={stage}",
                                f"run.dir={run_dir}"]
            code, output = common.run(sets_args(GPT2, sets), out / "runs" / f"gpt2_r{ranks}_z{stage}.log", ranks=ranks)
            if code != 0:
                raise common.Failure(f"GPT-2 124M on {ranks} rank(s) at stage {stage}: exit {code}, see {run_dir}.log")
            params = common.logged_parameters(run_dir)
            logged = re.search(r"model, gradients and optimizer state ([0-9.]+ \w+)", output)
            model = dict(common.resolved_config(GPT2)["model"], max_seq_len=128)
            if common.gpt_parameters(model) != params:
                raise common.Failure(f"GPT-2 124M: the formula counts {common.gpt_parameters(model):,} parameters, "
                                     f"the run {params:,}")
            rows.append({"ranks": ranks, "stage": stage, "params": params,
                         "formula": states_bytes(model, ranks, stage, "fp32"),
                         "logged": logged.group(1) if logged else "?",
                         "peak": max(r["peak_mem_bytes"] for r in common.metrics(run_dir))})
    return rows


def lasp_args(ranks: int, length: int, steps: int, memory_gb: float, stage: int, recompute: str, run_dir: Path):
    args = lasp.train_args("LASP-2", ranks, length, steps, memory_gb, run_dir)
    return args + ["--set", f"model.n_layer={LASP_LAYERS}", "--set", f"parallel.zero.stage={stage}",
                   "--set", f"train.recompute={recompute}"]


def lasp_longest(ranks_list: list, memory_gb: float, out: Path) -> list[dict]:
    lasp.write_corpus(4_000_000)
    mode = {"memory_gb": memory_gb, "steps": 2}
    rows = []
    for ranks in ranks_list:
        for stage in STAGES if ranks > 1 else (0,):
            for recompute in RECOMPUTE:
                tag = f"lasp2_r{ranks}_z{stage}_{recompute}"
                found = lasp.longest_length(
                    lambda n, steps, d, s=stage, r=recompute, k=ranks: lasp_args(k, n, steps, memory_gb, s, r, d),
                    f"LASP-2 on {ranks} rank(s), stage {stage}, recompute {recompute}", tag, ranks, ranks, mode, out)
                found.update(ranks=ranks, stage=stage, recompute=recompute)
                rows.append(found)
    return rows


def recompute_price(longest: list[dict], memory_gb: float, rounds: int, out: Path) -> list[dict]:
    rows = []
    for ranks in sorted({r["ranks"] for r in longest}):
        length = next(r["longest"] for r in longest if (r["ranks"], r["stage"], r["recompute"]) == (ranks, 0, "none"))
        speed = {recompute: [] for recompute in RECOMPUTE}
        for k in range(rounds):
            for recompute in RECOMPUTE:
                run_dir = out / "runs" / f"price_r{ranks}_{recompute}_{k}"
                code, _ = common.run(lasp_args(ranks, length, 4, memory_gb, 0, recompute, run_dir),
                                     Path(f"{run_dir}.log"), ranks=ranks)
                if code != 0:
                    raise common.Failure(f"LASP-2 at {length} tokens on {ranks} rank(s), recompute {recompute}: exit "
                                         f"{code}, see {run_dir}.log")
                speed[recompute].append(common.tokens_per_s(common.metrics(run_dir)))
        rows.append({"ranks": ranks, "length": length, **{r: speed[r] for r in RECOMPUTE}})
    return rows


def stage_price(rounds: int, out: Path) -> list[dict]:
    sets = ["data.kind=synthetic", "train.steps=6", "train.warmup_steps=1", "train.eval_every=0", "sample.tokens=0",
            "parallel.strategy=dp", "checkpoint.keep=1"]
    rows = []
    for ranks in (2, 4):
        step_ms = {stage: [] for stage in STAGES}
        sent = {}
        for k in range(rounds):
            for stage in STAGES:
                run_dir = out / "runs" / f"stage_r{ranks}_z{stage}_{k}"
                code, _ = common.run(sets_args("configs/quickstart.yaml", sets + [f"parallel.zero.stage={stage}",
                                                                                  f"run.dir={run_dir}"]),
                                     Path(f"{run_dir}.log"), ranks=ranks)
                if code != 0:
                    raise common.Failure(f"dp on {ranks} ranks at stage {stage}: exit {code}, see {run_dir}.log")
                metrics = common.metrics(run_dir)
                step_ms[stage].append(common.median(metrics, "step_ms"))
                sent[stage] = common.median(metrics, "comm_bytes")
        rows.append({"ranks": ranks, "step_ms": step_ms, "sent": sent,
                     "params": common.logged_parameters(out / "runs" / f"stage_r{ranks}_z0_0")})
    return rows


def spread(values: list) -> str:
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"


def report(args, states, longest, price, stage, wall_s) -> str:
    p = common.provenance()
    model = common.resolved_config(lasp.SCALED)["model"]
    lines = ["# Memory per rank: sharded optimizer state and activation recomputation", "",
             f"Measured by `{args.command}`: commit {p['commit']}, {p['machine']}, {p['date']}, {wall_s:.0f} s wall. "
             "Every rank runs one OpenMP thread; ranks share the machine's cores, so tokens/s measure "
             "oversubscription, while bytes and lengths (allocations against device.memory_gb) do not depend on "
             "the machine.", "",
             "## Model states per rank: GPT-2 124M", "",
             f"`{GPT2}` with 128 positions, one step of 128 tokens a rank (dp). *Formula*: 4 P parameters + 4 P "
             "gradients + 8 bytes a parameter of AdamW's moments for the parameters the rank owns (all of them at "
             "stage 0; its 16-float units' share at stages 1 to 3); at stages 2 and 3 the gradients are the range's "
             "and the windows they are reduced through, at stage 3 the weights the range's and the windows they are "
             "gathered into (docs/memory.md). *Logged*: the start-up log's model, gradients "
             "and optimizer state. *Peak*: rank 0's peak_mem_bytes in that step (the states and the step's "
             "activations).", ""]
    lines += common.table(["ranks", "stage", "parameters", "states by formula (MiB)", "logged", "peak (MiB)"],
                          [[r["ranks"], r["stage"], f"{r['params']:,}", f"{r['formula'] / 2**20:,.1f}", r["logged"],
                            f"{r['peak'] / 2**20:,.1f}"] for r in states])
    big = common.resolved_config(GPT1B)["model"]
    big_params = common.gpt_parameters(big)
    gpt2 = dict(common.resolved_config(GPT2)["model"], max_seq_len=128)
    lines += ["", f"By the formula alone (*estimated*), GPT-2 124M as above and `{GPT1B}` "
              f"({common.describe_model(big)}, {big_params:,} parameters), fp32 and bf16 (a bf16 copy of the weights "
              "beside fp32 masters, gradients and moments), GiB a rank:", ""]
    lines += common.table(["model", "precision", "stage"] + [f"{r} rank(s)" for r in FORMULA_RANKS],
                          [[name, precision, stage] + [f"{states_bytes(m, r, stage, precision) / 2**30:,.2f}"
                                                        for r in FORMULA_RANKS]
                           for name, m in (("GPT-2 124M", gpt2), ("~1.3B", big))
                           for precision in ("fp32", "bf16") for stage in STAGES])
    lines += ["", "## The longest sequence LASP-2 trains in a fixed budget", "",
              f"`{lasp.SCALED}` with {LASP_LAYERS} layers ({common.describe_model(dict(model, n_layer=LASP_LAYERS))})"
              f", device.memory_gb = {args.memory_gb} a rank, one document a step, LASP-2 over all the ranks "
              "(sequence parallelism of degree = ranks); the longest length trained, and the tokens/s and rank 0's "
              "peak at it (2 steps).", ""]
    lines += common.table(["ranks", "stage", "recompute", "longest (tokens)", "vs stage 0 / none", "tokens/s",
                           "peak (MiB)"],
                          [[r["ranks"], r["stage"], r["recompute"], f"{r['longest']:,}",
                            f"{r['longest'] / next(b['longest'] for b in longest if (b['ranks'], b['stage'], b['recompute']) == (r['ranks'], 0, 'none')):.2f}x",
                            f"{r['tokens_per_s']:,.0f}", f"{r['peak_mib']:,.2f}"] for r in longest])
    lines += ["", "## What recomputation costs", "",
              f"At each rank count's longest length at stage 0 without recomputation: tokens/s of 4-step runs (the "
              f"first step left out), {', '.join(RECOMPUTE)} in turn, {args.rounds} rounds; median (range).", ""]
    lines += common.table(["ranks", "length"] + [f"{m} tokens/s" for m in RECOMPUTE] +
                          [f"{m} / none (median)" for m in RECOMPUTE[1:]],
                          [[r["ranks"], f"{r['length']:,}"] + [spread(r[m]) for m in RECOMPUTE] +
                           [f"{statistics.median(r[m]) / statistics.median(r['none']):.2f}x" for m in RECOMPUTE[1:]]
                           for r in price])
    lines += ["", "## What the stages cost", "",
              f"`configs/quickstart.yaml`'s model ({common.describe_model(common.resolved_config('configs/quickstart.yaml')['model'])}"
              f") on synthetic documents, dp, 6 steps a run (the first left out), stages {', '.join(map(str, STAGES))} "
              f"in turn, {args.rounds} rounds: the median step time (range of the runs' medians), and the bytes rank 0 "
              "hands its communicators a step (the gradients' all-reduce, at stage 1 its range's all-gather beside "
              "it, at stage 2 a reduce-scatter of each layer's gradient and the all-gather, at stage 3 the "
              "reduce-scatters and each layer's weights gathered before its forward and its backward instead of "
              "the all-gather). The ranks share this machine's memory: no link is limited here.", ""]
    lines += common.table(["ranks", "parameters"] + [f"stage {z} step (ms)" for z in STAGES] +
                          [f"stage {z} / stage 0" for z in STAGES[1:]] +
                          [f"stage {z} sent a step (MiB)" for z in STAGES],
                          [[r["ranks"], f"{r['params']:,}"] + [spread(r["step_ms"][z]) for z in STAGES] +
                           [f"{statistics.median(r['step_ms'][z]) / statistics.median(r['step_ms'][0]):.2f}x"
                            for z in STAGES[1:]] + [f"{r['sent'][z] / 2**20:,.2f}" for z in STAGES] for r in stage])
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench/memory.sh", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", default="1,2,4,8")
    parser.add_argument("--states-ranks", default="1,2,4")
    parser.add_argument("--memory-gb", type=float, default=0.03)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=common.ROOT / "runs" / "bench_memory")
    parser.add_argument("--command", help="the command line to report (memory.sh's)")
    args = parser.parse_args()
    for name, value in (("--ranks", args.ranks), ("--states-ranks", args.states_ranks)):
        if not re.fullmatch(r"[1-9][0-9]*(,[1-9][0-9]*)*", value):
            parser.error(f"{name}: '{value}' is not a comma-separated list of positive whole numbers")
    if args.memory_gb <= 0 or args.rounds < 1:
        parser.error("--memory-gb must be > 0 and --rounds >= 1")
    if not args.command:
        args.command = "python3 scripts/bench/memory.py" + "".join(f" {shlex.quote(a)}" for a in sys.argv[1:])
    ranks = [int(r) for r in args.ranks.split(",")]
    common.trident_binary()
    out = common.fresh_folder(args.out)
    start = time.monotonic()
    try:
        states = gpt2_states([int(r) for r in args.states_ranks.split(",")], out)
        longest = lasp_longest(ranks, args.memory_gb, out)
        price = recompute_price(longest, args.memory_gb, args.rounds, out)
        stage = stage_price(args.rounds, out)
    except common.Failure as e:
        sys.exit(f"bench/memory.sh: {e}")
    (out / "memory.md").write_text(report(args, states, longest, price, stage, time.monotonic() - start))
    print(f"bench/memory.sh: wrote {out / 'memory.md'}")


if __name__ == "__main__":
    main()
