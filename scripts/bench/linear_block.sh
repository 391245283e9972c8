#!/usr/bin/env bash
# The linear-attention block's conditioning, measured on the quickstart model (configs/quickstart.yaml, Debian's
# fortune cookies): 200 steps of softmax and of the linear block (TransNormerLLM's: silu feature map, output norm over
# the hidden dimension, output gate), with their loss curves on one plot and each run's gradient norms; then 30 steps
# of the linear block on 1 rank against LASP on 4 ranks, with the largest relative loss difference. Writes
# runs/bench_linear_block/{linear_block.md,loss.png}. About 12 minutes on 2 cores.
# Usage: bash scripts/bench/linear_block.sh [--steps 200] [--agreement-steps 30]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
steps=200
agreement_steps=30
die() { echo "bench/linear_block.sh: $*" >&2; exit 2; }
source scripts/bench/lib.sh
bench_options steps:count agreement-steps:count -- "$@"
trident=${TRIDENT:-build/trident}
[[ -x $trident ]] || die "no trident binary at $trident (build it, or set TRIDENT)"
out=runs/bench_linear_block
if [[ -e $out ]]; then mv "$out" "$out.$(date +%Y%m%d-%H%M%S)"; fi  # an earlier report is kept
mkdir -p "$out"
bash scripts/data/fortunes_corpus.sh runs/data/fortunes.txt

cores=$(nproc)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
common=(--set data.path=runs/data/fortunes.txt --set checkpoint.every=0 --set sample.tokens=0)
one() {  # NAME ARGS...: one rank using every core
  local name=$1
  shift
  echo "bench/linear_block.sh: $name"
  OMP_NUM_THREADS=$cores "$trident" train configs/quickstart.yaml "${common[@]}" --set run.dir="$out/$name" "$@" \
    >"$out/$name.log" 2>&1
}
lasp4() {  # NAME ARGS...: LASP on 4 ranks
  local name=$1
  shift
  echo "bench/linear_block.sh: $name"
  OMP_NUM_THREADS=1 mpirun -np 4 --oversubscribe --bind-to none "$trident" train configs/quickstart.yaml "${common[@]}" \
    --set parallel.strategy=sp --set parallel.sp.size=4 --set run.dir="$out/$name" "$@" >"$out/$name.log" 2>&1
}

one softmax --set train.steps="$steps"
one linear --set train.steps="$steps" --set model.attention=linear
short=(--set train.steps="$agreement_steps" --set train.eval_every=0 --set model.attention=linear)
one agree_linear_1 "${short[@]}"
lasp4 agree_linear_4 "${short[@]}"

/usr/bin/python3 scripts/plot.py "$out/softmax" "$out/linear" -o "$out/loss.png"
/usr/bin/python3 - "$out" "$steps" "$agreement_steps" <<'PY'
import json, statistics, sys
from pathlib import Path
out, steps, agreement_steps = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
rows = lambda name: [json.loads(line) for line in open(out / name / "metrics.jsonl")]
lines = [f"# The linear-attention block on the quickstart model ({steps} steps; agreement over {agreement_steps})", "",
         "| run | loss at the end | last eval loss | grad norm max | grad norm median | max / median |",
         "|---|---|---|---|---|---|"]
for name, label in [("softmax", "softmax"), ("linear", "linear (silu, gate, hidden norm)")]:
    r = rows(name)
    norms = [x["grad_norm"] for x in r]
    evals = [x["eval_loss"] for x in r if "eval_loss" in x]
    last_eval = f"{evals[-1]:.3f}" if evals else "-"
    lines.append(f"| {label} | {r[-1]['loss']:.3f} | {last_eval} | {max(norms):.2f} (step "
                 f"{norms.index(max(norms))}) | {statistics.median(norms):.2f} | "
                 f"{max(norms) / statistics.median(norms):.1f} |")
lines += ["", "| block | max relative loss difference, 1 rank vs LASP on 4 ranks | at step |", "|---|---|---|"]
for block, label in [("linear", "linear (silu, gate, hidden norm)")]:
    a, b = rows(f"agree_{block}_1"), rows(f"agree_{block}_4")
    diffs = [abs(x["loss"] - y["loss"]) / abs(x["loss"]) for x, y in zip(a, b)]
    lines.append(f"| {label} | {max(diffs):.2e} | {diffs.index(max(diffs))} |")
(out / "linear_block.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PY
bench_stamp "$out/linear_block.md"
echo "bench/linear_block.sh: wrote $out/linear_block.md and $out/loss.png"
