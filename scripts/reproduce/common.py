"""What the reproduction drivers (atom.py, flexsp.py, lasp.py) share: the command line (modes, --out), running
trident (alone or under mpirun), reading a config as trident resolves it and a run's metrics, and writing the results
folder (markdown tables, the published numbers beside ours). What a report says about a config or a model is read
from the config or from trident's output, never typed in.

A results folder is never overwritten: an earlier one is moved aside with a timestamp (as the bench scripts do).
"""
import argparse
import functools
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from provenance import provenance  # noqa: E402  (scripts/provenance.py, shared with the bench scripts)
MODES = ("smoke", "quick", "full")


class Failure(Exception):
    """A run that should have worked did not: the driver stops with this message (exit 1)."""


def parse_args(paper: str, doc: str, default_mode: str = "quick") -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"reproduce/{paper}.sh", description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group()
    for mode in MODES:
        group.add_argument(f"--{mode}", dest="mode", action="store_const", const=mode,
                           help={"smoke": "tiny sizes: checks that every table and plot is produced (CI)",
                                 "quick": "medium sizes: the reports in results/ (default)",
                                 "full": "longer runs and larger budgets"}[mode])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / paper,
                        help=f"results folder (default results/{paper}; an existing one is moved aside)")
    parser.set_defaults(mode=default_mode)
    args = parser.parse_args()
    args.provenance = provenance()
    args.command = f"bash scripts/reproduce/{paper}.sh" + "".join(f" {shlex.quote(a)}" for a in sys.argv[1:])
    return args


class Interrupted(Exception):
    """A stop signal (SIGTERM, as a time limit sends, or SIGINT) ended the reproduction."""


def _interrupt(signum, _frame):
    for stop in (signal.SIGTERM, signal.SIGINT):  # the first one ends the run; a second must not cut its clean-up
        signal.signal(stop, signal.SIG_IGN)
    raise Interrupted(signal.Signals(signum).name)


def drive(paper: str, doc: str, modes: dict, halves: list, report) -> None:
    """A driver's main: its command line, a folder to build the results in (OUT.partial), each half(mode, out) in
    turn, then report(args, mode, *their results, wall seconds) there; only then is an earlier OUT moved aside and the
    new one put in its place, so an interrupted or failed run leaves the last complete report where it was. A Failure
    stops it with its message (exit 1); SIGTERM or SIGINT stop it too (exit 128 + the signal), every `with` block
    (an emulated cluster) undone on the way out."""
    args = parse_args(paper, doc)
    mode = modes[args.mode]
    trident_binary()
    final = args.out.resolve()
    args.out = fresh_folder(final.with_name(final.name + ".partial"))
    for stop in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop, _interrupt)
    start = time.monotonic()
    try:
        results = [half(mode, args.out) for half in halves]
        report(args, mode, *results, time.monotonic() - start)
    except Failure as e:
        sys.exit(f"reproduce/{paper}.sh: {e} ({final} is as it was; this run's files are in {args.out})")
    except Interrupted as e:
        print(f"reproduce/{paper}.sh: stopped by {e}; {final} is as it was, this run's files are in {args.out}",
              file=sys.stderr)
        sys.exit(128 + signal.Signals[str(e)].value)
    aside = publish(args.out, final)
    print(f"reproduce/{paper}.sh: wrote {final}/" + (f" (the earlier one is in {aside})" if aside else ""),
          file=sys.stderr)


def trident_binary() -> Path:
    binary = Path(os.environ.get("TRIDENT", ROOT / "build" / "trident")).resolve()
    if not os.access(binary, os.X_OK):
        sys.exit(f"reproduce: no trident binary at '{binary}' (build it, or set TRIDENT)")
    return binary


def fresh_folder(out: Path) -> Path:
    """OUT, empty but for OUT/runs/: one that exists is moved aside (to OUT.DATE-TIME), never deleted."""
    out = out.resolve()
    move_aside(out)
    (out / "runs").mkdir(parents=True)
    return out


def move_aside(path: Path) -> Path | None:
    """PATH renamed to PATH.DATE-TIME (a number added when that exists too); None when there is no PATH."""
    if not path.exists():
        return None
    aside = path.with_name(f"{path.name}.{time.strftime('%Y%m%d-%H%M%S')}")
    for n in range(2, 1000):
        if not aside.exists():
            break
        aside = path.with_name(f"{path.name}.{time.strftime('%Y%m%d-%H%M%S')}-{n}")
    path.rename(aside)
    return aside


def publish(built: Path, final: Path) -> Path | None:
    """The complete results in BUILT become FINAL: an earlier FINAL is moved aside first (returned)."""
    aside = move_aside(final)
    built.rename(final)
    return aside


