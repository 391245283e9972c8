#!/usr/bin/env python3
"""Draws the loss curve of one or more Trident runs (RUN_DIR/metrics.jsonl) to a PNG.

    python3 scripts/plot.py runs/quickstart [runs/other ...] -o loss.png

The reproduction drivers (scripts/reproduce/) import it for their figures, laid out like the papers': lines against
ranks, GPUs or bandwidth (`lines`), and grouped bars (`bars`).
"""
import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_metrics(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        sys.exit(f"plot.py: no metrics file at {path}")
    records = []
    with path.open() as f:
        for number, line in enumerate(f, 1):
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"plot.py: {path}:{number}: not a JSON line ({e})")
    return records


def lines(path: Path, title: str, xlabel: str, ylabel: str, series: list[dict], logx: int = 0, logy: int = 0,
          xticks: list | None = None) -> None:
    """One line per series: {"label", "x", "y"} and optionally "style" (a matplotlib format such as "o--").
    logx/logy: the axis' log base (0: linear). xticks: the x values to label (e.g. the GPU counts)."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, s in enumerate(series):
        if s["x"]:
            ax.plot(s["x"], s["y"], s.get("style", "o-"), color=s.get("color", f"C{i}"), label=s["label"])
    if logx:
        ax.set_xscale("log", base=logx)
    if logy:
        ax.set_yscale("log", base=logy)
    if xticks:
        ax.set_xticks(xticks, [str(x) for x in xticks])
        ax.minorticks_off()
    ax.set_xlabel(xlabel)
    _finish(fig, ax, path, title, ylabel)


def bars(path: Path, title: str, ylabel: str, groups: list[str], series: list[dict],
         hline: float | None = None) -> None:
    """Grouped bars: one group per entry of groups, one bar per series {"label", "values"} (None: no bar); hline
    draws a reference level (1.0 for speedups)."""
    fig, ax = plt.subplots(figsize=(max(7.0, 0.9 * len(groups) * len(series) / 2 + 3), 4.5))
    width = 0.8 / max(1, len(series))
    for i, s in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        pts = [(x, v) for x, v in zip(xs, s["values"]) if v is not None]
        if pts:
            ax.bar(*zip(*pts), width, label=s["label"], color=f"C{i}")
    if hline is not None:
        ax.axhline(hline, color="black", linewidth=0.8)
    tilt = len(groups) > 4  # longer rows of names would overlap
    ax.set_xticks(range(len(groups)), groups, rotation=30 if tilt else 0, ha="right" if tilt else "center")
    _finish(fig, ax, path, title, ylabel, "y")


def _finish(fig, ax, path: Path, title: str, ylabel: str, grid_axis: str = "both") -> None:
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both", axis=grid_axis)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (each holds metrics.jsonl)")
    parser.add_argument("-o", "--output", type=Path, default=Path("loss.png"), help="PNG to write")
    args = parser.parse_args()

    fig, ax = plt.subplots(figsize=(8, 5))
    for run in args.runs:
        records = read_metrics(run)
        train = [(r["step"], r["loss"]) for r in records if "loss" in r]
        evals = [(r["step"], r["eval_loss"]) for r in records if "eval_loss" in r]
        if train:
            ax.plot(*zip(*train), label=f"{run.name} train")
        if evals:
            ax.plot(*zip(*evals), "o-", label=f"{run.name} eval")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/token)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"plot.py: wrote {args.output}")


if __name__ == "__main__":
    main()
