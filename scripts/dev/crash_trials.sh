#!/usr/bin/env bash
# Crash trials: kill -9 a training run at a random moment (start-up, steps, checkpoint writes), resume it, and check
# what a user would: every resume succeeds, the finished run's weights are bit-identical to an uninterrupted run's,
# metrics.jsonl holds every step once with no torn line, and at most one checkpoint interval of steps is redone.
# Then a rank of a 2-rank job killed, several times: how long until the job has ended. Writes OUT/crash_trials.md.
#   bash scripts/dev/crash_trials.sh [--trials N] [--rank-deaths N] [--out DIR]
# TRIDENT names the binary (default build/trident).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/bench/lib.sh

die() { echo "dev/crash_trials.sh: $*" >&2; exit 2; }
trials=20
deaths=5
out=runs/crash_trials
while (($#)); do
  case $1 in
    --trials) (($# >= 2)) || die "--trials needs a number"; trials=$2; shift 2 ;;
    --rank-deaths) (($# >= 2)) || die "--rank-deaths needs a number"; deaths=$2; shift 2 ;;
    --out) (($# >= 2)) || die "--out needs a directory"; out=$2; shift 2 ;;
    -h|--help) sed -n '2,7s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ $trials =~ ^[1-9][0-9]*$ ]] || die "--trials: '$trials' is not a positive whole number"
[[ $deaths =~ ^[0-9]+$ ]] || die "--rank-deaths: '$deaths' is not a whole number"
trident=$(bench_trident)
out=$(bench_out "$out")
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
config=tests/app/configs/tiny_train.yaml
every=5
steps=60
args=(--set train.steps=$steps --set checkpoint.every=$every --set checkpoint.keep=2 --set train.eval_every=0
      --set sample.tokens=0)

"$trident" train "$config" "${args[@]}" --set run.dir="$out/reference" >/dev/null 2>&1 ||
  die "the uninterrupted reference run failed (see $out/reference/trident.log)"
run_ms=$(/usr/bin/python3 -c "import json, sys; print(int(sum(json.loads(l)['step_ms'] for l in open(sys.argv[1]))))" \
           "$out/reference/metrics.jsonl")

last_step() {  # the step of the last complete line of RUN/metrics.jsonl, -1 when none
  /usr/bin/python3 - "$1/metrics.jsonl" <<'PY'
import json, sys
try:
    complete = [line for line in open(sys.argv[1]).read().split("\n")[:-1] if line]  # after the last \n: torn
    print(json.loads(complete[-1])["step"] if complete else -1)
except FileNotFoundError:
    print(-1)
PY
}

resumed=0 identical=0 well_formed=0 redone_max=0 kills=0
for ((t = 1; t <= trials; t++)); do
  dir=$out/trial_$t
  delay_ms=$((RANDOM % (run_ms + 1500)))
  "$trident" train "$config" "${args[@]}" --set run.dir="$dir" >"$dir.log" 2>&1 &
  pid=$!
  sleep "$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))"
  if ! kill -9 "$pid" 2>/dev/null; then
    wait "$pid" 2>/dev/null || true
    echo "trial $t: the run finished within ${delay_ms} ms, before its kill; not counted"
    continue
  fi
  wait "$pid" 2>/dev/null || true
  kills=$((kills + 1))
  before=$(last_step "$dir")
  if ! "$trident" train "$config" "${args[@]}" --set run.dir="$dir" >>"$dir.log" 2>&1; then
    echo "trial $t: the resume failed (see $dir/trident.log)"
    continue
  fi
  resumed=$((resumed + 1))
  same=DIFFERENT
  if cmp -s "$out/reference/model_final.safetensors" "$dir/model_final.safetensors"; then
    same=identical
    identical=$((identical + 1))
  fi
  # Steps redone: from the checkpoint the resume started at to the last step the killed run had logged.
  if ! redone=$(/usr/bin/python3 - "$dir" "$steps" "$before" <<'PY'
import json, re, sys
run, steps, before = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
records = [json.loads(line) for line in open(f"{run}/metrics.jsonl").read().splitlines()]  # a torn line fails here
assert [r["step"] for r in records] == list(range(steps)), "metrics.jsonl does not hold each step once"
resumes = re.findall(r"resuming from \S*step_(\d+)", open(f"{run}/trident.log").read())
start = int(resumes[-1]) if resumes else 0
print(max(0, before + 1 - start))
PY
  ); then
    echo "trial $t: metrics.jsonl is wrong"
    continue
  fi
  well_formed=$((well_formed + 1))
  ((redone > redone_max)) && redone_max=$redone
  echo "trial $t: killed after ${delay_ms} ms at step $before, resumed, $redone step(s) redone, weights $same"
done

death_ms=()
for ((d = 1; d <= deaths; d++)); do
  dir=$out/death_$d
  (code=0
   timeout 120 mpirun -np 2 --bind-to none "$trident" train "$config" "${args[@]}" --set train.steps=100000 \
     --set run.dir="$dir" >"$dir.log" 2>&1 || code=$?
   echo "$code" >"$dir.code") &
  job=$!
  for _ in $(seq 1 200); do [[ -s $dir/metrics.jsonl ]] && break; sleep 0.1; done
  victim=$(pgrep -f "run.dir=$dir" -n)
  start_ns=$(date +%s%N)
  kill -9 "$victim"
  wait "$job"
  death_ms+=("$((($(date +%s%N) - start_ns) / 1000000))")
  echo "rank death $d: the job ended ${death_ms[-1]} ms after the kill (exit $(cat "$dir.code"))"
done

{
  echo "# Crash trials ($trials runs of $steps steps, a checkpoint every $every; 1 rank)"
  echo
  echo "| kill -9 | resumed | weights bit-identical to the uninterrupted run | metrics: every step once, no torn line |" \
       "most steps redone |"
  echo "|---|---|---|---|---|"
  echo "| $kills | $resumed of $kills | $identical of $kills | $well_formed of $kills | $redone_max (interval $every) |"
  if ((deaths)); then
    echo
    echo "A rank of a 2-rank job killed ($deaths times): the job ended after ${death_ms[*]} ms."
  fi
} | tee "$out/crash_trials.md"
bench_stamp "$out/crash_trials.md"