MPI_ENV = {"OMP_NUM_THREADS": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none", "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def run(args: list, log: Path, ranks: int = 0, timeout_s: int = 900, launcher: list | None = None) -> tuple[int, str]:
    """trident ARGS (under `mpirun -np RANKS` when ranks > 1, or after LAUNCHER; one rank needs no launcher); output
    to LOG. Returns the exit code and the output."""
    command = [str(trident_binary())] + [str(a) for a in args]
    if ranks > 1:
        command = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none"] + command
    command = (launcher or []) + command
    env = dict(os.environ, **MPI_ENV)
    # a process group of its own: a timeout, or a stop signal that ends the driver, ends mpirun's ranks too
    with subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          start_new_session=True) as process:
        try:
            output, _ = process.communicate(timeout=timeout_s)
            code = process.returncode
        except subprocess.TimeoutExpired:
            stop_group(process)
            output, code = process.communicate()[0], 124
        except BaseException:
            stop_group(process)
            raise
    log.write_text(" ".join(shlex.quote(c) for c in command) + "\n" + (output or ""))
    return code, output or ""


def stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to PROCESS's group (trident's ranks write a checkpoint and stop), SIGKILL to what is left after 10 s;
    returns once no process of the group is left."""
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            process.poll()  # the leader, reaped once it exits (a zombie is still in its group)
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


class EmulatedCluster:
    """Ranks on scripts/cluster/emucluster.sh's emulated nodes (rate-limited links between them), up for the `with`
    block and taken down after it, also on failure. Where network namespaces cannot be made (not root, no `ip`), the
    same number of ranks runs on this machine with no link limit; `where` says which, for the report.

    With `like` (a testbed's cluster file, configs/clusters/) and `config` (the runs' model), two levels whose links
    give CONFIG's model the testbed's ratio of communication to compute (`emucluster.sh up --like`, docs/emucluster.md;
    `sets` override CONFIG's keys for the profile, `exchange` is sequence or pipeline, `profile` an earlier cluster's
    `profile_path` to take instead of measuring, `alltoall_group` G scales the node links from the testbed's
    all-to-all over G devices instead of its inter_node link, `scale_lengths` matches the ratios at every length for
    runs whose lengths are the testbed's times `scaled["length_scale"]`, `slowdown` the links' slowdown instead of
    ranks / cores: scripts/cluster/calibrate.py's); `scaling` is then both sides' table
    (`trident like`) for the report and `scaled` its figures (`trident like --json`).
    Otherwise one level, `inter_bw` between nodes."""

    def __init__(self, name: str, nodes: int, ranks_per_node: int, inter_bw: str = "", like: str = "",
                 config: str = "", sets: list | None = None, exchange: str = "sequence", profile: str = "",
                 alltoall_group: int = 0, scale_lengths: bool = False, slowdown: float = 0):
        self.cluster = ["--name", f"{name}-{os.getpid()}", "--dir", f"/tmp/{name}-{os.getpid()}"]
        self.layout = ["--nodes", str(nodes), "--ranks-per-node", str(ranks_per_node)]
        if like:
            self.layout += ["--like", str(ROOT / like), "--config", str(ROOT / config), "--exchange", exchange]
            self.layout += [a for kv in (sets or []) for a in ("--set", kv)]
            self.layout += ["--profile", profile] if profile else []
            self.layout += ["--alltoall-group", str(alltoall_group)] if alltoall_group else []
            self.layout += ["--scale-lengths"] if scale_lengths else []
            self.layout += ["--slowdown", f"{slowdown:.6g}"] if slowdown else []
        else:
            self.layout += ["--inter-bw", inter_bw]
        self.like, self.scaling, self.scaled, self.inter_rate = like, "", {}, inter_bw
        self.profile_path = Path(self.cluster[3]) / "profile.yaml"  # --like's, while the cluster is up
        self.ranks = nodes * ranks_per_node
        self.emulated = os.geteuid() == 0 and shutil.which("ip") is not None and shutil.which("tc") is not None
        if not self.emulated and os.environ.get("TRIDENT_CI"):  # CI has root, ip and tc: a fallback there is a fault
            raise Failure("CI (TRIDENT_CI): the emulated cluster needs root, ip and tc, and one is missing")
        # where the ranks ran, without and with the links' rates, for the reports
        self.place = (f"the emulated cluster, {nodes} nodes x {ranks_per_node} rank(s)" if self.emulated
                      else f"{self.ranks} local ranks (no emulated links: needs root, ip and tc)")
        self.where = f"{self.place}, {inter_bw} between nodes" if self.emulated and not like else self.place

    def _emucluster(self, *args) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(ROOT / "scripts" / "cluster" / "emucluster.sh"), *args], cwd=ROOT,
                              capture_output=True, text=True, env=dict(os.environ, TRIDENT=str(trident_binary())))

    def __enter__(self):
        if self.emulated:
            try:
                up = self._emucluster("up", *self.cluster, *self.layout)
            except BaseException:  # a stop signal while it comes up: __exit__ will not run
                self._emucluster("down", *self.cluster)
                raise
            if up.returncode != 0:
                self._emucluster("down", *self.cluster)  # what a failed `up` left behind
                raise Failure(f"scripts/cluster/emucluster.sh up failed: {up.stderr.strip()}")
            if self.like:
                self.scaling = (Path(self.cluster[3]) / "like.md").read_text().strip()
                self.scaled = json.loads((Path(self.cluster[3]) / "like.json").read_text())
                rates = re.search(r"^emucluster: --intra-bw (\d+)kbit --inter-bw (\d+)kbit", self.scaling, re.M)
                self.inter_rate = f"{int(rates[2]) / 1e3:.4g} Mbit/s"
                self.where = (f"{self.place}, two levels at the ratios of {self.like}: rank links "
                              f"{int(rates[1]) / 1e3:.4g} Mbit/s, node links {self.inter_rate}")
        return self

    def __exit__(self, *exc):
        if self.emulated:
            self._emucluster("down", *self.cluster)

    def run(self, args: list, log: Path, timeout_s: int = 1200) -> tuple[int, str]:
        if not self.emulated:
            return run(args, log, ranks=self.ranks, timeout_s=timeout_s)
        launcher = ["bash", str(ROOT / "scripts" / "cluster" / "emucluster.sh"), "run", *self.cluster, "--"]
        return run(args, log, timeout_s=timeout_s, launcher=launcher)


def scaling_text(like_md: str) -> str:
    """`trident like`'s table (an emulated cluster's `scaling`) for a report section: its heading made a sentence."""
    return re.sub(r"^#+ (.*)$", r"\1.", like_md.strip(), count=1, flags=re.M)


@functools.cache
def resolved_config(path: str) -> dict:
    """PATH as trident resolves it (`trident config PATH`: every key, defaults filled in), parsed."""
    done = subprocess.run([str(trident_binary()), "config", str(path)], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    if done.returncode != 0:
        raise Failure(f"trident config {path}: exit {done.returncode}: {done.stderr.strip()}")
    return yaml.safe_load(done.stdout)


def read_yaml(path: str) -> dict:
    """A file trident reads as it is (a cluster profile: configs/clusters/), parsed."""
    return yaml.safe_load((ROOT / path).read_text())


def gpt_parameters(model: dict) -> int:
    """The parameters of a resolved config's model.* (core/model/layout.cpp): token embeddings (tied to the LM head),
    learned positions when a layer has softmax attention, per block two LayerNorms, qkv, the output projection, the
    MLP and, for a linear-attention layer with model.linear.output_gate, the gate; the final LayerNorm. All with
    biases."""
    V, C, P, L = model["vocab_size"], model["n_embd"], model["max_seq_len"], model["n_layer"]
    kinds = [("L" if model["attention"] == "linear" else "S")] * L if model["attention"] != "hybrid" else \
        [model["layers"][layer % len(model["layers"])] for layer in range(L)]
    gates = kinds.count("L") * (C * C + C) if model["linear"]["output_gate"] else 0
    return V * C + (P * C if "S" in kinds else 0) + L * (12 * C * C + 13 * C) + gates + 2 * C


def logged_parameters(run_dir: Path) -> int:
    """The parameters a training run's log names ('model: N parameters')."""
    log = run_dir / "trident.log"
    found = re.search(r"model: (\d+) parameters", log.read_text()) if log.exists() else None
    if not found:
        raise Failure(f"{log} does not name the model's parameters")
    return int(found.group(1))


