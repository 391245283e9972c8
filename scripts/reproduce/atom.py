#!/usr/bin/env python3
"""ATOM (docs/methods.md §4) reproduced, in two halves; writes OUT/atom.md and two PNGs.

Measured here: (1) the same model and global batch (configs/experiments/atom/atom_peers_cpu.yaml) trained by
GPipe over two ranks (the baseline ATOM is set against) and by ATOM's peers (two whole replicas averaging their
parameters in the background every parallel.atom.average_every steps, and as seldom as a round needs), on the emulated
cluster of 2 nodes x 1 rank whose link gives a pipeline's stage boundary the share of a stage's compute it has on the
testbed (configs/clusters/rtx4090-8x1-gpt6.7b.yaml) at each of its link speeds in turn; (2) one peer whose model
does not fit its device budget (configs/experiments/atom/atom_swap_cpu.yaml) swapping sub-models over an emulated
host-to-device link, against the same model resident.

At paper scale: `trident plan` on GPT-3 6.7B and 8 RTX 4090 peers (configs/experiments/atom/paper_gpt6.7b.yaml,
configs/clusters/rtx4090-8x1-gpt6.7b.yaml) at 10 Gbit/s, 1 Gbit/s and 100 Mbit/s between the peers: ATOM's tokens/s
(averaging as the config says, and at the interval that hides a round) beside GPipe over the same GPUs, and the paper's
claim of up to 20x over decentralized pipeline parallelism. What the report says about the configs and models is
read from them (`trident config`), from `trident plan` and from the runs' logs.
"""
import json
import math
import re
import shutil
import statistics
import sys

import yaml

import common

sys.path.insert(0, str(common.ROOT / "scripts"))
import plot  # noqa: E402

PEERS = "configs/experiments/atom/atom_peers_cpu.yaml"
SWAP = "configs/experiments/atom/atom_swap_cpu.yaml"
PAPER = "configs/experiments/atom/paper_gpt6.7b.yaml"
CLUSTER = "configs/clusters/rtx4090-8x1-gpt6.7b.yaml"
MEASURED = ("pipeline", "atom", "atom_hidden")  # atom_hidden: averaging as seldom as a round needs on the link
PAPER_LINKS = {"10gbit": 1.25, "1gbit": 0.125, "100mbit": 0.0125}  # GB/s
PUBLISHED_OVER_PIPELINE = 20.0  # "up to 20x" over decentralized pipeline parallelism, slow networks (abstract)

MODES = {  # bandwidths of the peers' link, steps a run; the swap runs: tokens a batch, budgets (1/k of the state)
    "smoke": {"bandwidths": ["10gbit"], "steps": 4, "swap_tokens": 256, "budgets": [2], "swap_steps": 3},
    "quick": {"bandwidths": ["10gbit", "1gbit", "100mbit"], "steps": 8, "swap_tokens": 1024, "budgets": [2, 4],
              "swap_steps": 5},
    "full": {"bandwidths": ["10gbit", "1gbit", "100mbit"], "steps": 16, "swap_tokens": 1024, "budgets": [2, 4, 8],
             "swap_steps": 8},
}
SWAP_LINK_GB_PER_S = 1.0


def mbit(bandwidth: str) -> float:
    value, unit = re.fullmatch(r"([0-9.]+)(kbit|mbit|gbit)", bandwidth).groups()
    return float(value) * {"kbit": 1e-3, "mbit": 1.0, "gbit": 1e3}[unit]


def averaging(every: int) -> str:
    """parallel.atom.average_every in words."""
    return f"averaging every {every} steps" if every > 1 else "averaging every step" if every else \
        "summing the gradients every step (exact peers)"


def cluster_at(name: str, out) -> str:
    """The testbed's cluster file with the peers' link at PAPER_LINKS[name], written to OUT/runs/cluster_NAME.yaml."""
    cluster = common.read_yaml(CLUSTER)
    cluster["network"]["inter_node"]["bandwidth_gb_per_s"] = PAPER_LINKS[name]
    path = out / "runs" / f"cluster_{name}.yaml"
    path.write_text(yaml.safe_dump(cluster, sort_keys=False))
    return str(path)


