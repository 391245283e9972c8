#!/usr/bin/env bash
# A dead peer survived inside the job (docs/elastic.md), with the fault-tolerant build's trident under
# `mpirun --with-ft ulfm`: 3 ATOM peers averaging in rounds with a deadline; peer 2 is killed (SIGKILL) mid-run; the
# other two finish every step, rank 0 logs the loss and drops it from the rounds (peers_alive 3, then 2), writes its
# checkpoints and final weights, and the job ends with exit 0.
# Usage: TRIDENT=/path/to/build-ulfm/trident MPIRUN=/path/to/.deps/ompi5/bin/mpirun bash tests/app/test_elastic.sh CONFIGS
set -u
configs=${1:?usage: TRIDENT=... MPIRUN=... bash test_elastic.sh CONFIG_DIR}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
mpirun_ft=("${MPIRUN:?MPIRUN names the fault-tolerant mpirun}" --with-ft ulfm --oversubscribe)
steps=300
peers=(--set parallel.strategy=atom --set parallel.atom.average_every=2 --set parallel.atom.round_deadline_ms=20
       --set train.steps=$steps --set train.warmup_steps=5 --set train.eval_every=0 --set checkpoint.every=100)
dir="$tmp/elastic"

checks=$((checks + 1))
echo "check $checks: 3 peers under mpirun --with-ft ulfm, peer 2 killed mid-run"
timeout 300 "${mpirun_ft[@]}" -np 3 "$trident" train "$configs/tiny_train.yaml" "${peers[@]}" --set run.dir="$dir" \
  >"$tmp/out" 2>"$tmp/err" &
job=$!
# peer 2: the trident process of this run whose environment says world rank 2
victim=
for _ in $(seq 600); do
  if [[ -f $dir/metrics.jsonl && $(wc -l <"$dir/metrics.jsonl") -ge 40 ]]; then
    for pid in $(pgrep -f "run.dir=$dir"); do
      if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=2"; then victim=$pid; fi
    done
    break
  fi
  sleep 0.1
done
[[ -n $victim ]] || { kill "$job"; fail "no peer 2 to kill (is the run training?)"; }
kill -9 "$victim"
wait "$job"
code=$?
[[ $code == 0 ]] || fail "the job ended with exit $code after losing a peer"
grep -q "atom: peer 2 is lost; the averaging rounds go on with the 2 others" "$dir/trident.log" ||
  fail "rank 0 did not log the lost peer"
[[ -f $dir/model_final.safetensors && -d $dir/checkpoints/step_00000300 ]] ||
  fail "the survivors wrote no final weights or last checkpoint"
"$python" - "$dir/metrics.jsonl" "$steps" <<'PY' || fail "the survivors' steps are wrong"
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == list(range(int(sys.argv[2]))), "steps missing"
alive = [r["peers_alive"] for r in rows]
assert alive[0] == 3 and alive[-1] == 2 and sorted(alive, reverse=True) == alive, alive  # drops once, for good
# the round in flight when the loss was found may still hold the dead peer's part, sent while it lived
after = rows[alive.index(2) + 10:]
assert all(r["average_peers"] is None or r["average_peers"] <= 2 for r in after), "a dead peer averaged"
assert sum(r["average_applied"] for r in after) >= 20, "too few rounds after the loss"
assert all(math.isfinite(r["loss"]) for r in rows)
first, last = (sum(r["loss"] for r in part) / len(part) for part in (rows[:20], rows[-20:]))
assert last < first, (first, last)
print(f"peer lost at step {alive.index(2)}; rank 0's loss {first:.3f} -> {last:.3f}")
PY
echo "test_elastic: $checks checks passed"