def describe_model(model: dict) -> str:
    """A resolved config's model.* in words: '2 layers, width 64, 4 heads, linear attention, byte-level'."""
    vocab = "byte-level" if model["vocab_size"] == 256 else f"a {model['vocab_size']:,}-token vocabulary"
    attention = f"layers {model['layers']} repeated (L linear, S softmax)" if model["attention"] == "hybrid" else \
        f"{model['attention']} attention"
    return f"{model['n_layer']} layers, width {model['n_embd']}, {model['n_head']} heads, {attention}, {vocab}"


def metrics(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def steady(rows: list[dict]) -> list[dict]:
    """The steps after the first (which allocates and warms up), or the only one."""
    return rows[1:] if len(rows) > 1 else rows


def tokens_per_s(rows: list[dict]) -> float:
    rows = steady(rows)
    return sum(r["tokens"] for r in rows) / sum(r["step_ms"] for r in rows) * 1e3


def median(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in steady(rows))


def capacity_in(output: str) -> int | None:
    """The activation capacity a refusal names ('... activation capacity of N tokens ...'), if any."""
    found = re.search(r"activation capacity of (\d+) tokens", output)
    return int(found.group(1)) if found else None


def table(header: list[str], rows: list[list]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
        ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def tokens_k(n: float) -> str:
    """A sequence length as the papers write it: 2048K for 2,097,152 tokens."""
    return f"{n / 1024:,.0f}K" if n >= 1024 else f"{n:,.0f}"


def difference(ours: float, paper: float) -> str:
    return f"{ours / paper:.2f}x" if paper else "—"


def header(title: str, args: argparse.Namespace, wall_s: float) -> list[str]:
    p = args.provenance
    return [f"# {title}", "",
            f"`{args.command}` (mode {args.mode}): commit {p['commit']}, {p['machine']}, started {p['date']}, "
            f"{wall_s:.0f} s wall.", ""]
