#!/usr/bin/env python3
"""Calibrating an emulated cluster's links to a testbed by static SP's all-to-all share of its step
(docs/emucluster.md, "Calibration"). The share measured here over a few steps (metrics.jsonl's alltoall_ms over
step_ms, the median after the first step) is set against the testbed's (`trident plan --json` of the testbed's
model: static SP's exchange_s over time_s), and the slowdown the links were scaled for (`emucluster.sh up --like ...
--slowdown S`, like.json's `slowdown`) is scaled by the ratio of their odds, share / (1 - share).

    calibrate.py LIKE_JSON --runs RUN_DIR... --plans PLAN_JSONL...
prints "CALIBRATED ASSUMED SHARE_HERE SHARE_THERE": the slowdown to bring the cluster up again with, the one it was
up with, and the two shares (each the mean over the runs, and over the plan files)."""
import argparse
import json
import statistics
import sys
from pathlib import Path


def measured_share(rows: list[dict]) -> float:
    """Static SP's all-to-all share of a run's steps (metrics.jsonl's rows) after the first (which allocates), their
    median."""
    if len(rows) < 2:
        raise ValueError("no step after the first to measure")
    return statistics.median(r["alltoall_ms"] / r["step_ms"] for r in rows[1:])


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def testbed_share(plans: list[dict]) -> float:
    """Static SP's all-to-all share of its estimated steps on the testbed, over a plan's batches."""
    return sum(p["static_sp"]["exchange_s"] for p in plans) / sum(p["static_sp"]["time_s"] for p in plans)


def calibrated_slowdown(slowdown: float, here: float, there: float) -> float:
    """The slowdown at which the share here would be the testbed's, were every second of the exchange the link's."""
    odds = lambda share: share / (1 - share)  # noqa: E731
    return slowdown * odds(there) / odds(here)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("like_json", type=Path)
    parser.add_argument("--runs", type=Path, nargs="+", required=True)
    parser.add_argument("--plans", type=Path, nargs="+", required=True)
    args = parser.parse_args()
    try:
        assumed = json.loads(args.like_json.read_text())["slowdown"]
        here = statistics.mean(measured_share(read_jsonl(run / "metrics.jsonl")) for run in args.runs)
        there = statistics.mean(testbed_share(read_jsonl(path)) for path in args.plans)
    except (OSError, ValueError, KeyError, ZeroDivisionError) as error:
        sys.exit(f"calibrate.py: {error}")
    print(f"{calibrated_slowdown(assumed, here, there):.6g} {assumed:.6g} {here:.4f} {there:.4f}")


if __name__ == "__main__":
    main()