def peers_over_links(mode: dict, out) -> dict:
    """For each of the testbed's link speeds, the emulated link at which a pipeline's stage boundary weighs on this
    model's stage as on GPT-3 6.7B's 8 stages (`emucluster.sh up --like ... --exchange pipeline`); there GPipe,
    ATOM averaging as its config says, and ATOM averaging as seldom as a round of its parameters needs on that link
    (the scaling's round tokens over a peer's tokens a step, rounded up)."""
    results = {}
    tokens_a_peer = common.resolved_config(PEERS)["train"]["batch_tokens"] // 2
    profile = out / "runs" / "like_profile.yaml"  # measured by the first cluster, shared by the others
    for bandwidth in mode["bandwidths"]:
        with common.EmulatedCluster("reproduce-atom", 2, 1, like=cluster_at(bandwidth, out), config=PEERS,
                                    exchange="pipeline", profile=str(profile) if profile.exists() else "") as cluster:
            if cluster.scaling and not profile.exists():
                shutil.copyfile(cluster.profile_path, profile)
            runs = {"pipeline": ["--set", "parallel.strategy=pipeline"], "atom": ["--set", "parallel.strategy=atom"]}
            hidden = None
            if cluster.scaling:
                hidden = max(1, math.ceil(cluster.scaled["here"]["round_tokens"] / tokens_a_peer))
                runs["atom_hidden"] = runs["atom"] + ["--set", f"parallel.atom.average_every={hidden}"]
            results[bandwidth] = {"scaling": cluster.scaling, "hidden_every": hidden, "link_here": cluster.inter_rate}
            for name, sets in runs.items():
                print(f"reproduce/atom.sh: measured: {name} at {bandwidth}'s ratio ({cluster.where})", file=sys.stderr)
                run_dir = out / "runs" / f"{bandwidth}_{name}"
                # a step waiting for a round on the slowest link outlasts the watchdog's default deadline, and the
                # peers' last synchronization (parameters and AdamW moments, 77 MB) takes minutes at 100mbit's ratio
                code, _ = cluster.run(["train", PEERS, "--set", f"train.steps={mode['steps']}", *sets, "--set",
                                       "run.watchdog_s=7200", "--set", f"run.dir={run_dir}"],
                                      out / "runs" / f"{bandwidth}_{name}.log", timeout_s=3600)
                rows = common.metrics(run_dir)
                if code != 0 or len(rows) < mode["steps"]:
                    raise common.Failure(f"{name} at {bandwidth}'s ratio: exit {code}, see {run_dir}.log")
                results[(bandwidth, name)] = {"tokens_per_s": common.tokens_per_s(rows),
                                              "mb_sent": statistics.mean(r["comm_bytes"] for r in
                                                                         common.steady(rows)) / 1e6}
        results["where"] = cluster.place
    results["parameters"] = common.logged_parameters(out / "runs" / f"{mode['bandwidths'][0]}_atom")
    return results


def swapped_vs_resident(mode: dict, out) -> dict:
    """The resident run first: its log names the parameters, whose 16 bytes each (weights, gradients, AdamW m and v)
    the budgets are fractions of."""
    base = ["train", SWAP, "--set", f"train.steps={mode['swap_steps']}", "--set",
            f"train.batch_tokens={mode['swap_tokens']}", "--set",
            f"parallel.atom.emulate_copy_gb_per_s={SWAP_LINK_GB_PER_S}"]
    results = {}
    for name in ["resident"] + [f"1/{k}" for k in mode["budgets"]]:
        print(f"reproduce/atom.sh: measured: {SWAP}, {name}", file=sys.stderr)
        run_dir = out / "runs" / f"swap_{name.replace('/', '_of_')}"
        if name == "resident":
            sets = ["--set", "parallel.strategy=dp"]
        else:
            sets = ["--set", f"device.memory_gb={results['state_gib'] / int(name[2:])}"]
        code, _ = common.run(base + sets + ["--set", f"run.dir={run_dir}"], run_dir.with_suffix(".log"))
        rows = common.metrics(run_dir)
        if code != 0 or len(rows) < mode["swap_steps"]:
            raise common.Failure(f"the {name} run of {SWAP}: exit {code}, see {run_dir}.log")
        if name == "resident":
            results["state_gib"] = 16 * common.logged_parameters(run_dir) / 2 ** 30
        steady = common.steady(rows)
        results[name] = {"tokens_per_s": common.tokens_per_s(rows), "sub_models": steady[-1].get("sub_models", 1),
                         "exposed_ms": statistics.median(r.get("exposed_copy_ms", 0) for r in steady),
                         "copy_ms": statistics.median(r.get("copy_ms", 0) for r in steady)}
    return results


