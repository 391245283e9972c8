#!/usr/bin/env python3
"""Draws the loss curve of one or more Trident runs (RUN_DIR/metrics.jsonl) to a PNG.

    python3 scripts/plot.py runs/quickstart [runs/other ...] -o loss.png
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