def paper_scale(mode: dict, out) -> dict:
    """`trident plan --json` at each link speed: the swap plan of a peer, and its "peers" object (ATOM against
    GPipe)."""
    found = {}
    for name in PAPER_LINKS:
        path = cluster_at(name, out)
        code, output = common.run(["plan", PAPER, "--cluster", path, "--json"], out / "runs" / f"plan_{name}.log")
        if code != 0:
            raise common.Failure(f"trident plan at {name}: exit {code}, see {out}/runs/plan_{name}.log")
        found[name] = json.loads(output.splitlines()[-1])
    return found


def report(args, mode: dict, plans: dict, swaps: dict, links: dict, wall_s: float) -> None:
    out = args.out
    peers, swap, big = (common.resolved_config(c) for c in (PEERS, SWAP, PAPER))
    peers_every = peers["parallel"]["atom"]["average_every"]
    md = common.header("ATOM reproduced: measured here, and at paper scale from the cost model", args, wall_s)
    md += ["## Measured here: peers against the pipeline at the testbed's ratios", "",
           f"`{PEERS}` ({common.describe_model(peers['model'])}; {links['parameters'] / 1e6:.1f}M parameters; "
           f"{peers['train']['batch_tokens']:,} tokens a step) on {links['where']}. For each of the testbed's links "
           f"between peers (`{CLUSTER}`), the link between the nodes is set so that a pipeline's stage boundary "
           "(a token's activations one way) takes the same share of a stage's compute here as on the testbed's "
           "stages (`emucluster.sh up --like ... --exchange pipeline`: the tables below). "
           f"{mode['steps']} steps a run, tokens/s over the steps after the first. pipeline: GPipe, one stage a node; "
           f"atom: each rank a whole replica on half the batch, {averaging(peers_every)} on a thread of its own; "
           "atom_hidden: the same, averaging as seldom as a round of the parameters needs on that link (the table's "
           "round tokens over a peer's tokens a step).", ""]
    rows = []
    for bw in mode["bandwidths"]:
        pipeline = links[(bw, "pipeline")]["tokens_per_s"]
        for s in (s for s in MEASURED if (bw, s) in links):
            r = links[(bw, s)]
            every = {"pipeline": "", "atom": str(peers_every), "atom_hidden": str(links[bw]["hidden_every"])}[s]
            speedup = f"**{r['tokens_per_s'] / pipeline:.2f}x**" if s != "pipeline" else ""
            rows.append([bw, links[bw]["link_here"], s, every, f"{r['tokens_per_s']:,.0f}", speedup,
                         f"{r['mb_sent']:.2f}"])
    md += common.table(["testbed link", "link here", "run", "averaging every", "tokens/s", "over pipeline",
                        "MB sent a step"], rows)
    md += ["", f"A round averages {links['parameters'] / 1e6:.1f}M fp32 parameters "
           f"({4 * links['parameters'] / 1e6:.1f} MB). The links match the pipeline's ratio; how much a round weighs "
           "follows each model's parameters per byte a stage boundary moves a token (P / (d b k)), which this model "
           "does not share with GPT-3 6.7B: compare the round tokens of the two sides below.", ""]
    for bw in mode["bandwidths"]:
        if links[bw]["scaling"]:
            md += [f"### The link for the testbed's {bw}", "", common.scaling_text(links[bw]["scaling"]), ""]
    md += ["## Measured here: a peer swapping a model its device budget cannot hold", "",
           f"`{SWAP}` ({common.describe_model(swap['model'])}; {swaps['state_gib'] * 1024:.0f} MiB of weights, "
           f"gradients and AdamW state) on one rank, {mode['swap_tokens']:,} tokens a step, copies over an emulated "
           f"{SWAP_LINK_GB_PER_S} GB/s host-to-device link; the budget is a fraction of the state; "
           f"{mode['swap_steps']} steps, medians after the first.", ""]
    resident = swaps["resident"]["tokens_per_s"]
    rows = [[name, r["sub_models"], f"{r['tokens_per_s']:,.0f}", f"**{r['tokens_per_s'] / resident:.2f}x**",
             f"{r['copy_ms']:.0f}", f"{r['exposed_ms']:.0f}"]
            for name, r in swaps.items() if name != "state_gib"]
    md += common.table(["device budget", "sub-models", "tokens/s", "swapped / resident", "copy ms", "exposed copy ms"],
                       rows)
    plan = next(iter(plans.values()))  # the link changes neither a peer's plan nor the pipeline's shape
    paper = {name: p["peers"] for name, p in plans.items()}
    count, every, pipeline = plan["peers"]["count"], plan["peers"]["average_every"], plan["peers"]["pipeline"]
    cluster = common.read_yaml(CLUSTER)["cluster"]
    model = f"{common.gpt_parameters(big['model']) / 1e9:.1f}B-parameter GPT"
    md += ["", f"## At paper scale: a {model} on {count} peers, estimated by `trident plan`", "",
           f"`{PAPER}` ({common.describe_model(big['model'])}) on `{CLUSTER}` (`{cluster['name']}`: "
           f"{cluster['nodes']} node(s) x {cluster['devices_per_node']} GPU(s) of {cluster['device_memory_gb']} GB) "
           f"with the peers' link set to each speed: a peer swaps its {-(-big['train']['batch_tokens'] // count):,}-"
           f"token share through {plan['budget_bytes'] / 2 ** 30:.3g} GiB (its {plan['host_store_bytes'] / 1e9:.0f} "
           f"GB of state stays in host memory); a round averages the fp32 parameters over the {count} peers (an "
           f"all-reduce); GPipe runs the {big['train']['batch_tokens']:,}-token batch in {pipeline['micro_batches']} "
           f"micro-batches over {pipeline['stages']} GPUs, each stage holding its own layers. The compute and link "
           f"figures are the cluster file's (compute: \"{common.read_yaml(CLUSTER)['compute']['fitted_from']}\").", ""]
    rows = []
    for name, p in paper.items():
        a, g = p["atom"], p["pipeline"]
        rows.append([name, f"{a['tokens_per_s']:,.0f}", f"{p['atom_over_pipeline']:.2f}x", a["hiding_every"],
                     f"{a['hidden_tokens_per_s']:,.0f}", f"**{p['hidden_atom_over_pipeline']:.2f}x**",
                     f"{g['tokens_per_s']:,.0f}", f"{g['comm_s'] / g['step_s']:.0%}"])
    md += common.table(["link", f"ATOM, {averaging(every)}", "vs pipeline", "steps a round needs",
                        "ATOM, averaging that seldom", "vs pipeline", "pipeline tokens/s", "pipeline's link share"],
                       rows)
    best = max(p["hidden_atom_over_pipeline"] for p in paper.values())
    paced = [n for n, p in paper.items() if p["atom"]["step_s"] > p["atom"]["peer_step_s"]]
    md += ["", f"The paper: up to {PUBLISHED_OVER_PIPELINE:.0f}x the training efficiency of decentralized pipeline "
           f"parallelism on GPT-3 configurations over slow networks (abstract-level; its setup figures are "
           f"unverified). Trident's estimate: up to {best:.1f}x ({common.difference(best, PUBLISHED_OVER_PIPELINE)} "
           "the paper's), where the parameters are averaged seldom enough for a round to stay hidden. "
           f"{averaging(every).capitalize()}, a round paces the peers at {', '.join(paced) or 'no link here'}. How "
           "seldom averaging may be without hurting the loss is what the paper's asynchronous peers trade; the cost "
           "model does not say.", "",
           "Figures: `measured_throughput.png`, `paper_throughput.png`.", ""]
    (out / "atom.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))

    xs = [mbit(bw) for bw in mode["bandwidths"]]
    plot.lines(out / "measured_throughput.png", "Tokens/s at the testbed's ratios (measured here, 2 nodes x 1 rank)",
               "the testbed's link between peers (Mbit/s)", "tokens/s",
               [{"label": s, "x": xs, "y": [links[(bw, s)]["tokens_per_s"] for bw in mode["bandwidths"]]}
                for s in MEASURED if all((bw, s) in links for bw in mode["bandwidths"])], logx=10, logy=10)
    names = list(paper)
    xs = [mbit(n) for n in names]
    plot.lines(out / "paper_throughput.png", f"A {model} on {count} peers (estimated)",
               "bandwidth between the peers (Mbit/s)", "tokens/s",
               [{"label": "ATOM, round hidden", "x": xs, "y": [paper[n]["atom"]["hidden_tokens_per_s"] for n in names]},
                {"label": f"ATOM, {averaging(every)}", "x": xs, "y": [paper[n]["atom"]["tokens_per_s"] for n in names],
                 "style": "o--"},
                {"label": "GPipe", "x": xs, "y": [paper[n]["pipeline"]["tokens_per_s"] for n in names]}],
               logx=10, logy=10)


def main() -> None:
    common.drive("atom", __doc__, MODES, [paper_scale, swapped_vs_resident, peers_over_links], report)


if __name__ == "__main__":
    main()
